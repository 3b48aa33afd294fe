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

from typing import Any

__all__ = ["Broker", "SyncBroker"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so that ``kbroker <tool>`` (kbroker/tools/) starts without
    # loading the broker: ``kbroker.Broker`` and ``from kbroker import Broker`` work as before.
    if name in __all__:
        from kbroker import broker
        return getattr(broker, name)
    raise AttributeError(f"module 'kbroker' has no attribute {name!r}")
