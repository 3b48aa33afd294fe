"""The port between Kafka's control plane and its coordination store (ZooKeeper).

The controller and brokers need exactly ZooKeeper's primitives, so the port states them:
znodes with data and a :class:`Stat` (``version`` bumps on every set; ``czxid``/``mzxid``
are the ids of the transactions that created / last changed it), persistent, ephemeral
(deleted when the creating session ends) and sequential nodes (a 10-digit suffix from the
parent's child version), conditional set/delete (``version=-1`` matches any), one-shot
watches (data: the node changed, was deleted, or - set on a missing node by ``exists`` - was
created; children: a child came or went, or the node went), and ``multi``: check/create/
set/delete applied atomically, all or nothing, as one transaction (one zxid).

Every call is a coroutine; watch callbacks and session listeners are plain callables that an
implementation runs on the caller's event loop (never on a foreign thread).  Failures raise
the :class:`CoordinationError` subclasses below (ZooKeeper's KeeperException codes).
Implementations: ``cluster.fake_store`` (in memory, for unit tests) and
``kbroker.zk.zk_client`` (kazoo, a real ZooKeeper); tests/cluster/test_coordination_contract.py
holds both to the same behaviour.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "BadVersionError",
    "Check",
    "ConnectionLossError",
    "Coordination",
    "CoordinationError",
    "Create",
    "Delete",
    "EventType",
    "MultiError",
    "NoChildrenForEphemeralsError",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "Op",
    "SessionExpiredError",
    "SessionState",
    "SetData",
    "Stat",
    "WatchEvent",
]


@dataclass(frozen=True, slots=True)
class Stat:
    czxid: int
    mzxid: int
    version: int
    cversion: int
    ephemeral_owner: int  # session id, 0 for persistent nodes
    num_children: int
    ctime: int = 0  # creation time, ms since the epoch (the server's clock)


class EventType(enum.Enum):
    CREATED = "CREATED"
    DELETED = "DELETED"
    CHANGED = "CHANGED"
    CHILD = "CHILD"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    path: str


class SessionState(enum.Enum):
    CONNECTED = "CONNECTED"  # connected; after SUSPENDED, the same session resumed
    SUSPENDED = "SUSPENDED"  # connection lost; the session (and its ephemerals) may survive
    LOST = "LOST"  # the session expired or was closed: its ephemerals are gone


# -- operations of a multi ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Check:
    path: str
    version: int


@dataclass(frozen=True, slots=True)
class Create:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class Delete:
    path: str
    version: int = -1


Op = Check | Create | SetData | Delete


# -- errors (KeeperException codes) ----------------------------------------------------------


class CoordinationError(Exception):
    def __init__(self, path: str = "", message: str = "") -> None:
        super().__init__(message or f"{type(self).__name__} for {path}")
        self.path = path


class NoNodeError(CoordinationError):
    pass


class NodeExistsError(CoordinationError):
    pass


class BadVersionError(CoordinationError):
    pass


class NotEmptyError(CoordinationError):
    pass


class NoChildrenForEphemeralsError(CoordinationError):
    pass


class SessionExpiredError(CoordinationError):
    pass


class ConnectionLossError(CoordinationError):
    pass


class MultiError(CoordinationError):
    """A multi failed as a whole: ``ops[index]`` failed with ``cause``; nothing was applied."""

    def __init__(self, index: int, cause: CoordinationError) -> None:
        super().__init__(cause.path, f"multi op {index} failed: {cause!r}")
        self.index = index
        self.cause = cause


WatchCallback = Callable[[WatchEvent], None]
SessionListener = Callable[[SessionState], None]


class Coordination(Protocol):
    """One client session of the store."""

    @property
    def session_id(self) -> int: ...

    async def create(
        self, path: str, data: bytes = b"", *, ephemeral: bool = False,
        sequential: bool = False, make_parents: bool = False,
    ) -> str:
        """Create ``path``; returns the actual path (with the sequence suffix if sequential)."""
        ...

    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]: ...

    async def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None: ...

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat: ...

    async def delete(self, path: str, version: int = -1) -> None: ...

    async def children(self, path: str, watch: WatchCallback | None = None) -> list[str]: ...

    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        """Apply all ``ops`` or none; results per op: created path, new Stat, or None."""
        ...

    def add_session_listener(self, listener: SessionListener) -> None: ...

    async def close(self) -> None: ...
