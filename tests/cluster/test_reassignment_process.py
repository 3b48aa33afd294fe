"""Partition reassignment end to end: a real ZooKeeper, three kbroker processes, kafka-python's
AdminClient (AlterPartitionReassignments / ListPartitionReassignments) and a tool's
``/admin/reassign_partitions`` znode; the data moves by the follower mechanism."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import TopicPartition as KTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError

from cluster import znodes
from tests.support.cluster_processes import Cluster, wait_until

pytestmark = pytest.mark.timeout(300)

RECORDS = 50


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("reassignment"), zookeeper).start()
    yield c
    c.stop()


def create(c: Cluster, topic: str, replicas: list[int]) -> None:
    client = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in client.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])],
                                  request_timeout=60, operation_timeout=60).values():
        f.result(60)
    wait_until(lambda: state(c, topic)["isr"] == replicas, f"{topic}'s ISR to be {replicas}")
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(RECORDS):
        p.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
    assert p.flush(60) == 0


def state(c: Cluster, topic: str) -> dict:
    return json.loads(c.admin.get(znodes.partition_state_path(topic, 0))[0])


def assignment(c: Cluster, topic: str) -> znodes.TopicAssignment:
    return znodes.decode_topic(c.admin.get(znodes.topic_path(topic))[0])


def read_all(c: Cluster, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": f"check-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    try:
        wait_until(lambda: values.extend(m.value() for m in consumer.consume(RECORDS, 1.0) if not m.error())
                   or len(values) >= RECORDS, f"{RECORDS} records from {topic}")
    finally:
        consumer.close()
    return values


def done(c: Cluster, topic: str, target: list[int]) -> bool:
    a = assignment(c, topic)
    s = state(c, topic)
    return (a.partitions[0] == tuple(target) and not a.adding_replicas and not a.removing_replicas
            and sorted(s["isr"]) == sorted(target) and s["leader"] in target)


def test_an_admin_reassignment_copies_the_data_to_the_new_replica_moves_the_leader_and_drops_the_old(cluster):
    create(cluster, "moving", [1, 2])
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=60000)
    try:
        tp = KTopicPartition("moving", 0)
        assert admin.alter_partition_reassignments({tp: [3, 2]}) == {tp: None}
        wait_until(lambda: done(cluster, "moving", [3, 2]), "the reassignment to [3, 2] to complete")
        assert admin.list_partition_reassignments() == {}
        assert admin.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
        assert admin.alter_partition_reassignments({tp: [2, 9]}) == {tp: InvalidReplicationAssignmentError}
    finally:
        admin.close()
    # Broker 1 was told to delete its replica; every record is on the new replica set.
    old_dir = cluster.brokers[1].data_dir / "moving-0"
    wait_until(lambda: not old_dir.exists(), "broker 1 to delete its replica of moving-0")
    assert read_all(cluster, "moving") == [f"v{i}".encode() for i in range(RECORDS)]


def test_a_reassignment_written_to_the_znode_by_a_tool_runs_and_the_znode_is_removed(cluster):
    create(cluster, "tooled", [2, 3])
    cluster.admin.create(znodes.REASSIGN_PARTITIONS_PATH,
                         znodes.encode_reassignment([("tooled", 0, (1, 3))]))
    wait_until(lambda: done(cluster, "tooled", [1, 3]), "the znode's reassignment to complete")
    wait_until(lambda: cluster.admin.exists(znodes.REASSIGN_PARTITIONS_PATH) is None,
               "the controller to delete /admin/reassign_partitions")
    assert read_all(cluster, "tooled") == [f"v{i}".encode() for i in range(RECORDS)]
