"""Topic ids in cluster mode (KIP-516, ZooKeeper era): three kbroker processes and a real
ZooKeeper.  The id in ``/brokers/topics/<t>`` is the truth: every broker's Metadata answers
it, every replica's partition.metadata holds it (LeaderAndIsr carries it); a topic znode
written without one (a topic from before 2.8) gets one from the controller
(``setTopicIds``), which then reaches the replicas; librdkafka fetches by that id (Fetch
v16) and reads exact records; a replica whose partition.metadata holds another id refuses
the LeaderAndIsr for it (INCONSISTENT_TOPIC_ID) and keeps its file."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from cluster import znodes
from kbroker.interbroker.broker_channel import send_once
from log.partition_metadata_file import (
    PartitionMetadataError,
    PartitionMetadataFile,
    encode_partition_metadata,
)
from tests.support.cluster_processes import DEADLINE_S, Cluster, wait_until
from wire.error_codes import ErrorCode
from wire.messages import DeleteTopicsRequest, MetadataRequest

pytestmark = pytest.mark.timeout(600)

PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("topic-ids"), zookeeper).start()
    yield c
    c.stop()


def znode_id(cluster: Cluster, topic: str) -> uuid.UUID | None:
    data, _ = cluster.admin.get(znodes.topic_path(topic))
    return znodes.decode_topic(data).topic_id


def metadata_ids(cluster: Cluster, topic: str) -> set[uuid.UUID]:
    ids = set()
    for b in cluster.brokers.values():
        resp = asyncio.run(send_once("127.0.0.1", b.port, MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False), 12,
            "topic-ids-test"))
        ids.add(resp.topics[0].topic_id)
    return ids


def file_ids(cluster: Cluster, topic: str) -> set[uuid.UUID | None]:
    """The id in partition.metadata of every replica of every partition (None: not yet written)."""
    out: set[uuid.UUID | None] = set()
    for b in cluster.brokers.values():
        for p in range(PARTITIONS):
            f = PartitionMetadataFile(str(b.data_dir / f"{topic}-{p}"))
            try:
                out.add(f.read() if f.exists() else None)
            except PartitionMetadataError:
                out.add(None)   # mid-rename on a busy disk: read again
    return out


def test_every_replica_and_every_brokers_metadata_hold_the_znodes_topic_id(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("ids", PARTITIONS, 3)])["ids"].result(DEADLINE_S)
    tid = wait_until(lambda: znode_id(cluster, "ids"), "the topic znode's id")
    wait_until(lambda: file_ids(cluster, "ids") == {tid}, "every replica's partition.metadata")
    wait_until(lambda: metadata_ids(cluster, "ids") == {tid}, "every broker's Metadata to answer the id")

    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(30):
        p.produce("ids", value=b"v%d" % i, partition=i % PARTITIONS)
    assert p.flush(DEADLINE_S) == 0
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "ids"})
    c.assign([TopicPartition("ids", q, 0) for q in range(PARTITIONS)])
    got = []
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < 30 and time.monotonic() < deadline:
        m = c.poll(1)
        if m is not None:
            assert m.error() is None, m.error()
            got.append((m.partition(), m.offset(), m.value()))
    c.close()
    assert sorted(got) == sorted((i % PARTITIONS, i // PARTITIONS, b"v%d" % i) for i in range(30))


def test_a_topic_znode_without_an_id_gets_one_from_the_controller_and_its_replicas_write_it(cluster):
    # a topic as a pre-2.8 AdminZkClient wrote it: config, then the assignment without topic_id
    cluster.admin.create(znodes.config_entity_path("topics", "legacy"), znodes.encode_config({}), makepath=True)
    cluster.admin.create(znodes.topic_path("legacy"), znodes.encode_topic(znodes.TopicAssignment(
        {p: (1, 2, 3) for p in range(PARTITIONS)}, None)), makepath=True)
    tid = wait_until(lambda: znode_id(cluster, "legacy"), "the controller to add the topic id")
    wait_until(lambda: file_ids(cluster, "legacy") == {tid}, "every replica's partition.metadata")
    wait_until(lambda: metadata_ids(cluster, "legacy") == {tid}, "every broker's Metadata to answer the id")


def test_a_replica_whose_log_holds_another_id_is_refused_with_inconsistent_topic_id_and_keeps_its_file(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("clash", 1, 3)])["clash"].result(DEADLINE_S)
    tid = wait_until(lambda: znode_id(cluster, "clash"), "the topic znode's id")
    b3 = cluster.brokers[3]
    path = b3.data_dir / "clash-0" / "partition.metadata"
    wait_until(lambda: path.exists() and PartitionMetadataFile(str(path.parent)).read() == tid,
               "broker 3's partition.metadata")
    b3.stop()
    other = uuid.uuid4()
    path.write_bytes(encode_partition_metadata(other))
    b3.start()
    cluster.wait_serving()
    # the controller's LeaderAndIsr on broker 3's return: refused for that partition
    wait_until(lambda: "LeaderAndIsr for clash-0 refused: Tried to assign topic ID" in b3.log_text(),
               "broker 3 to refuse clash-0")
    assert PartitionMetadataFile(str(path.parent)).read() == other


def test_deletetopics_v6_deletes_by_id_through_the_controller(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("doomed", 1, 3)])["doomed"].result(DEADLINE_S)
    tid = wait_until(lambda: znode_id(cluster, "doomed"), "the topic znode's id")
    wait_until(lambda: metadata_ids(cluster, "doomed") == {tid}, "every broker's Metadata to answer the id")
    D = DeleteTopicsRequest.DeleteTopicState
    unknown = uuid.uuid4()
    controller = cluster.brokers[cluster.controller()[0]]
    resp = asyncio.run(send_once("127.0.0.1", controller.port, DeleteTopicsRequest(
        topics=[D(name="doomed", topic_id=tid), D(name=None, topic_id=unknown), D(name=None, topic_id=tid)],
        timeout_ms=60000), 6, "topic-ids-test"))
    assert [(r.name, r.topic_id, r.error_code) for r in resp.responses] == [
        ("doomed", tid, ErrorCode.INVALID_REQUEST), (None, unknown, ErrorCode.UNKNOWN_TOPIC_ID),
        ("doomed", tid, ErrorCode.NONE)]
    wait_until(lambda: not cluster.admin.exists(znodes.topic_path("doomed")), "the topic znode to go")
