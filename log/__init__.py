"""log: Kafka's segment/index storage engine (issue 3).

Theory of operation: a partition is an append-only log split into segments named by
base offset; each segment is a ``.log`` file of record batches exactly as on the wire,
a sparse ``.index`` (relative offset -> file position) and a ``.timeindex``
(timestamp -> relative offset).  No networking and no knowledge of Kafka requests; it
uses only wire/'s record-batch view.  Time comes from an injected clock.
"""
