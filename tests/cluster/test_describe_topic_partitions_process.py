"""DescribeTopicPartitions (key 75) in cluster mode: three kbroker processes, one real
ZooKeeper, a topic with replication factor 3.  Every broker answers from its metadata cache
what Metadata answers (same leader, epoch, replicas, ISR, offline replicas); a killed
follower drops out of the ISR and shows in offline_replicas, through the raw request and
through Kafka's Java AdminClient (which pages with partitionSizeLimitPerResponse)."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.interbroker.broker_channel import send_once
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.java_admin import describe_topics
from wire.messages import ZERO_UUID, MetadataRequest
from wire.messages import DescribeTopicPartitionsRequest as Req

pytestmark = pytest.mark.timeout(600)

TOPIC = "dtp"
PARTITIONS = 4
LAG_MS = 3000


def describe(cluster: Cluster, broker_id: int, limit: int = 2000):
    b = cluster.brokers[broker_id]
    req = Req(topics=[Req.TopicRequest(name=TOPIC)], response_partition_limit=limit)
    return asyncio.run(send_once("127.0.0.1", b.port, req, 0, "dtp-process-test"))


def partitions(cluster: Cluster, broker_id: int) -> dict[int, object]:
    (t,) = describe(cluster, broker_id).topics
    return {p.partition_index: p for p in t.partitions}


def isrs_whole(cluster: Cluster, broker_id: int) -> bool:
    parts = partitions(cluster, broker_id)
    return len(parts) == PARTITIONS and all(sorted(p.isr_nodes) == [1, 2, 3] for p in parts.values())


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("dtp"), zookeeper,
                **{"replica.lag.time.max.ms": str(LAG_MS), "default.replication.factor": "3"}).start()
    client = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in client.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})],
                                  request_timeout=60, operation_timeout=60).values():
        f.result(60)
    for b in c.brokers:
        wait_until(lambda b=b: isrs_whole(c, b), f"broker {b} to see every ISR whole")
    yield c
    c.stop()


def test_every_broker_answers_describe_topic_partitions_as_its_metadata_answers(cluster):
    for broker_id, b in cluster.brokers.items():
        resp = describe(cluster, broker_id)
        md = asyncio.run(send_once("127.0.0.1", b.port, MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)], allow_auto_topic_creation=False),
            12, "dtp-process-test"))
        (t,), (m,) = resp.topics, md.topics
        assert (t.error_code, t.name, t.topic_id, t.is_internal) == (0, TOPIC, m.topic_id, False)
        assert t.topic_id != ZERO_UUID and resp.next_cursor is None
        assert [(p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes, p.offline_replicas)
                for p in t.partitions] == [
            (p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes, p.offline_replicas)
            for p in m.partitions]
        assert {p.leader_id for p in t.partitions} <= {1, 2, 3}
        assert all((p.error_code, p.eligible_leader_replicas, p.last_known_elr) == (0, [], [])
                   for p in t.partitions)
    # paged: three partitions, then the rest from the cursor
    first = describe(cluster, 1, limit=3)
    assert ([p.partition_index for p in first.topics[0].partitions], first.next_cursor.partition_index) == (
        [0, 1, 2], 3)


def test_a_killed_follower_leaves_the_isr_and_shows_as_offline_in_describe_topic_partitions(cluster):
    controller, _ = cluster.controller()
    killed = next(b for b in (3, 2, 1) if b != controller)
    before = partitions(cluster, controller)
    cluster.brokers[killed].kill()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1",
                         "topic.metadata.refresh.interval.ms": 1000})

    def shrunk() -> bool:
        # records keep the leaders' log end moving, so the dead follower falls behind
        for p in range(PARTITIONS):
            producer.produce(TOPIC, b"x", partition=p)
        producer.flush(10)
        parts = partitions(cluster, controller)
        return all(killed not in p.isr_nodes and p.offline_replicas == [killed] for p in parts.values())
    wait_until(shrunk, f"broker {killed} out of every ISR and offline")

    live = sorted({1, 2, 3} - {killed})
    for broker_id in live:
        parts = partitions(cluster, broker_id)
        for i, p in parts.items():
            assert p.replica_nodes == before[i].replica_nodes   # the assignment is unchanged
            assert sorted(p.isr_nodes) == live and p.offline_replicas == [killed]
            assert p.leader_id in live and p.error_code == 0

    parts = partitions(cluster, controller)
    lines = describe_topics(cluster.bootstrap, [TOPIC], partition_limit=3)  # two pages
    assert lines[0].startswith(f"topic {TOPIC} internal=false id=")
    assert lines[1:] == [
        f"partition {TOPIC} {i} leader={parts[i].leader_id} "
        f"replicas={','.join(str(r) for r in parts[i].replica_nodes)} "
        f"isr={','.join(str(r) for r in parts[i].isr_nodes)} elr= lastKnownElr="
        for i in range(PARTITIONS)]

    cluster.brokers[killed].start(timeout_s=90)
    wait_until(lambda: isrs_whole(cluster, controller), f"broker {killed} to rejoin every ISR")
    assert all(p.offline_replicas == [] for p in partitions(cluster, controller).values())
