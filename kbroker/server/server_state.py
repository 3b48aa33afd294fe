"""``ServerState``: what the network server shares across its connections (as uvicorn's
``ServerState``), built once by the composition root (kbroker/app/broker.py).

* ``registry``: the APIs clients may call (kbroker/server/registry.py), with their handlers;
  ApiVersions answers from it.
* ``inter_broker``: cluster mode only, the registry consulted for a key or version the
  client registry does not serve (the controller's requests, brokers' versions of client
  APIs that are not advertised); None on a single node.
* ``connections``: the open connections, so that a shutdown can abort them and the metrics
  can count them per listener.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kbroker.server.registry import Registry


class OpenConnection(Protocol):
    """What the server's users read of a connection (kbroker/server/connection.py): its listener
    for the metrics, its transport for a shutdown's abort."""

    listener_name: str
    transport: asyncio.Transport | None

__all__ = ["ServerState"]


@dataclass(slots=True)
class ServerState:
    registry: Registry
    inter_broker: Registry | None = None
    connections: set[OpenConnection] = field(default_factory=set)
