"""Request handlers' ZooKeeper calls through a lost connection (kbroker/runtime/zk_retry.py; issue 28).

A ZooKeeper restart made the controller's CreateTopics answer UNKNOWN_SERVER_ERROR: the
``exists`` of its checks failed with SessionExpiredError (kazoo found the session expired on
reconnecting) and escaped the handler.  Here the in-memory ZooKeeper (cluster/fake_store.py)
stands behind a session that fails chosen calls as kazoo does: ConnectionLossError before the
call reaches the server, or after it was applied (the answer lost with the connection), and
SessionExpiredError.  The handlers must answer as if nothing happened, or a retriable error
once the request's timeout has passed - never raise.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from cluster import znodes
from cluster.coordination import ConnectionLossError, NoNodeError, SessionExpiredError
from cluster.fake_store import FakeZooKeeper
from cluster.metadata_image import BrokerInfo
from kbroker.runtime.zk_retry import ZkUnavailableError, until_connected
from kbroker.zk import zk_admin
from kbroker.zk.config_entities import publish_entity
from kbroker.zk.zk_topic_admin import ZkTopicAdmin
from tests.support.fakes import fixed_config
from wire.error_codes import ErrorCode
from wire.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)


class FlakySession:
    """A FakeSession whose calls named in ``faults`` fail once each, in order: ``(method,
    error, applied)`` - ``applied`` means the call reached the server before the error (its
    answer was lost); ``down`` fails every call with ConnectionLossError."""

    def __init__(self, inner: Any, faults: list[tuple[str, type[Exception], bool]] | None = None,
                 connection_timeout_ms: int = 5000) -> None:
        self.inner = inner
        self.faults = list(faults or [])
        self.down = False
        self.calls: list[str] = []
        self.connection_timeout_ms = connection_timeout_ms

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if name not in ("create", "get", "exists", "set", "delete", "children", "multi"):
            return target

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            if self.down:
                raise ConnectionLossError("", "connection loss")
            if self.faults and self.faults[0][0] == name:
                _, error, applied = self.faults.pop(0)
                if applied:
                    await target(*args, **kwargs)
                raise error("", f"{error.__name__} (test)")
            return await target(*args, **kwargs)

        return call


def _server() -> FakeZooKeeper:
    server = FakeZooKeeper()
    s = server.session()
    for path in znodes.PERSISTENT_PATHS:
        if path not in server.dump():
            s.create_now(path, make_parents=True)
    return server


def _admin(zk: Any, tmp_path: Any) -> ZkTopicAdmin:
    """The controller's topic admin over ``zk``: an active controller whose metadata cache
    has a leader for everything, brokers 1-3 live."""
    brokers = [BrokerInfo(b, ()) for b in (1, 2, 3)]

    async def wait_ready(_timeout_s: float) -> bool:
        return True

    async def wait_for(predicate: Any, _timeout_s: float) -> bool:
        return predicate()

    cache = SimpleNamespace(topic_names=lambda: [], topic=lambda name: None,
                            image=SimpleNamespace(leader=lambda topic, p: 1), wait_for=wait_for)
    config = fixed_config({"node.id": "1", "log.dirs": str(tmp_path / "unused")})
    runner = SimpleNamespace(wait_ready=wait_ready)
    return ZkTopicAdmin(zk, cache, runner, lambda: brokers, config)  # type: ignore[arg-type]


def _create(*names: str, timeout_ms: int = 5000) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=n, num_partitions=3, replication_factor=1, assignments=[], configs=[]) for n in names],
        timeout_ms=timeout_ms, validate_only=False)


def _topic_id_in_zk(server: FakeZooKeeper, name: str) -> Any:
    return znodes.decode_topic(server.dump()[znodes.topic_path(name)]).topic_id


@pytest.mark.parametrize("fault", [
    ("exists", SessionExpiredError, False),     # what the flaky run's log showed
    ("exists", ConnectionLossError, False),
    ("multi", ConnectionLossError, False),
    ("multi", SessionExpiredError, False),
])
def test_create_topics_waits_out_a_lost_connection_and_creates_the_topic(tmp_path, fault):
    server = _server()
    zk = FlakySession(server.session(), [fault])
    resp = asyncio.run(_admin(zk, tmp_path).create_topics(_create("after-zk-restart"), 4))
    [r] = resp.topics
    assert (r.name, r.error_code, r.error_message) == ("after-zk-restart", ErrorCode.NONE, None)
    assert r.topic_id == _topic_id_in_zk(server, "after-zk-restart")
    assert not zk.faults   # the fault did happen
    assert znodes.config_entity_path("topics", "after-zk-restart") in server.dump()


def test_a_creation_applied_before_its_answer_was_lost_is_found_again_not_already_existing(tmp_path):
    server = _server()
    zk = FlakySession(server.session(), [("multi", ConnectionLossError, True)])
    resp = asyncio.run(_admin(zk, tmp_path).create_topics(_create("t"), 4))
    [r] = resp.topics
    assert r.error_code == ErrorCode.NONE   # not TOPIC_ALREADY_EXISTS: the znode is its own
    assert r.topic_id == _topic_id_in_zk(server, "t")


def test_a_topic_created_by_someone_else_meanwhile_still_already_exists(tmp_path):
    server = _server()
    other = server.session()

    async def main() -> None:
        await zk_admin.create_topic(other, "t", {0: [1]}, {})
        with pytest.raises(zk_admin.TopicExistsError, match="Topic 't' already exists."):
            await zk_admin.create_topic(FlakySession(server.session()), "t", {0: [2]}, {})

    asyncio.run(main())


def test_zookeeper_not_back_within_the_request_timeout_answers_request_timed_out(tmp_path):
    zk = FlakySession(_server().session())
    zk.down = True
    started = time.monotonic()
    resp = asyncio.run(_admin(zk, tmp_path).create_topics(_create("a", "b", timeout_ms=300), 4))
    assert time.monotonic() - started < 3
    assert [(r.name, r.error_code) for r in resp.topics] == [
        ("a", ErrorCode.REQUEST_TIMED_OUT), ("b", ErrorCode.REQUEST_TIMED_OUT)]
    assert len(zk.calls) > 2   # tried again, not once


def test_delete_topics_and_create_partitions_wait_out_a_lost_connection(tmp_path):
    server = _server()
    setup = server.session()

    async def main() -> None:
        await zk_admin.create_topic(setup, "t", {0: [1]}, {})
        zk = FlakySession(server.session(), [("get", ConnectionLossError, False),
                                             ("set", ConnectionLossError, True)])
        admin = _admin(zk, tmp_path)
        resp = await admin.create_partitions(CreatePartitionsRequest(topics=[
            CreatePartitionsRequest.CreatePartitionsTopic(name="t", count=3, assignments=None)],
            timeout_ms=5000, validate_only=False))
        assert [(r.name, r.error_code) for r in resp.results] == [("t", ErrorCode.NONE)]
        assert len(znodes.decode_topic(server.dump()[znodes.topic_path("t")]).partitions) == 3

        zk.faults = [("exists", SessionExpiredError, False), ("create", ConnectionLossError, True)]
        resp = await admin.delete_topics(DeleteTopicsRequest(
            topics=[], topic_names=["t"], timeout_ms=0), 4)
        assert [(r.name, r.error_code) for r in resp.responses] == [("t", ErrorCode.NONE)]
        assert znodes.delete_topic_path("t") in server.dump()
        assert not zk.faults

    asyncio.run(main())


def test_config_writes_wait_out_a_lost_connection(tmp_path):
    server = _server()
    zk = FlakySession(server.session(), [("set", ConnectionLossError, False),
                                         ("create", SessionExpiredError, True)])

    async def main() -> None:
        await asyncio.wrap_future(publish_entity(zk, "topics", "t", {"retention.ms": "1"}))

    asyncio.run(main())
    assert znodes.decode_config(server.dump()[znodes.config_entity_path("topics", "t")]) == {
        "retention.ms": "1"}
    assert not zk.faults


def test_until_connected_leaves_other_errors_to_the_caller_and_bounds_a_call_that_hangs():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        tries = 0

        async def missing() -> None:
            nonlocal tries
            tries += 1
            raise NoNodeError("/x")

        with pytest.raises(NoNodeError):
            await until_connected(missing, loop.time() + 5)
        assert tries == 1

        async def reconnecting() -> None:   # kazoo queues a call until it is connected again
            await asyncio.Event().wait()

        started = loop.time()
        with pytest.raises(ZkUnavailableError):
            await until_connected(reconnecting, loop.time() + 0.2)
        assert loop.time() - started < 2

    asyncio.run(main())
