"""Leadership that moves and comes back, on three kbroker processes and a real ZooKeeper:
ElectLeaders (confluent-kafka's AdminClient.elect_leaders, and by hand), the
``/admin/preferred_replica_election`` znode, and a group coordinator that moves with its
``__consumer_offsets`` partition (replication factor 2 here, so the partition has
somewhere to go; the automatic rebalance is off so that only the tests move leaders).

Replication is on: a broker that comes back catches up and rejoins the ISR, after which a
preferred election gives its partitions back; while it is away the election answers
PREFERRED_LEADER_NOT_AVAILABLE, as Kafka does.  The group's offsets are replicated with
``__consumer_offsets``, so each new coordinator resumes where the last one committed.
"""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Consumer, ElectionType, Producer, TopicPartition

from cluster import znodes
from kbroker.interbroker.broker_channel import send_once
from tests.cluster.test_cluster_processes import admin, create_topic, leaders
from tests.support.cluster_processes import Cluster, wait_until
from wire.error_codes import ErrorCode
from wire.java_hash import partition_for
from wire.messages import (
    DescribeGroupsRequest,
    ElectLeadersRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)

pytestmark = pytest.mark.timeout(600)

OFFSETS_PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("moves"), zookeeper,
                **{"offsets.topic.replication.factor": "2",
                   "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
                   "auto.leader.rebalance.enable": "false"}).start()
    yield c
    c.stop()


def send(cluster: Cluster, broker_id: int, req, version: int):
    return asyncio.run(send_once("127.0.0.1", cluster.brokers[broker_id].port, req, version, "test"))


def coordinator_of(cluster: Cluster, group: str, via: int) -> int:
    resp = send(cluster, via, FindCoordinatorRequest(key=group, key_type=0, coordinator_keys=[]), 3)
    return resp.node_id if resp.error_code == 0 else -1


def isr(cluster: Cluster, topic: str, partition: int) -> tuple[int, ...]:
    data, _ = cluster.admin.get(znodes.partition_state_path(topic, partition))
    return znodes.decode_partition_state(data).isr


def start_and_rejoin(cluster: Cluster, broker_id: int, partitions: list[tuple[str, int]]) -> None:
    """Start a stopped broker and wait until it is back in the ISR of ``partitions``."""
    cluster.brokers[broker_id].start(timeout_s=120)
    wait_until(lambda: cluster.registered() == {1, 2, 3}, f"broker {broker_id} back")
    cluster.wait_serving()
    wait_until(lambda: all(broker_id in isr(cluster, t, p) for t, p in partitions),
               f"broker {broker_id} back in the ISR of {partitions}", timeout_s=120)


# -- ElectLeaders ------------------------------------------------------------------------------


def election_codes(results) -> dict[tuple[str, int], int | None]:
    return {(tp.topic, tp.partition): None if e is None else e.code()
            for tp, e in results.items()}


