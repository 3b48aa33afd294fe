"""``ServerState``: what the network server shares across its connections (as uvicorn's
``ServerState``), built once by the composition root (kbroker/broker.py).

* ``registry``: the APIs clients may call (kbroker/registry.py), with their handlers;
  ApiVersions answers from it.
* ``inter_broker``: cluster mode only, the registry consulted for a key or version the
  client registry does not serve (the controller's requests, brokers' versions of client
  APIs that are not advertised); None on a single node.
* ``connections``: the open connections, so that a shutdown can abort them and the metrics
  can count them per listener.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbroker.connection import KafkaConnection
    from kbroker.registry import Registry

__all__ = ["ServerState"]


@dataclass(slots=True)
class ServerState:
    registry: Registry
    inter_broker: Registry | None = None
    connections: set[KafkaConnection] = field(default_factory=set)
