"""Kafka 4's consumer group protocol (KIP-848) on a three-broker ZooKeeper-mode cluster: the
group's coordinator is killed with -9 mid-run, another broker loads the group from its
``__consumer_offsets`` replica, the members find it and go on with their epochs, and no
committed record is lost or read twice."""

from __future__ import annotations

import asyncio
import re

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.interbroker.broker_channel import send_once
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.consumer_members import Member, describe, settled
from tests.support.group_helpers import produce_numbers
from tests.support.kafka_tools import kafka_tool
from wire.java_hash import partition_for
from wire.messages import FindCoordinatorRequest

pytestmark = pytest.mark.timeout(600)

FAST = {"group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "6000",
        "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
        "offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "3",
        "default.replication.factor": "3"}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cluster"), zookeeper, **FAST).start()
    yield c
    c.stop()


def coordinator_of(cluster: Cluster, group: str) -> int:
    for b in cluster.brokers.values():
        if not b.alive():
            continue
        req = FindCoordinatorRequest(key=group, key_type=0, coordinator_keys=[])
        resp = asyncio.run(send_once("127.0.0.1", b.port, req, 3, "test"))
        return resp.node_id if resp.error_code == 0 else -1
    return -1


def test_the_coordinator_killed_with_minus_9_moves_and_the_group_goes_on_with_its_epochs(cluster, tmp_path):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("clicks", 6, 3)])["clicks"].result(60)
    wait_until(lambda: coordinator_of(cluster, "g-cluster") >= 0, "the group's coordinator")
    members = [Member(cluster.bootstrap, "g-cluster", "clicks", tmp_path / f"m{i}.out") for i in range(2)]
    try:
        wait_until(lambda: settled(members, {f"clicks:{p}" for p in range(6)}), "a split", 90)
        produce_numbers(cluster.bootstrap, 300)
        wait_until(lambda: sum(len(m.records()) for m in members) >= 300, "the first 300", 90)
        old = coordinator_of(cluster, "g-cluster")
        before = describe(cluster.brokers[old].bootstrap, "g-cluster")
        cluster.brokers[old].kill()
        wait_until(lambda: coordinator_of(cluster, "g-cluster") not in (-1, old), "a new coordinator", 90)
        produce_numbers(cluster.bootstrap, 300, start=300)
        wait_until(lambda: sum(len(m.records()) for m in members) >= 600, "the next 300", 120)
        values = sorted(v for m in members for v, _, _ in m.records())
        assert values == list(range(600))          # nothing lost, nothing read twice
        new = coordinator_of(cluster, "g-cluster")
        after = describe(cluster.brokers[new].bootstrap, "g-cluster")
        # the same members, loaded from the log: no member had to rejoin as a new one
        assert sorted(m.member_id for m in after.members) == sorted(m.member_id for m in before.members)
        assert after.group_epoch >= before.group_epoch
        assert after.group_state == "Stable"
        # the new coordinator's replica of the group's partition, read by Kafka's DumpLogSegments
        partition = partition_for("g-cluster", 3)
        segments = sorted((cluster.brokers[new].data_dir / f"__consumer_offsets-{partition}").glob("*.log"))
        dump = "".join(kafka_tool("org.apache.kafka.tools.DumpLogSegments", "--files", str(seg),
                                  "--offsets-decoder") for seg in segments)
        lines = [ln for ln in dump.splitlines() if ln.startswith("| offset:")]
        assert lines and not [ln for ln in lines if "Error at offset" in ln], dump[-3000:]
        types = set(re.findall(r'key: \{"type":"(\d+)","data":\{"groupId":"g-cluster"', dump))
        assert {"3", "5", "6", "7", "8"} <= types
    finally:
        for m in members:
            m.stop()
