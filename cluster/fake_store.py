"""An in-memory ZooKeeper: the coordination port with ZooKeeper's semantics, for unit tests.

:class:`FakeZooKeeper` is the server (one znode tree, a transaction counter, sessions);
:class:`FakeSession` is one client session implementing ``cluster.coordination.Coordination``.
Semantics copied from ZooKeeper (``DataTree``, ``PrepRequestProcessor``):

* every write transaction takes the next zxid; a multi is one transaction (one zxid) and is
  validated completely before any of it applies;
* ``version`` counts sets of a node's data, ``cversion`` changes of its children; a
  sequential child's suffix is the parent's ``cversion`` before the create, 10 digits;
* an ephemeral node belongs to its session; ``expire()`` (or ``close()``) deletes them all,
  firing watches, and the expired session's later calls raise ``SessionExpiredError``;
* watches are one-shot: ``get``/``exists`` set a data watch (CHANGED, DELETED, or CREATED
  when ``exists`` found nothing), ``children`` a child watch (CHILD, or DELETED when the node
  goes); they fire after the transaction that triggers them, in the order the store applies.

Calls complete synchronously (the ``async`` methods never suspend), so tests are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cluster.coordination import (
    BadVersionError,
    Check,
    Create,
    Delete,
    EventType,
    MultiError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    SessionExpiredError,
    SessionListener,
    SessionState,
    SetData,
    Stat,
    WatchCallback,
    WatchEvent,
)

__all__ = ["FakeSession", "FakeZooKeeper"]


@dataclass(slots=True)
class _Node:
    data: bytes
    czxid: int
    mzxid: int
    version: int = 0
    cversion: int = 0
    ephemeral_owner: int = 0
    children: set[str] = field(default_factory=set)
    ctime: int = 0  # ms, from the store's clock at the create


def _parent(path: str) -> str:
    head = path.rsplit("/", 1)[0]
    return head or "/"


def _validate(path: str) -> None:
    if not path.startswith("/") or (path != "/" and path.endswith("/")) or "//" in path:
        raise ValueError(f"invalid znode path {path!r}")


class FakeZooKeeper:
    def __init__(self, now_ms: Callable[[], int] = lambda: 0) -> None:
        """``now_ms``: the server's clock, stamped on created nodes as ``Stat.ctime``."""
        self.now_ms = now_ms
        self._zxid = 0
        self._nodes: dict[str, _Node] = {"/": _Node(b"", 0, 0)}
        self._next_session = 0x1000
        self._sessions: dict[int, FakeSession] = {}
        self._data_watches: dict[str, list[WatchCallback]] = {}
        self._child_watches: dict[str, list[WatchCallback]] = {}

    # -- sessions --------------------------------------------------------------------------

    def session(self) -> FakeSession:
        self._next_session += 1
        s = FakeSession(self, self._next_session)
        self._sessions[s.session_id] = s
        return s

    def expire(self, session: FakeSession) -> None:
        """End ``session`` as the server does on timeout: its ephemerals go, it gets LOST."""
        if session.session_id not in self._sessions:
            return
        del self._sessions[session.session_id]
        owned = sorted(
            (p for p, n in self._nodes.items() if n.ephemeral_owner == session.session_id),
            reverse=True,
        )
        if owned:
            self._apply([Delete(p) for p in owned], session_id=0)
        session._lost()

    # -- reads -----------------------------------------------------------------------------

    def _stat(self, n: _Node) -> Stat:
        return Stat(n.czxid, n.mzxid, n.version, n.cversion, n.ephemeral_owner, len(n.children), n.ctime)

    def _get(self, path: str, watch: WatchCallback | None) -> tuple[bytes, Stat]:
        _validate(path)
        n = self._nodes.get(path)
        if n is None:
            raise NoNodeError(path)
        if watch is not None:
            self._data_watches.setdefault(path, []).append(watch)
        return n.data, self._stat(n)

    def _exists(self, path: str, watch: WatchCallback | None) -> Stat | None:
        _validate(path)
        n = self._nodes.get(path)
        if watch is not None:
            self._data_watches.setdefault(path, []).append(watch)
        return None if n is None else self._stat(n)

    def _children(self, path: str, watch: WatchCallback | None) -> list[str]:
        _validate(path)
        n = self._nodes.get(path)
        if n is None:
            raise NoNodeError(path)
        if watch is not None:
            self._child_watches.setdefault(path, []).append(watch)
        return sorted(n.children)

    # -- writes: one transaction -----------------------------------------------------------

    def _apply(self, ops: Sequence[Op], session_id: int) -> list[str | Stat | None]:
        """Validate every op against the state the earlier ops leave, then apply them all."""
        # Validation runs on a shadow of the touched nodes so a failure changes nothing.
        shadow: dict[str, _Node | None] = {}

        def node(p: str) -> _Node | None:
            if p in shadow:
                return shadow[p]
            n = self._nodes.get(p)
            return None if n is None else _Node(
                n.data, n.czxid, n.mzxid, n.version, n.cversion, n.ephemeral_owner, set(n.children), n.ctime
            )

        zxid = self._zxid + 1
        results: list[str | Stat | None] = []
        events: list[tuple[str, str, EventType]] = []  # (kind, path, type)
        for i, op in enumerate(ops):
            try:
                _validate(op.path)
                if isinstance(op, Check):
                    n = node(op.path)
                    if n is None:
                        raise NoNodeError(op.path)
                    if op.version != -1 and n.version != op.version:
                        raise BadVersionError(op.path)
                    results.append(None)
                elif isinstance(op, Create):
                    parent_path = _parent(op.path)
                    parent = node(parent_path)
                    if parent is None:
                        raise NoNodeError(op.path)
                    if parent.ephemeral_owner:
                        raise NoChildrenForEphemeralsError(op.path)
                    path = op.path + (f"{parent.cversion:010d}" if op.sequential else "")
                    if node(path) is not None:
                        raise NodeExistsError(path)
                    owner = session_id if op.ephemeral else 0
                    shadow[path] = _Node(op.data, zxid, zxid, ephemeral_owner=owner, ctime=self.now_ms())
                    parent.children.add(path.rsplit("/", 1)[1])
                    parent.cversion += 1
                    shadow[parent_path] = parent
                    results.append(path)
                    events += [("data", path, EventType.CREATED), ("child", parent_path, EventType.CHILD)]
                elif isinstance(op, SetData):
                    n = node(op.path)
                    if n is None:
                        raise NoNodeError(op.path)
                    if op.version != -1 and n.version != op.version:
                        raise BadVersionError(op.path)
                    n.data, n.mzxid, n.version = op.data, zxid, n.version + 1
                    shadow[op.path] = n
                    results.append(self._stat(n))
                    events.append(("data", op.path, EventType.CHANGED))
                elif isinstance(op, Delete):
                    n = node(op.path)
                    if n is None:
                        raise NoNodeError(op.path)
                    if op.version != -1 and n.version != op.version:
                        raise BadVersionError(op.path)
                    if n.children:
                        raise NotEmptyError(op.path)
                    parent_path = _parent(op.path)
                    parent = node(parent_path)
                    assert parent is not None
                    parent.children.discard(op.path.rsplit("/", 1)[1])
                    parent.cversion += 1
                    shadow[parent_path] = parent
                    shadow[op.path] = None
                    results.append(None)
                    events += [
                        ("data", op.path, EventType.DELETED),
                        ("child", op.path, EventType.DELETED),
                        ("child", parent_path, EventType.CHILD),
                    ]
                else:  # pragma: no cover - Op is closed
                    raise TypeError(op)
            except (NoNodeError, NodeExistsError, BadVersionError, NotEmptyError,
                    NoChildrenForEphemeralsError) as e:
                if len(ops) == 1:
                    raise
                raise MultiError(i, e) from e
        self._zxid = zxid
        for p, n in shadow.items():
            if n is None:
                self._nodes.pop(p, None)
            else:
                self._nodes[p] = n
        self._fire(events)
        return results

    def _fire(self, events: list[tuple[str, str, EventType]]) -> None:
        for kind, path, etype in events:
            table = self._data_watches if kind == "data" else self._child_watches
            for cb in table.pop(path, []):
                cb(WatchEvent(etype, path))

    # -- inspection for tests --------------------------------------------------------------

    def dump(self) -> dict[str, bytes]:
        """Every znode's data by path (the root excluded)."""
        return {p: n.data for p, n in sorted(self._nodes.items()) if p != "/"}


