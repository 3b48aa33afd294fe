"""The controller's writes applied to a real ZooKeeper (through kbroker.zk.zk_client) leave
exactly the znodes - bytes and versions - they leave in the in-memory fake."""

from __future__ import annotations

import asyncio
import uuid

from kazoo.client import KazooClient

from cluster import znodes
from cluster.controller import (
    BrokerChange,
    Controller,
    ControllerConfig,
    ControllerElection,
    TopicChange,
    TopicDeletion,
    TopicDeletionStopReplicaResult,
    election_ops,
)
from cluster.controller.zk_io import execute, read_brokers, read_cluster, read_topics
from cluster.fake_store import FakeZooKeeper
from kbroker.zk.zk_client import ZkClient

DEADLINE_S = 60.0


async def _scenario(new_session, expire) -> dict[str, tuple[bytes, int]]:
    admin = await new_session()
    for path in znodes.PERSISTENT_PATHS:
        await admin.create(path, make_parents=True)
    brokers = {}
    for b in (1, 2, 3):
        brokers[b] = await new_session()
        reg = znodes.BrokerRegistration(b, (znodes.EndPoint("PLAINTEXT", "localhost", 9091 + b),))
        await brokers[b].create(znodes.broker_path(b), znodes.encode_broker(reg), ephemeral=True)
    cs = await new_session()
    await cs.multi(election_ops(1, 1700000000000, ControllerElection(0, -1)))
    ids = iter(uuid.UUID(int=n) for n in range(1, 100))
    controller = Controller(ControllerConfig(broker_id=1, new_topic_id=lambda: next(ids)))

    async def feed(event):
        out = controller.handle(event)
        for write in out.writes:
            result = await execute(cs, write)
            assert result.error is None, result.error

    await feed(await read_cluster(cs, 1, 0))
    await admin.create(znodes.topic_path("keep"), znodes.encode_topic(
        znodes.TopicAssignment({0: (1, 2, 3), 1: (2, 3, 1), 2: (3,)})))
    await admin.create(znodes.topic_path("drop"), znodes.encode_topic(
        znodes.TopicAssignment({0: (1, 2)}, uuid.UUID(int=7))))
    await feed(TopicChange(await read_topics(cs)))
    await expire(brokers.pop(3))
    deadline = asyncio.get_running_loop().time() + DEADLINE_S
    while await cs.exists(znodes.broker_path(3)) is not None:
        assert asyncio.get_running_loop().time() < deadline, "broker 3's registration never went"
        await asyncio.sleep(0.05)
    await feed(BrokerChange(await read_brokers(cs)))
    await admin.create(znodes.delete_topic_path("drop"))
    await feed(TopicDeletion(frozenset(await cs.children(znodes.DELETE_TOPICS_PATH))))
    for b in (1, 2):
        await feed(TopicDeletionStopReplicaResult(b, {("drop", 0): 0}))

    dump = {}

    async def walk(path):
        data, stat = await admin.get(path)
        dump[path] = (data, stat.version)
        for child in await admin.children(path):
            await walk(f"{path}/{child}")

    await walk("/brokers/topics")
    await walk("/admin")
    return dump


def test_the_controllers_writes_leave_the_same_znodes_in_a_real_zookeeper_as_in_the_fake(zookeeper):
    async def on_fake():
        server = FakeZooKeeper()

        async def new_session():
            return server.session()

        async def expire(s):
            server.expire(s)

        return await _scenario(new_session, expire)

    async def on_zookeeper():
        clients: list[ZkClient] = []

        async def new_session():
            c = ZkClient(zookeeper.connect_string, session_timeout_ms=4000, connection_timeout_ms=30000)
            await c.start()
            clients.append(c)
            return c

        async def expire(session):
            # kazoo's recipe: a second client joins the session and closes it.
            sid, passwd = session._kazoo.client_id
            other = KazooClient(zookeeper.connect_string, client_id=(sid, passwd), timeout=4.0)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, other.start, 30)
            await loop.run_in_executor(None, other.stop)
            other.close()

        try:
            return await _scenario(new_session, expire)
        finally:
            for c in clients:
                try:
                    await c.close()
                except Exception:  # an expired session may already be closed
                    pass

    fake = asyncio.run(on_fake())
    real = asyncio.run(on_zookeeper())
    assert real == fake
    assert "/brokers/topics/drop" not in real and "/admin/delete_topics/drop" not in real
    state, version = real["/brokers/topics/keep/partitions/2/state"]
    assert znodes.decode_partition_state(state) == znodes.PartitionState(-1, 1, (3,), 1)
    assert version == 1
    assert znodes.decode_topic(real["/brokers/topics/keep"][0]).topic_id == uuid.UUID(int=1)
