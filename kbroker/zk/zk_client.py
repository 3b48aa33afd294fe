"""The coordination port (``cluster.coordination``) over a real ZooKeeper, with kazoo.

kazoo has no asyncio handler, so it runs with its threading handler: its connection thread
talks to ZooKeeper and its callback thread completes ``*_async`` results.  Every call here
starts the kazoo request (queueing it is non-blocking) and awaits an asyncio future that the
result's ``rawlink`` callback completes with ``loop.call_soon_threadsafe``; watch callbacks
and session-state changes reach the caller the same way, on the event loop, never on
kazoo's threads.  ``start``/``close`` join kazoo's threads, so they run in the default
executor.

Session states map to ``SessionState``: CONNECTED, SUSPENDED (connection lost, the session
and its ephemerals may survive) and LOST (expired or closed; ephemerals gone).  kazoo
re-connects by itself; after LOST it opens a new session, on which the owner re-registers.
Its attempts are at most ``RECONNECT_MAX_DELAY_S`` (x1.4 jitter) apart, as ZooKeeper's own
client tries again within a second: kazoo's default doubles the pause up to an hour, and
after a ZooKeeper restart of ten seconds a broker's next attempt came ten seconds after the
server was back, its session expired by then (issue 28).  Calls made while reconnecting wait
in kazoo's queue; those in flight when the connection drops fail with ConnectionLossError,
and all of them with SessionExpiredError if the session is found expired (request handlers
retry through both: kbroker/runtime/zk_retry.py).

``checked_ephemeral_create`` and ``register_broker`` follow ``KafkaZkClient``: a
``NodeExists`` whose node is owned by this session is success (a retried create); one owned
by another session fails with Kafka's message - unless the caller says the node is a stale
copy of its own (a previous incarnation killed before its session expired), in which case it
waits, bounded, for ZooKeeper to expire that session and delete the node, then creates again.
The broker epoch is the czxid of the registration.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kazoo import exceptions as kz
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.retry import KazooRetry

from cluster import znodes
from cluster.coordination import (
    BadVersionError,
    Check,
    ConnectionLossError,
    CoordinationError,
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

__all__ = ["ZkClient", "ZkConnectionTimeoutError"]

log = logging.getLogger("kbroker.zk_client")

RECONNECT_FIRST_DELAY_S = 0.1
RECONNECT_MAX_DELAY_S = 1.0

_ERRORS: dict[type[Exception], type[CoordinationError]] = {
    kz.NoNodeError: NoNodeError,
    kz.NodeExistsError: NodeExistsError,
    kz.BadVersionError: BadVersionError,
    kz.NotEmptyError: NotEmptyError,
    kz.NoChildrenForEphemeralsError: NoChildrenForEphemeralsError,
    kz.SessionExpiredError: SessionExpiredError,
    kz.ConnectionLoss: ConnectionLossError,
    kz.ConnectionClosedError: ConnectionLossError,
}

_STATES = {
    KazooState.CONNECTED: SessionState.CONNECTED,
    KazooState.SUSPENDED: SessionState.SUSPENDED,
    KazooState.LOST: SessionState.LOST,
}


class ZkConnectionTimeoutError(CoordinationError):
    """ZooKeeper did not answer within ``zookeeper.connection.timeout.ms``."""


def _translate(e: BaseException, path: str = "") -> BaseException:
    for kz_type, ours in _ERRORS.items():
        if isinstance(e, kz_type):
            return ours(path, f"{ours.__name__} for {path}" if path else str(e))
    return e


def _stat(s: ZnodeStat) -> Stat:
    return Stat(s.czxid, s.mzxid, s.version, s.cversion, s.ephemeralOwner, s.numChildren, s.ctime)


class ZkClient:
    """One ZooKeeper session; ``hosts`` is ``zookeeper.connect`` (``h1:2181,h2:2181/chroot``)."""

    def __init__(
        self,
        hosts: str,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
    ) -> None:
        self.hosts = hosts
        self.session_timeout_ms = session_timeout_ms
        # Kafka: zookeeper.connection.timeout.ms defaults to the session timeout.
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        self._kazoo = KazooClient(
            hosts=hosts, timeout=session_timeout_ms / 1000.0,
            connection_retry=KazooRetry(max_tries=-1, delay=RECONNECT_FIRST_DELAY_S, backoff=2,
                                        max_delay=RECONNECT_MAX_DELAY_S))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listeners: list[SessionListener] = []
        self._kazoo.add_listener(self._on_state)

    # -- life cycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect; raises ZkConnectionTimeoutError after ``connection_timeout_ms``."""
        self._loop = asyncio.get_running_loop()
        try:
            await self._loop.run_in_executor(
                None, self._kazoo.start, self.connection_timeout_ms / 1000.0
            )
        except kz.KazooException as e:  # kazoo's timeout is a KazooException subclass
            await self._loop.run_in_executor(None, self._stop_quietly)
            raise ZkConnectionTimeoutError(
                "",
                f"Timed out waiting for connection to ZooKeeper at {self.hosts} "
                f"within {self.connection_timeout_ms} ms",
            ) from e
        except Exception as e:
            if type(e).__name__ == "KazooTimeoutError":
                await self._loop.run_in_executor(None, self._stop_quietly)
                raise ZkConnectionTimeoutError(
                    "",
                    f"Timed out waiting for connection to ZooKeeper at {self.hosts} "
                    f"within {self.connection_timeout_ms} ms",
                ) from e
            raise

    def _stop_quietly(self) -> None:
        try:
            self._kazoo.stop()
            self._kazoo.close()
        except Exception:  # noqa: BLE001 - best effort on a failed start
            log.debug("kazoo stop after a failed start", exc_info=True)

    async def close(self) -> None:
        """Close the session (its ephemerals go at once) and stop kazoo's threads."""
        loop = self._loop or asyncio.get_running_loop()
        await loop.run_in_executor(None, self._stop_quietly)

    @property
    def session_id(self) -> int:
        cid = self._kazoo.client_id
        return cid[0] if cid else 0

    def add_session_listener(self, listener: SessionListener) -> None:
        self._listeners.append(listener)

    def _on_state(self, state: str) -> bool:
        # On kazoo's connection thread: only hand over to the loop.
        ours = _STATES.get(state)
        loop = self._loop
        if ours is not None and loop is not None and not loop.is_closed():
            for listener in list(self._listeners):
                loop.call_soon_threadsafe(listener, ours)
        return False  # stay registered

    # -- bridging --------------------------------------------------------------------------

    def _await(self, async_result: Any, path: str, convert: Callable[[Any], Any]) -> asyncio.Future:
        loop = self._loop
        if loop is None:
            raise RuntimeError("ZkClient.start() first")
        fut: asyncio.Future = loop.create_future()

        def settle(exc: BaseException | None, value: Any) -> None:
            if fut.done():
                return
            if exc is not None:
                fut.set_exception(exc)
            else:
                try:
                    fut.set_result(convert(value))
                except Exception as e:  # noqa: BLE001 - a conversion error belongs to the caller
                    fut.set_exception(e)

        def done(ar: Any) -> None:  # kazoo's callback thread
            exc = ar.exception
            value = None if exc is not None else ar.value
            if not loop.is_closed():
                loop.call_soon_threadsafe(settle, _translate(exc, path) if exc else None, value)

        async_result.rawlink(done)
        return fut

    def _watch(self, cb: WatchCallback | None, path: str = "",
               on_reset: EventType = EventType.CHANGED) -> Callable[[Any], None] | None:
        if cb is None:
            return None
        loop = self._loop
        assert loop is not None

        def fire(event: Any) -> None:  # kazoo's callback thread
            etype = EventType[event.type] if event.type in EventType.__members__ else None
            if etype is None and event.type == "NONE":
                # kazoo drops every watch when the connection is lost (SUSPENDED) and fires
                # it with a NONE event, where ZooKeeper's own clients re-register watches on
                # reconnection.  Tell the owner "it may have changed": it re-reads (retrying
                # through the connection loss) and so sets its watch again.
                etype, event_path = on_reset, path
            else:
                event_path = event.path
            if etype is not None and not loop.is_closed():
                loop.call_soon_threadsafe(cb, WatchEvent(etype, event_path))

        return fire

    # -- the port --------------------------------------------------------------------------

    async def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
                     sequential: bool = False, make_parents: bool = False) -> str:
        ar = self._kazoo.create_async(path, data, ephemeral=ephemeral, sequence=sequential,
                                      makepath=make_parents)
        return await self._await(ar, path, lambda v: v)

    async def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        ar = self._kazoo.get_async(path, watch=self._watch(watch, path))
        return await self._await(ar, path, lambda v: (v[0] or b"", _stat(v[1])))

    async def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        ar = self._kazoo.exists_async(path, watch=self._watch(watch, path))
        return await self._await(ar, path, lambda v: None if v is None else _stat(v))

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        ar = self._kazoo.set_async(path, data, version=version)
        return await self._await(ar, path, _stat)

    async def delete(self, path: str, version: int = -1) -> None:
        ar = self._kazoo.delete_async(path, version=version)
        await self._await(ar, path, lambda v: None)

    async def children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        ar = self._kazoo.get_children_async(path, watch=self._watch(watch, path, EventType.CHILD))
        return await self._await(ar, path, sorted)

    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        if not ops:
            return []
        t = self._kazoo.transaction()
        for op in ops:
            if isinstance(op, Check):
                t.check(op.path, op.version)
            elif isinstance(op, Create):
                t.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)
            elif isinstance(op, SetData):
                t.set_data(op.path, op.data, op.version)
            elif isinstance(op, Delete):
                t.delete(op.path, op.version)
            else:
                raise TypeError(op)
        raw = await self._await(t.commit_async(), "", lambda v: v)
        # A failed multi answers one result per op: the failing op's error, the others
        # RolledBackError (or RuntimeInconsistency after it).
        for i, (op, r) in enumerate(zip(ops, raw, strict=True)):
            if isinstance(r, Exception) and not isinstance(
                r, kz.RolledBackError | kz.RuntimeInconsistency
            ):
                cause = _translate(r, op.path)
                if not isinstance(cause, CoordinationError):
                    cause = CoordinationError(op.path, repr(r))
                raise MultiError(i, cause)
        out: list[str | Stat | None] = []
        for op, r in zip(ops, raw, strict=True):
            if isinstance(op, Create):
                out.append(r)
            elif isinstance(op, SetData):
                out.append(_stat(r))
            else:
                out.append(None)
        return out

    # -- KafkaZkClient helpers -------------------------------------------------------------

    async def checked_ephemeral_create(
        self,
        path: str,
        data: bytes,
        stale_if: Callable[[bytes], bool] | None = None,
        wait_ms: int = 0,
    ) -> Stat:
        """Create ephemeral ``path``; see the module docstring for NodeExists handling."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000.0
        while True:
            try:
                await self.create(path, data, ephemeral=True)
            except NodeExistsError:
                try:
                    existing, stat = await self.get(path)
                except NoNodeError:
                    continue  # it went away while we read it: create again
                if stat.ephemeral_owner == self.session_id:
                    return stat
                if stale_if is None or not stale_if(existing) or loop.time() >= deadline:
                    raise NodeExistsError(
                        path,
                        f"Error while creating ephemeral at {path}, node already exists and "
                        f"owner '{stat.ephemeral_owner}' does not match current session "
                        f"'{self.session_id}'",
                    ) from None
                gone = loop.create_future()

                def on_event(_: WatchEvent, gone: asyncio.Future = gone) -> None:
                    if not gone.done():
                        gone.set_result(None)

                if await self.exists(path, watch=on_event) is None:
                    continue
                try:
                    await asyncio.wait_for(gone, max(0.0, deadline - loop.time()))
                except TimeoutError:
                    pass
                continue
            _, stat = await self.get(path)
            return stat

    async def register_broker(self, registration: znodes.BrokerRegistration) -> int:
        """Create ``/brokers/ids/<id>``; returns the broker epoch (the znode's czxid).

        A registration left by this broker's previous process (same endpoints) is waited out
        for up to the session timeout plus a few seconds; any other one is Kafka's NodeExists.
        """
        path = znodes.broker_path(registration.broker_id)
        await self.ensure_path(znodes.BROKER_IDS_PATH)

        def ours(existing: bytes) -> bool:
            try:
                old = znodes.decode_broker(registration.broker_id, existing)
            except znodes.ZnodeFormatError:
                return False
            return old.endpoints == registration.endpoints

        stat = await self.checked_ephemeral_create(
            path, znodes.encode_broker(registration), stale_if=ours,
            wait_ms=self.session_timeout_ms + 5000,
        )
        log.info("Registered broker %d at path %s with addresses: %s, czxid (broker epoch): %d",
                 registration.broker_id, path,
                 ",".join(e.connection_string() for e in registration.endpoints), stat.czxid)
        return stat.czxid

    async def ensure_path(self, path: str) -> None:
        """Create ``path`` and its parents as persistent nodes if missing (createRecursive)."""
        if await self.exists(path) is not None:
            return
        try:
            await self.create(path, make_parents=True)
        except NodeExistsError:
            pass
