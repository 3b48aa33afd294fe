"""One behaviour suite for the coordination port, run against the in-memory fake and a real
ZooKeeper (through kbroker.zk.zk_client), so the fake is held to ZooKeeper's semantics."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from kazoo.client import KazooClient

from cluster.coordination import (
    BadVersionError,
    Check,
    Create,
    Delete,
    EventType,
    MultiError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionState,
    SetData,
    WatchEvent,
)
from cluster.fake_store import FakeZooKeeper
from kbroker.zk.zk_client import ZkClient

DEADLINE_S = 60.0
_ids = itertools.count()


class FakeBackend:
    def __init__(self) -> None:
        self.server = FakeZooKeeper()

    async def session(self):
        return self.server.session()

    async def expire(self, session) -> None:
        self.server.expire(session)


class ZooKeeperBackend:
    def __init__(self, zk) -> None:
        self.zk = zk
        self.clients: list[ZkClient] = []

    async def session(self):
        c = ZkClient(self.zk.connect_string, session_timeout_ms=4000, connection_timeout_ms=30000)
        await c.start()
        self.clients.append(c)
        return c

    async def expire(self, session: ZkClient) -> None:
        # kazoo's own test recipe: a second client joins the session and closes it, so the
        # server expires it as on timeout and the first client sees the session end.
        sid, passwd = session._kazoo.client_id
        other = KazooClient(self.zk.connect_string, client_id=(sid, passwd), timeout=4.0)
        await asyncio.get_running_loop().run_in_executor(None, other.start, 30)
        await asyncio.get_running_loop().run_in_executor(None, other.stop)
        other.close()

    async def close(self) -> None:
        for c in self.clients:
            await c.close()


@pytest.fixture(params=["fake", "zookeeper"])
def run(request):
    """``run(async_fn)`` runs ``async_fn(backend, base_path)`` on a fresh loop."""

    def runner(fn):
        async def main():
            backend = FakeBackend() if request.param == "fake" else ZooKeeperBackend(
                request.getfixturevalue("zookeeper"))
            base = f"/contract{next(_ids)}"
            try:
                s = await backend.session()
                await s.create(base)
                await asyncio.wait_for(fn(backend, base), DEADLINE_S)
            finally:
                if isinstance(backend, ZooKeeperBackend):
                    await backend.close()

        asyncio.run(main())

    return runner


async def wait_for(fut: asyncio.Future):
    return await asyncio.wait_for(fut, DEADLINE_S)


def test_versions_count_sets_and_a_stale_version_is_refused(run):
    async def body(b, base):
        s = await b.session()
        await s.create(f"{base}/n", b"a")
        data, st0 = await s.get(f"{base}/n")
        assert (data, st0.version) == (b"a", 0)
        st1 = await s.set(f"{base}/n", b"b", version=0)
        assert st1.version == 1 and st1.czxid == st0.czxid and st1.mzxid > st0.mzxid
        with pytest.raises(BadVersionError):
            await s.set(f"{base}/n", b"c", version=0)
        with pytest.raises(BadVersionError):
            await s.delete(f"{base}/n", version=0)
        assert (await s.get(f"{base}/n"))[0] == b"b"
        await s.delete(f"{base}/n", version=1)
        assert await s.exists(f"{base}/n") is None
    run(body)


def test_create_errors_are_zookeepers(run):
    async def body(b, base):
        s = await b.session()
        await s.create(f"{base}/a")
        with pytest.raises(NodeExistsError):
            await s.create(f"{base}/a")
        with pytest.raises(NoNodeError):
            await s.create(f"{base}/missing/child")
        await s.create(f"{base}/a/b")
        with pytest.raises(NotEmptyError):
            await s.delete(f"{base}/a")
        with pytest.raises(NoNodeError):
            await s.get(f"{base}/nothing")
        assert await s.create(f"{base}/x/y/z", b"d", make_parents=True) == f"{base}/x/y/z"
    run(body)


def test_sequential_children_are_numbered_by_the_parents_child_version(run):
    async def body(b, base):
        s = await b.session()
        await s.create(f"{base}/changes")
        p0 = await s.create(f"{base}/changes/config_change_", b"1", sequential=True)
        p1 = await s.create(f"{base}/changes/config_change_", b"2", sequential=True)
        assert p0 == f"{base}/changes/config_change_0000000000"
        assert p1 == f"{base}/changes/config_change_0000000001"
        assert await s.children(f"{base}/changes") == ["config_change_0000000000",
                                                       "config_change_0000000001"]
    run(body)


def test_data_watches_fire_once_on_change_and_exists_watches_on_creation(run):
    async def body(b, base):
        s = await b.session()
        loop = asyncio.get_running_loop()
        await s.create(f"{base}/w", b"0")
        events: list[WatchEvent] = []
        first = loop.create_future()

        def watcher(e: WatchEvent) -> None:
            events.append(e)
            if not first.done():
                first.set_result(e)

        await s.get(f"{base}/w", watch=watcher)
        await s.set(f"{base}/w", b"1")
        assert await wait_for(first) == WatchEvent(EventType.CHANGED, f"{base}/w")
        await s.set(f"{base}/w", b"2")  # one-shot: no second event
        created = loop.create_future()
        assert await s.exists(f"{base}/later", watch=created.set_result) is None
        await s.create(f"{base}/later")
        assert await wait_for(created) == WatchEvent(EventType.CREATED, f"{base}/later")
        # The events of one session arrive in order, so by now a second CHANGED would be here.
        assert events == [WatchEvent(EventType.CHANGED, f"{base}/w")]
    run(body)


def test_child_watch_fires_when_a_child_comes_and_a_delete_watch_when_the_node_goes(run):
    async def body(b, base):
        s = await b.session()
        loop = asyncio.get_running_loop()
        await s.create(f"{base}/ids")
        child = loop.create_future()
        assert await s.children(f"{base}/ids", watch=child.set_result) == []
        await s.create(f"{base}/ids/1", b"x")
        assert await wait_for(child) == WatchEvent(EventType.CHILD, f"{base}/ids")
        gone = loop.create_future()
        await s.get(f"{base}/ids/1", watch=gone.set_result)
        await s.delete(f"{base}/ids/1")
        assert await wait_for(gone) == WatchEvent(EventType.DELETED, f"{base}/ids/1")
    run(body)


def test_multi_with_a_failing_check_changes_nothing(run):
    async def body(b, base):
        s = await b.session()
        await s.create(f"{base}/controller_epoch", b"1")
        await s.set(f"{base}/controller_epoch", b"2")  # version 1 now
        await s.create(f"{base}/state", b"old")
        with pytest.raises(MultiError) as info:
            await s.multi([
                SetData(f"{base}/state", b"new"),
                Create(f"{base}/created", b"x"),
                Check(f"{base}/controller_epoch", 0),
            ])
        assert info.value.index == 2 and isinstance(info.value.cause, BadVersionError)
        assert (await s.get(f"{base}/state"))[0] == b"old"
        assert await s.exists(f"{base}/created") is None
        assert (await s.get(f"{base}/state"))[1].version == 0
    run(body)


def test_multi_applies_every_op_as_one_transaction(run):
    async def body(b, base):
        s = await b.session()
        await s.create(f"{base}/e", b"1")
        await s.create(f"{base}/gone")
        out = await s.multi([
            Check(f"{base}/e", 0),
            Create(f"{base}/t", b"t"),
            SetData(f"{base}/e", b"2", 0),
            Delete(f"{base}/gone"),
        ])
        assert out[0] is None and out[1] == f"{base}/t" and out[2].version == 1 and out[3] is None
        (_, t_stat), (_, e_stat) = await s.get(f"{base}/t"), await s.get(f"{base}/e")
        assert t_stat.czxid == e_stat.mzxid  # one zxid for the whole multi
        assert await s.exists(f"{base}/gone") is None
    run(body)


def test_session_expiry_deletes_its_ephemerals_and_tells_the_session(run):
    async def body(b, base):
        owner, other = await b.session(), await b.session()
        loop = asyncio.get_running_loop()
        lost = loop.create_future()
        owner.add_session_listener(
            lambda st: st is SessionState.LOST and not lost.done() and lost.set_result(st))
        await owner.create(f"{base}/ids")
        await owner.create(f"{base}/ids/1", b"me", ephemeral=True)
        _, st = await other.get(f"{base}/ids/1")
        assert st.ephemeral_owner == owner.session_id != 0
        gone = loop.create_future()
        await other.exists(f"{base}/ids/1", watch=gone.set_result)
        await b.expire(owner)
        assert await wait_for(gone) == WatchEvent(EventType.DELETED, f"{base}/ids/1")
        assert await other.exists(f"{base}/ids/1") is None
        assert await other.exists(f"{base}/ids") is not None  # persistent nodes stay
        assert await wait_for(lost) is SessionState.LOST
    run(body)
