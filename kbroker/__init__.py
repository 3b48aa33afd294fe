"""kbroker: the broker process.

Theory of operation: this package is the composition root.  It reads Kafka-style
configuration, owns the asyncio/uvloop server and its connections, and adapts each
decoded request (wire/) to the storage engine (log/) and the group coordinator
(groups/).  It is the only package that does network I/O or runs an event loop;
dependencies point one way, ``kbroker -> groups -> log -> wire``.

The server itself lands with issue 4; until then ``kbroker serve`` only validates
its configuration and says so.
"""
