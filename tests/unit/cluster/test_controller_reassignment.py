"""Partition reassignment (KIP-455) on the controller, on the in-memory ZooKeeper: Kafka's
onPartitionReassignment phases, its validation messages, /admin/reassign_partitions."""

from __future__ import annotations

from cluster import znodes
from cluster.controller import (
    AlterPartition,
    ApiPartitionReassignment,
    ListPartitionReassignments,
    ZkPartitionReassignment,
)
from cluster.controller.context import ReplicaAssignment
from cluster.coordination import Create
from tests.support.controller_harness import (
    Cluster,
    assert_store_matches_context,
    lai_partitions,
    of_type,
    run,
    sr_partitions,
)
from tests.unit.cluster.test_controller_alter_partition import request
from wire.error_codes import ErrorCode
from wire.messages import LeaderAndIsrRequest, StopReplicaRequest

TP = ("t", 0)


def topic_znode(c: Cluster) -> znodes.TopicAssignment:
    return znodes.decode_topic(run(c.admin.get(znodes.topic_path("t")))[0])


def started() -> Cluster:
    """t-0 on [1, 2, 3] (leader 1) asked to move to [2, 3, 4]."""
    c = Cluster([1, 2, 3, 4])
    c.create_topic("t", {0: [1, 2, 3]})
    c.take_sent()
    out = c.feed(ApiPartitionReassignment({TP: (2, 3, 4)}))
    assert out.reassignments == {TP: (ErrorCode.NONE, None)}
    return c


def expand(c: Cluster, isr: list[int]) -> None:
    state, version = c.state("t", 0)
    ctx = c.controller.context
    req = request(c, state.leader, "t", 0, state.leader_epoch, isr, version,
                  isr_epochs=[ctx.broker_epoch(b) for b in isr])
    out = c.feed(AlterPartition(req, 3))
    assert out.alter_partition.topics[0].partitions[0].error_code == 0


def test_a_reassignment_first_adds_the_target_replicas_and_bumps_the_leader_epoch():
    c = started()
    z = topic_znode(c)
    assert (z.partitions[0], z.adding_replicas[0], z.removing_replicas[0]) == ((2, 3, 4, 1), (4,), (1,))
    # The leader and ISR stay; the epoch moves so the new replica set is announced.
    assert c.state("t", 0) == (znodes.PartitionState(1, 1, (1, 2, 3), 1), 1)
    sent = c.take_sent()
    lais = {r.broker_id: lai_partitions(r)[TP] for r in of_type(sent, LeaderAndIsrRequest)}
    assert sorted(lais) == [1, 2, 3, 4]
    for b, p in lais.items():
        assert (p.replicas, p.adding_replicas, p.removing_replicas, p.leader_epoch) == ([2, 3, 4, 1], [4], [1], 1)
        assert p.is_new == (b == 4)
    listed = c.feed(ListPartitionReassignments()).listed
    assert listed == {TP: ReplicaAssignment((2, 3, 4, 1), (4,), (1,))}
    assert_store_matches_context(c)


def test_once_the_targets_are_in_sync_the_leader_moves_and_the_removed_replica_is_deleted():
    c = started()
    c.take_sent()
    expand(c, [1, 2, 3, 4])  # the leader's AlterPartition once broker 4 caught up
    state, _ = c.state("t", 0)
    # Leader 1 is not a target: the first live in-ISR target (2) leads; 1 then leaves the ISR.
    assert (state.leader, state.isr) == (2, (2, 3, 4))
    z = topic_znode(c)
    assert (z.partitions, dict(z.adding_replicas), dict(z.removing_replicas)) == ({0: (2, 3, 4)}, {}, {})
    sent = c.take_sent()
    stops = [(r.broker_id, sr_partitions(r)[TP].delete_partition) for r in of_type(sent, StopReplicaRequest)]
    assert stops == [(1, False), (1, True)]
    assert c.feed(ListPartitionReassignments()).listed == {}
    assert c.controller.context.partitions_being_reassigned == set()
    assert_store_matches_context(c)


def test_cancelling_returns_to_the_original_replicas_and_stops_the_added_one():
    c = started()
    c.take_sent()
    out = c.feed(ApiPartitionReassignment({TP: None}))
    assert out.reassignments == {TP: (ErrorCode.NONE, None)}
    z = topic_znode(c)
    # Kafka cannot restore the original order once the target came first (its own comment).
    assert (z.partitions, dict(z.adding_replicas)) == ({0: (2, 3, 1)}, {})
    stops = {(r.broker_id, sr_partitions(r)[TP].delete_partition) for r in of_type(c.take_sent(), StopReplicaRequest)}
    assert stops == {(4, False), (4, True)}
    assert c.feed(ApiPartitionReassignment({TP: None})).reassignments == {
        TP: (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)}
    assert_store_matches_context(c)


def test_invalid_reassignments_are_refused_with_kafkas_messages():
    c = Cluster([1, 2, 3])
    c.create_topic("t", {0: [1, 2, 3]})
    c.kill(3)
    c.broker_change()
    results = c.feed(ApiPartitionReassignment({
        ("t", 0): (), ("t", 1): (1, 1), ("t", 2): (1, -1), ("t", 3): (1, 2)})).reassignments
    assert results[("t", 0)] == (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 "Empty replica list specified in partition reassignment.")
    assert results[("t", 1)] == (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 "Duplicate replica ids in partition reassignment replica list: List(1, 1)")
    assert results[("t", 2)] == (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 "Invalid broker id in replica list: List(1, -1)")
    assert results[("t", 3)] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
    dead = c.feed(ApiPartitionReassignment({TP: (1, 4)})).reassignments[TP]
    assert dead == (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "Replica assignment has brokers that are not alive. Replica list: List(4), "
                    "live broker list: Set(1, 2)")


def test_a_reassignment_written_to_zookeeper_runs_and_its_znode_is_removed_when_done():
    c = Cluster([1, 2, 3, 4])
    c.create_topic("t", {0: [1, 2, 3]})
    c.admin.multi_now([Create(znodes.REASSIGN_PARTITIONS_PATH,
                              znodes.encode_reassignment([("t", 0, (1, 2, 4))]))])
    content = {TP: (1, 2, 4)}
    c.feed(ZkPartitionReassignment(content))
    assert topic_znode(c).partitions[0] == (1, 2, 4, 3)
    expand(c, [1, 2, 3, 4])
    assert c.state("t", 0)[0].isr == (1, 2, 4)  # leader 1 stays (a target); 3 leaves
    assert topic_znode(c).partitions[0] == (1, 2, 4)
    assert not c.exists(znodes.REASSIGN_PARTITIONS_PATH)
    assert_store_matches_context(c)


def test_a_new_controller_resumes_a_reassignment_from_the_topic_znode_and_completes_it():
    c = started()
    c.new_controller()
    ctx = c.controller.context
    assert ctx.partitions_being_reassigned == {TP}
    assert ctx.assignments[TP] == ReplicaAssignment((2, 3, 4, 1), (4,), (1,))
    expand(c, [1, 2, 3, 4])
    assert (c.state("t", 0)[0].leader, topic_znode(c).partitions[0]) == (2, (2, 3, 4))
    assert_store_matches_context(c)


def test_a_resigned_controller_answers_reassignment_requests_with_not_controller():
    c = started()
    old = c.controller
    c.new_controller()
    c.feed(ApiPartitionReassignment({TP: (1, 2, 3)}), controller=old)  # its write fails: resigns
    out = old.handle(ListPartitionReassignments())
    assert (out.reassignment_error, out.listed) == (ErrorCode.NOT_CONTROLLER, None)
