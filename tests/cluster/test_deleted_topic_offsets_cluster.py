"""Cluster mode: a deleted topic's committed offsets leave the groups of the broker that
coordinates them even when that broker holds no replica of the topic - it learns of the
deletion from the controller's UpdateMetadata (partitions with leader -2), as Kafka's
ZooKeeper-mode brokers do (KafkaApis.handleUpdateMetadataRequest calls
groupCoordinator.onPartitionsDeleted).  Their tombstones are in ``__consumer_offsets``: a
restart of the coordinator does not bring them back."""

from __future__ import annotations

import pytest
from confluent_kafka import OFFSET_INVALID, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.tools.client import Client
from tests.support.cluster_processes import DEADLINE_S, Cluster, wait_until

pytestmark = pytest.mark.timeout(600)

GROUP = "deleted-topic-readers"


def commit(bootstrap: str, offsets: dict[tuple[str, int], int]) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def committed(bootstrap: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        return {(tp.topic, tp.partition): tp.offset
                for tp in c.committed([TopicPartition(t, p) for t, p in partitions], timeout=DEADLINE_S)}
    finally:
        c.close()


def test_the_coordinator_drops_a_deleted_topics_offsets_without_holding_a_replica_of_it(zookeeper, tmp_path):
    cluster = Cluster(tmp_path, zookeeper).start()
    try:
        bootstrap = cluster.bootstrap
        with Client(bootstrap) as c:
            coordinator = wait_until(lambda: c.find_coordinator(GROUP) + 1, "the group's coordinator") - 1
        elsewhere = min(i for i in cluster.brokers if i != coordinator)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for name in ("gone", "kept"):
            assert admin.create_topics([NewTopic(name, 2, replica_assignment=[[elsewhere], [elsewhere]])])[
                name].result(DEADLINE_S) is None
        commit(bootstrap, {("gone", 0): 5, ("gone", 1): 7, ("kept", 0): 3})
        every = [("gone", 0), ("gone", 1), ("kept", 0)]
        assert committed(bootstrap, every) == {("gone", 0): 5, ("gone", 1): 7, ("kept", 0): 3}

        assert admin.delete_topics(["gone"])["gone"].result(DEADLINE_S) is None
        after = {("gone", 0): OFFSET_INVALID, ("gone", 1): OFFSET_INVALID, ("kept", 0): 3}
        wait_until(lambda: committed(bootstrap, every) == after, "the coordinator to drop the deleted offsets")
        assert cluster.brokers[coordinator].wait_for_output(lambda lines: any(
            "Removed 2 offsets associated with deleted partitions of gone" in line for line in lines), DEADLINE_S)

        cluster.brokers[coordinator].restart()
        cluster.wait_serving()
        wait_until(lambda: committed(cluster.bootstrap, every) == after,
                   "the restarted coordinator to answer without the deleted offsets")
    finally:
        cluster.stop()