def test_elect_leaders_answers_per_partition_while_the_preferred_replica_is_away_and_after_it_rejoined(
        cluster):
    create_topic(cluster, "pref", 2, assignment=[[1, 2], [2, 1]])
    assert leaders(cluster, "pref") == {0: 1, 1: 2}
    assert cluster.brokers[1].stop(timeout_s=120) == 0  # controlled shutdown: pref-0 to broker 2
    wait_until(lambda: leaders(cluster, "pref") == {0: 2, 1: 2}, "pref-0 led by broker 2 in metadata")
    client = admin(cluster)
    wanted = [TopicPartition("pref", 0), TopicPartition("pref", 1), TopicPartition("nope", 0)]
    results = client.elect_leaders(ElectionType.PREFERRED, wanted).result(60)
    assert election_codes(results) == {
        ("pref", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        ("pref", 1): ErrorCode.ELECTION_NOT_NEEDED,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert leaders(cluster, "pref") == {0: 2, 1: 2}

    start_and_rejoin(cluster, 1, [("pref", 0), ("pref", 1)])
    client = admin(cluster)
    results = client.elect_leaders(ElectionType.PREFERRED, wanted).result(60)
    assert election_codes(results) == {
        ("pref", 0): None,  # elected: broker 1 leads again
        ("pref", 1): ErrorCode.ELECTION_NOT_NEEDED,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    # the controller answers once it has elected; the other brokers' metadata (which the
    # admin client may ask) follows with UpdateMetadata, as in Kafka: wait for it
    wait_until(lambda: leaders(cluster, "pref") == {0: 1, 1: 2}, "pref-0 led by broker 1 in metadata")


def preferred_everywhere(cluster: Cluster) -> bool:
    for topic in cluster.admin.get_children(znodes.TOPICS_PATH):
        data, _ = cluster.admin.get(znodes.topic_path(topic))
        for index, replicas in znodes.decode_topic(data).partitions.items():
            state, _ = cluster.admin.get(znodes.partition_state_path(topic, index))
            if znodes.decode_partition_state(state).leader != replicas[0]:
                return False
    return True


def test_elect_leaders_sent_to_a_broker_that_is_not_the_controller_is_not_controller(cluster):
    controller, _ = cluster.controller()
    other = next(b for b in (1, 2, 3) if b != controller)
    req = ElectLeadersRequest(election_type=0, timeout_ms=10000, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic="pref", partitions=[0])])
    resp = send(cluster, other, req, 2)
    assert resp.error_code == 0
    assert [(r.topic, [(p.partition_id, p.error_code, p.error_message) for p in r.partition_result])
            for r in resp.replica_election_results] == [("pref", [(0, ErrorCode.NOT_CONTROLLER, None)])]
    # to the controller, an election of every partition lists only those it moved (the
    # previous test's restart left __consumer_offsets partitions off their preferred replica)
    everything = send(cluster, controller, ElectLeadersRequest(
        election_type=0, timeout_ms=30000, topic_partitions=None), 2)
    assert everything.error_code == 0
    assert {p.error_code for r in everything.replica_election_results for p in r.partition_result} <= {0}
    assert preferred_everywhere(cluster)
    again = send(cluster, controller, ElectLeadersRequest(
        election_type=0, timeout_ms=30000, topic_partitions=None), 2)
    assert (again.error_code, again.replica_election_results) == (0, [])


def test_the_preferred_replica_election_znode_runs_an_election_and_is_consumed(cluster):
    assert cluster.brokers[1].stop(timeout_s=120) == 0
    wait_until(lambda: leaders(cluster, "pref") == {0: 2, 1: 2}, "pref-0 led by broker 2 in metadata")
    start_and_rejoin(cluster, 1, [("pref", 0)])
    controller, _ = cluster.controller()
    cluster.admin.create(znodes.PREFERRED_REPLICA_ELECTION_PATH,
                         znodes.encode_partition_list([("pref", 0), ("pref", 1)]))
    wait_until(lambda: cluster.admin.exists(znodes.PREFERRED_REPLICA_ELECTION_PATH) is None,
               "the request znode deleted by the controller")
    assert cluster.brokers[controller].wait_for_output(lambda lines: any(
        "from /admin/preferred_replica_election: {'pref-0': 'NONE', "
        "'pref-1': 'ELECTION_NOT_NEEDED'}" in ln for ln in lines))
    wait_until(lambda: leaders(cluster, "pref") == {0: 1, 1: 2}, "pref-0 back on broker 1")


# -- a group coordinator that moves ------------------------------------------------------------


def test_a_group_follows_its_coordinator_away_and_back_and_resumes_from_its_committed_offset(cluster):
    group = "g-moves"
    first = wait_until(lambda: (c := coordinator_of(cluster, group, 1)) >= 0 and c,
                       "the group's coordinator")
    data, _ = cluster.admin.get(znodes.topic_path("__consumer_offsets"))
    index = partition_for(group, OFFSETS_PARTITIONS)
    replicas = znodes.decode_topic(data).partitions[index]
    assert replicas[0] == first
    second = replicas[1]
    third = next(b for b in (1, 2, 3) if b not in (first, second))
    create_topic(cluster, "moves-data", 1, assignment=[[third]])
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(20):
        p.produce("moves-data", f"v{i}".encode(), partition=0)
    assert p.flush(60) == 0

    assert consume(cluster, group, 10) == [f"v{i}".encode() for i in range(10)]
    offsets_partition = [("__consumer_offsets", index)]
    wait_until(lambda: set(isr(cluster, "__consumer_offsets", index)) == {first, second},
               "both replicas of the group's partition in sync")

    # The coordinator's broker stops: its controlled shutdown moves the partition to the
    # second replica, which loads the group from its copy of the partition.
    assert cluster.brokers[first].stop(timeout_s=120) == 0
    wait_until(lambda: coordinator_of(cluster, group, third) == second, "the coordinator moved")
    assert_not_coordinator(cluster, third, group)  # every other broker: NOT_COORDINATOR
    assert consume(cluster, group, 5) == [f"v{i}".encode() for i in range(10, 15)]

    # The first broker returns and catches up; the second stops: the coordinator moves back
    # and the group resumes from what it committed on the second.
    start_and_rejoin(cluster, first, offsets_partition)
    assert cluster.brokers[second].stop(timeout_s=120) == 0
    wait_until(lambda: coordinator_of(cluster, group, third) == first, "the coordinator back")
    assert consume(cluster, group, 5) == [f"v{i}".encode() for i in range(15, 20)]
    start_and_rejoin(cluster, second, offsets_partition)


def consume(cluster: Cluster, group: str, n: int) -> list[bytes]:
    """confluent-kafka: join ``group``, read ``n`` records of moves-data, commit them, leave."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe(["moves-data"])
    out: list[bytes] = []
    try:
        def read() -> bool:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                out.append(m.value())
            return len(out) >= n

        wait_until(read, f"{n} records for {group}", timeout_s=90)
        c.commit(asynchronous=False)
    finally:
        c.close()
    return out


def assert_not_coordinator(cluster: Cluster, broker_id: int, group: str) -> None:
    codes = {
        "join": send(cluster, broker_id, JoinGroupRequest(
            group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
            group_instance_id=None, protocol_type="consumer", protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]),
            5).error_code,
        "heartbeat": send(cluster, broker_id, HeartbeatRequest(
            group_id=group, generation_id=1, member_id="m", group_instance_id=None), 4).error_code,
        "fetch": send(cluster, broker_id, OffsetFetchRequest(group_id=group, topics=None), 5).error_code,
        "commit": {p.error_code for t in send(cluster, broker_id, OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            retention_time_ms=-1, topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                name="moves-data", partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                    committed_metadata="")])]), 8).topics for p in t.partitions},
        "describe": send(cluster, broker_id, DescribeGroupsRequest(
            groups=[group], include_authorized_operations=False), 5).groups[0].error_code,
    }
    nc = ErrorCode.NOT_COORDINATOR
    assert codes == {"join": nc, "heartbeat": nc, "fetch": nc, "commit": {nc}, "describe": nc}
