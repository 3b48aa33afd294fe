"""groups.share: share groups (KIP-932, "queues for Kafka"), the per-partition state machine.  Pure logic.

Theory of operation
-------------------
Several consumers of one share group read the same partition.  Instead of a committed offset
per partition, the partition's leader keeps a *share partition* per (group, partition): the
state of every record between the share-partition start offset (SPSO) and end offset (SPEO).

* A record is AVAILABLE (0), ACQUIRED (1) by one member under a time lock
  (``group.share.record.lock.duration.ms``), then ACKNOWLEDGED (2) when the member ACCEPTs
  it, AVAILABLE again when it RELEASEs it or its lock expires, or ARCHIVED (4) when it is
  REJECTed, a gap, or released/timed out after ``group.share.delivery.count.limit``
  deliveries.  ACKNOWLEDGED and ARCHIVED are terminal.  (Kafka's ``RecordState`` and
  ``AcknowledgeType`` ids; ARCHIVING (3) is not entered.)
* Records enter the state on ``acquire``: the caller read the log from the next fetch offset
  and gives the fetched batches' offsets; the package never reads a log.  A whole fetched
  batch is acquired (``max_records`` is a soft limit) and the number of records between
  SPSO and SPEO stays near ``group.share.partition.max.record.locks``: once at the limit,
  only records already in flight can be acquired again.
* Records are tracked per fetched batch until their states diverge, then per offset
  (Kafka's ``InFlightBatch``); this decides the ranges ``acquire`` hands out.
* A record near the delivery limit is handed out alone, so a poison record does not take
  its batch-mates to the limit with it (Kafka's delivery throttling).

Invariants: a record is acquired by at most one member; a terminal record is never acquired
again; a delivery count never exceeds the limit; the SPSO only moves forward and every offset
below it is terminal (or was never fetched); the SPSO starts where ``share.auto.offset.reset``
resolved (the caller passes the offset).

Time comes from the caller (``now_ms``); ``expire(now_ms)`` fires the locks that are due.

Not here yet: the ShareFetch/ShareAcknowledge protocol and share sessions, persistence
through the share coordinator (``__share_group_state``) and loading from it, the share
group coordinator (membership, assignment), LSO/log-start movement and transactional
(aborted) records, RENEW acknowledgements, record-limit acquire mode, the wiring into the
broker.

Modules: ``state`` (record states, ack types, in-flight batch/offset states),
``partition`` (``SharePartition``).
"""
