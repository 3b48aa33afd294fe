"""kbroker: the broker process.

Theory of operation: this package is the composition root.  It reads Kafka-style
configuration, owns the asyncio/uvloop server and its connections, and adapts each
decoded request (wire/) to the storage engine (log/) and the group coordinator
(groups/).  It is the only package that does network I/O or runs an event loop;
dependencies point one way, ``kbroker -> groups -> log -> wire``.

Map: ``config`` (Kafka property names and defaults), ``broker`` (lifecycle, embedding),
``connection`` (framing, in-order pipelining, flow control), ``registry`` + ``handlers/``
(one module per API family; ApiVersions is built from the registry), ``broker_state``
and ``partition`` (the only callers of log/).
"""

from kbroker.broker import Broker, SyncBroker

__all__ = ["Broker", "SyncBroker"]