class FakeSession:
    def __init__(self, server: FakeZooKeeper, session_id: int) -> None:
        self._server = server
        self._id = session_id
        self._alive = True
        self._listeners: list[SessionListener] = []

    @property
    def session_id(self) -> int:
        return self._id

    def _check(self) -> None:
        if not self._alive:
            raise SessionExpiredError("", "session expired")

    def _lost(self) -> None:
        self._alive = False
        for listener in list(self._listeners):
            listener(SessionState.LOST)

    def add_session_listener(self, listener: SessionListener) -> None:
        self._listeners.append(listener)

    # Synchronous core (what the async methods do); handy in pure unit tests.

    def create_now(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
                   sequential: bool = False, make_parents: bool = False) -> str:
        self._check()
        if make_parents:
            parts = path.strip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                p = "/" + "/".join(parts[:i])
                if self._server._exists(p, None) is None:
                    try:
                        self._server._apply([Create(p)], 0)
                    except NodeExistsError:
                        pass
        res = self._server._apply([Create(path, data, ephemeral, sequential)], self._id)
        return res[0]  # type: ignore[return-value]

    def multi_now(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        self._check()
        if not ops:
            return []
        try:
            return self._server._apply(list(ops), self._id)
        except MultiError:
            raise
        except Exception as e:  # a single-op multi still reports as a multi
            raise MultiError(0, e) from e  # type: ignore[arg-type]

    # The coordination port.

    async def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
                     sequential: bool = False, make_parents: bool = False) -> str:
        return self.create_now(path, data, ephemeral=ephemeral, sequential=sequential,
                               make_parents=make_parents)

    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        self._check()
        return self._server._get(path, watch)

    async def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        self._check()
        return self._server._exists(path, watch)

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        self._check()
        return self._server._apply([SetData(path, data, version)], self._id)[0]  # type: ignore[return-value]

    async def delete(self, path: str, version: int = -1) -> None:
        self._check()
        self._server._apply([Delete(path, version)], self._id)

    async def children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        self._check()
        return self._server._children(path, watch)

    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        return self.multi_now(ops)

    async def close(self) -> None:
        if self._alive:
            self._server.expire(self)
