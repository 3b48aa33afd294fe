"""The controller state machine end to end on the in-memory ZooKeeper (Kafka 3.x semantics)."""

from __future__ import annotations

from cluster import znodes
from cluster.controller import (
    AutoLeaderRebalance,
    BrokerChange,
    ControlledShutdown,
    ElectionType,
    PartitionModifications,
    ReplicaLeaderElection,
    TopicDeletionStopReplicaResult,
)
from cluster.controller.fencing import fenced
from cluster.controller.zk_io import read_brokers
from cluster.coordination import BadVersionError, MultiError, SetData
from tests.support.controller_harness import (
    Cluster,
    assert_store_matches_context,
    lai_partitions,
    of_type,
    run,
    sr_partitions,
    topic_id,
    um_partitions,
)
from wire import codec
from wire.error_codes import ErrorCode
from wire.messages import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest


def test_a_new_topic_gets_kafkas_partition_state_json_and_is_new_leader_and_isr_for_its_live_replicas():
    c = Cluster([1, 2, 3])
    c.take_sent()
    c.create_topic("orders", {0: [2, 3, 1], 1: [3, 1, 2]})
    data, stat = run(c.admin.get(znodes.partition_state_path("orders", 0)))
    # Exactly what Kafka's TopicPartitionStateZNode.encode writes, at znode version 0.
    assert data == b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3,1]}'
    assert stat.version == 0
    assert c.state("orders", 1)[0].leader == 3
    sent = c.take_sent()
    lais = of_type(sent, LeaderAndIsrRequest)
    assert sorted(r.broker_id for r in lais) == [1, 2, 3]
    for r in lais:
        assert r.api_version == 7
        m = r.message
        assert (m.controller_id, m.controller_epoch, m.is_k_raft_controller, m.type) == (1, 1, False, 0)
        czxid = run(c.admin.exists(znodes.broker_path(r.broker_id))).czxid
        assert m.broker_epoch == czxid  # KIP-380: the broker epoch is its registration's czxid
        assert m.topic_states[0].topic_id == topic_id(len("orders"))
        p0 = lai_partitions(r)[("orders", 0)]
        assert (p0.leader, p0.leader_epoch, p0.isr, p0.replicas, p0.partition_epoch, p0.is_new) == (
            2, 0, [2, 3, 1], [2, 3, 1], 0, True)
        assert sorted(leader.broker_id for leader in m.live_leaders) == [2, 3]
    ums = of_type(sent, UpdateMetadataRequest)
    assert sorted(r.broker_id for r in ums) == [1, 2, 3] and all(r.api_version == 8 for r in ums)
    assert [b.id for b in ums[0].message.live_brokers] == [1, 2, 3]
    assert ums[0].message.live_brokers[1].endpoints[0].port == 9093
    assert_store_matches_context(c)


def test_a_partition_whose_replicas_are_all_down_gets_no_state_until_one_registers():
    c = Cluster([1, 2])
    c.create_topic("t", {0: [3]})
    assert not c.exists(znodes.partition_state_path("t", 0))
    c.register(3)
    c.broker_change()
    assert c.state("t", 0) == (znodes.PartitionState(3, 0, (3,), 1), 0)


def test_broker_failure_moves_its_leaderships_to_the_next_in_sync_replica_with_an_epoch_bump():
    c = Cluster([1, 2, 3])
    c.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]})
    c.take_sent()
    c.kill(1)
    c.broker_change()
    assert c.state("t", 0) == (znodes.PartitionState(2, 1, (2, 3), 1), 1)
    # A follower that died leaves the ISR: the leader epoch moves too (a controller-made shrink).
    assert c.state("t", 1) == (znodes.PartitionState(2, 1, (2, 3), 1), 1)
    sent = c.take_sent()
    assert {r.broker_id for r in sent} == {2, 3}  # nothing to the dead broker
    lai = [lai_partitions(r)[("t", 0)] for r in of_type(sent, LeaderAndIsrRequest) if ("t", 0) in lai_partitions(r)]
    assert lai and all((p.leader, p.leader_epoch, p.partition_epoch) == (2, 1, 1) for p in lai)
    um = um_partitions(of_type(sent, UpdateMetadataRequest)[-1])
    assert um[("t", 0)].offline_replicas == [1]
    assert_store_matches_context(c)


def test_an_offline_partition_reports_leader_minus_one_keeping_its_last_isr_member_until_it_returns():
    c = Cluster([1, 2])
    c.create_topic("solo", {0: [2]})
    c.kill(2)
    c.broker_change()
    assert c.state("solo", 0) == (znodes.PartitionState(-1, 1, (2,), 1), 1)
    um = um_partitions(of_type(c.take_sent(), UpdateMetadataRequest)[-1])
    assert (um[("solo", 0)].leader, um[("solo", 0)].offline_replicas) == (-1, [2])
    c.register(2)
    c.broker_change()
    assert c.state("solo", 0) == (znodes.PartitionState(2, 2, (2,), 1), 2)
    assert_store_matches_context(c)


def test_an_out_of_sync_replica_never_leads_unless_the_topic_allows_unclean_election():
    for unclean in (False, True):
        c = Cluster([1, 2], unclean={"t": unclean})
        c.create_topic("t", {0: [1, 2]})
        c.kill(2)
        c.broker_change()  # ISR [1]
        c.kill(1)
        c.broker_change()  # leader -1, ISR [1]
        c.register(2)
        c.broker_change()
        state, _ = c.state("t", 0)
        if unclean:
            assert (state.leader, state.isr, state.leader_recovery_state) == (2, (2,), 1)
            raw = run(c.admin.get(znodes.partition_state_path("t", 0)))[0]
            assert b'"leader_recovery_state":1' in raw
        else:
            assert (state.leader, state.isr) == (-1, (1,))
        assert_store_matches_context(c)


def test_a_bounced_broker_is_failed_and_restarted_and_is_not_sent_the_stop_replica_of_its_failure():
    c = Cluster([1, 2])
    c.create_topic("t", {0: [2]})
    c.take_sent()
    c.zk.expire(c.broker_sessions.pop(2))
    c.register(2)  # back before the controller saw it go: same id, newer czxid
    c.broker_change()
    assert c.state("t", 0) == (znodes.PartitionState(2, 2, (2,), 1), 2)
    to_2 = [r for r in c.take_sent() if r.broker_id == 2]
    assert not of_type(to_2, StopReplicaRequest)
    assert lai_partitions(of_type(to_2, LeaderAndIsrRequest)[-1])[("t", 0)].leader == 2
    assert all(r.message.broker_epoch == c.controller.context.broker_epoch(2) for r in to_2)


def test_a_deposed_controllers_write_is_refused_by_the_epoch_check_and_it_resigns():
    c = Cluster([1, 2, 3])
    c.create_topic("t", {0: [1, 2]})
    old = c.controller
    c.new_controller()  # the old one's session expired; another election: epoch 2
    before = c.state("t", 0)
    c.kill(1)
    zombie_session = c.zk.session()  # the zombie writes on whatever session it has
    out = c.feed(BrokerChange(run(read_brokers(zombie_session))), controller=old, session=zombie_session)
    assert out.resigned and not old.is_active
    assert c.state("t", 0) == before  # nothing written by the zombie
    # The new controller's writes pass the same check.
    c.broker_change()
    assert c.state("t", 0) == (znodes.PartitionState(2, 1, (2,), 2), 1)
    assert_store_matches_context(c)


def test_a_resigned_controller_answers_controlled_shutdown_with_not_controller():
    c = Cluster([1, 2])
    c.session.multi_now([SetData(znodes.CONTROLLER_EPOCH_PATH, b"9")])  # someone else bumped it
    c.create_topic("t", {0: [1]})
    assert not c.controller.is_active
    out = c.controller.handle(ControlledShutdown(2, 0))
    assert out.controlled_shutdown.error_code == ErrorCode.NOT_CONTROLLER


def test_the_fenced_multi_fails_at_its_check_op():
    c = Cluster([1])
    out = c.controller.handle(PartitionModifications("nope", znodes.TopicAssignment({})))
    assert out.writes == []
    stale = c.controller.context.epoch_zk_version
    c.new_controller()
    try:
        c.admin.multi_now(fenced(stale, [SetData(znodes.CONTROLLER_EPOCH_PATH, b"x")]))
    except MultiError as e:
        assert e.index == 0 and isinstance(e.cause, BadVersionError)
    else:
        raise AssertionError("a stale epoch version passed the check")


def test_topic_deletion_stops_and_deletes_every_replica_then_removes_the_znodes():
    c = Cluster([1, 2, 3])
    c.create_topic("gone", {0: [1, 2], 1: [2, 3]})
    c.admin.create_now(znodes.config_entity_path("topics", "gone"), znodes.encode_config({}))
    c.take_sent()
    c.delete_topic("gone")
    sent = c.take_sent()
    ums = of_type(sent, UpdateMetadataRequest)
    assert any(um_partitions(r).get(("gone", 0)) is not None and um_partitions(r)[("gone", 0)].leader == -2
               for r in ums)
    deletes = {(r.broker_id, tp) for r in of_type(sent, StopReplicaRequest)
               for tp, p in sr_partitions(r).items() if p.delete_partition}
    assert deletes == {(1, ("gone", 0)), (2, ("gone", 0)), (2, ("gone", 1)), (3, ("gone", 1))}
    assert all(p.leader_epoch == -2 for r in of_type(sent, StopReplicaRequest) for p in sr_partitions(r).values())
    assert c.exists(znodes.topic_path("gone"))  # not before every replica answered
    c.feed(TopicDeletionStopReplicaResult(1, {("gone", 0): 0}))
    c.feed(TopicDeletionStopReplicaResult(2, {("gone", 0): 0, ("gone", 1): 0}))
    assert c.exists(znodes.topic_path("gone"))
    c.feed(TopicDeletionStopReplicaResult(3, {("gone", 1): 0}))
    for path in (znodes.topic_path("gone"), znodes.delete_topic_path("gone"),
                 znodes.config_entity_path("topics", "gone")):
        assert not c.exists(path)
    assert "gone" not in c.controller.context.all_topics
    assert_store_matches_context(c)


def test_a_topic_is_not_deleted_while_a_replica_is_on_a_dead_broker():
    c = Cluster([1, 2])
    c.create_topic("t", {0: [1, 2]})
    c.kill(2)
    c.broker_change()
    c.take_sent()
    c.delete_topic("t")
    assert {r.broker_id for r in of_type(c.take_sent(), StopReplicaRequest)} == {1}
    c.feed(TopicDeletionStopReplicaResult(1, {("t", 0): 0}))
    assert c.exists(znodes.topic_path("t"))
    assert "t" in c.controller.context.topics_ineligible_for_deletion
    c.register(2)
    c.broker_change()
    sr = of_type(c.take_sent(), StopReplicaRequest)
    assert [(r.broker_id, sr_partitions(r)[("t", 0)].delete_partition) for r in sr][-1] == (2, True)
    c.feed(TopicDeletionStopReplicaResult(2, {("t", 0): 0}))
    assert not c.exists(znodes.topic_path("t"))


def test_a_failed_replica_deletion_holds_the_topic_until_the_broker_restarts():
    c = Cluster([1])
    c.create_topic("t", {0: [1]})
    c.delete_topic("t")
    c.feed(TopicDeletionStopReplicaResult(1, {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}))
    assert c.exists(znodes.topic_path("t"))
    c.take_sent()
    c.zk.expire(c.broker_sessions.pop(1))
    c.register(1)  # restarted: a newer broker epoch
    c.broker_change()
    retried = [sr_partitions(r)[("t", 0)].delete_partition for r in of_type(c.take_sent(), StopReplicaRequest)]
    assert retried[-1] is True
    c.feed(TopicDeletionStopReplicaResult(1, {("t", 0): 0}))
    assert not c.exists(znodes.topic_path("t"))


def test_controlled_shutdown_moves_leadership_off_shrinks_isr_and_lists_only_what_cannot_move():
    c = Cluster([1, 2, 3])
    c.create_topic("led", {0: [1, 2, 3]})
    c.create_topic("follows", {0: [2, 1, 3]})
    c.create_topic("single", {0: [1]})
    c.create_topic("stuck", {0: [1, 3]})
    c.kill(3)
    c.broker_change()  # stuck: ISR [1]
    c.take_sent()
    epoch = c.controller.context.broker_epoch(1)
    out = c.feed(ControlledShutdown(1, epoch))
    # Kafka lists the partitions with more than one replica it still leads; a
    # single-replica partition stays led by the broker and does not hold it back.
    assert out.controlled_shutdown.error_code == 0
    assert out.controlled_shutdown.remaining_partitions == (("stuck", 0),)
    assert c.state("led", 0)[0] == znodes.PartitionState(2, 2, (2,), 1)
    assert c.state("follows", 0)[0].isr == (2,) and c.state("follows", 0)[0].leader == 2
    assert c.state("single", 0)[0].leader == 1
    sent = c.take_sent()
    to_1 = of_type([r for r in sent if r.broker_id == 1], StopReplicaRequest)
    assert {tp: p.delete_partition for r in to_1 for tp, p in sr_partitions(r).items()} == {("follows", 0): False}
    led_lai = [lai_partitions(r)[("led", 0)] for r in of_type(sent, LeaderAndIsrRequest)
               if ("led", 0) in lai_partitions(r)]
    assert {p.leader for p in led_lai} == {2}
    assert_store_matches_context(c)


def test_controlled_shutdown_refuses_a_stale_broker_epoch_and_an_unknown_broker():
    c = Cluster([1, 2])
    epoch = c.controller.context.broker_epoch(2)
    stale = c.feed(ControlledShutdown(2, epoch - 1)).controlled_shutdown
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert "old broker epoch" in stale.error_message
    assert c.feed(ControlledShutdown(7, -1)).controlled_shutdown.error_code == ErrorCode.BROKER_NOT_AVAILABLE


def _led_by_follower(c: Cluster, topic: str, partitions: int) -> None:
    """State znodes as a leader's AlterPartition would have left them: ISR [1, 2], led by 2."""
    ta = znodes.TopicAssignment({p: (1, 2) for p in range(partitions)}, topic_id(7))
    c.admin.create_now(znodes.topic_path(topic), znodes.encode_topic(ta))
    for p in range(partitions):
        c.admin.create_now(znodes.partition_state_path(topic, p),
                           znodes.encode_partition_state(znodes.PartitionState(2, 3, (1, 2), 1)),
                           make_parents=True)


def test_preferred_election_moves_leadership_back_to_the_head_of_the_assignment():
    c = Cluster([1, 2])
    _led_by_follower(c, "p", 2)
    c.new_controller()
    c.take_sent()
    out = c.feed(ReplicaLeaderElection(frozenset({("p", 0), ("nope", 0)})))
    assert out.elections[("p", 0)].error_code == 0 and out.elections[("p", 0)].leader == 1
    assert out.elections[("nope", 0)].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert c.state("p", 0) == (znodes.PartitionState(1, 4, (1, 2), 2), 1)
    assert c.state("p", 1)[0].leader == 2  # not asked
    again = c.feed(ReplicaLeaderElection(frozenset({("p", 0)})))
    assert again.elections[("p", 0)].error_code == ErrorCode.ELECTION_NOT_NEEDED
    assert_store_matches_context(c)


def test_preferred_election_is_refused_when_the_preferred_replica_is_out_of_sync():
    c = Cluster([1, 2])
    c.create_topic("t", {0: [1, 2]})
    c.kill(1)
    c.broker_change()
    c.register(1)
    c.broker_change()  # 1 is back but not in the ISR (no replication here to bring it back)
    out = c.feed(ReplicaLeaderElection(None))
    assert out.elections[("t", 0)].error_code == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE


def test_a_zk_triggered_preferred_election_consumes_its_request_znode():
    c = Cluster([1, 2])
    _led_by_follower(c, "p", 1)
    c.admin.create_now(znodes.PREFERRED_REPLICA_ELECTION_PATH, znodes.encode_partition_list([("p", 0)]))
    c.new_controller()
    assert c.state("p", 0)[0].leader == 1
    assert not c.exists(znodes.PREFERRED_REPLICA_ELECTION_PATH)


def _preferred_mix(topic_led_by_2: int, topic_led_by_1: int) -> Cluster:
    """Partitions all preferring broker 1 with ISR [1, 2]; some led by 2, the rest by 1."""
    c = Cluster([1, 2])
    _led_by_follower(c, "away", topic_led_by_2)
    ta = znodes.TopicAssignment({p: (1, 2) for p in range(topic_led_by_1)}, topic_id(9))
    c.admin.create_now(znodes.topic_path("home"), znodes.encode_topic(ta))
    for p in range(topic_led_by_1):
        c.admin.create_now(znodes.partition_state_path("home", p),
                           znodes.encode_partition_state(znodes.PartitionState(1, 0, (1, 2), 1)),
                           make_parents=True)
    c.new_controller()
    return c


def test_auto_rebalance_leaves_a_broker_with_ten_percent_of_its_partitions_led_elsewhere():
    c = _preferred_mix(1, 9)
    c.feed(AutoLeaderRebalance())
    assert c.state("away", 0)[0].leader == 2  # 1 of 10 is not more than 10%


def test_auto_rebalance_moves_back_leadership_above_ten_percent():
    c = _preferred_mix(2, 8)
    c.feed(AutoLeaderRebalance())
    assert [c.state("away", p)[0] for p in range(2)] == [znodes.PartitionState(1, 4, (1, 2), 2)] * 2
    assert_store_matches_context(c)


def test_a_topic_without_an_id_gets_one_written_into_its_znode_at_failover():
    c = Cluster([1])
    c.create_topic("old", {0: [1]}, with_id=False)
    ta = znodes.decode_topic(run(c.admin.get(znodes.topic_path("old")))[0])
    assert ta.topic_id is not None and ta.partitions == {0: (1,)}
    assert c.controller.context.topic_ids["old"] == ta.topic_id


def test_added_partitions_are_brought_online_and_the_old_ones_untouched():
    c = Cluster([1, 2])
    c.create_topic("t", {0: [1, 2]})
    ta = znodes.TopicAssignment({0: (1, 2), 1: (2, 1)}, topic_id(1))
    c.admin.multi_now([SetData(znodes.topic_path("t"), znodes.encode_topic(ta))])
    c.feed(PartitionModifications("t", ta))
    assert c.state("t", 1) == (znodes.PartitionState(2, 0, (2, 1), 1), 0)
    assert c.state("t", 0)[1] == 0
    assert_store_matches_context(c)


def test_unclean_election_by_admin_elects_an_out_of_sync_replica_of_a_leaderless_partition():
    c = Cluster([1, 2])
    c.create_topic("t", {0: [1, 2]})
    c.kill(2)
    c.broker_change()
    c.kill(1)
    c.broker_change()
    c.register(2)
    c.broker_change()
    out = c.feed(ReplicaLeaderElection(frozenset({("t", 0)}), ElectionType.UNCLEAN))
    assert out.elections[("t", 0)].leader == 2
    assert c.state("t", 0)[0].isr == (2,)


def test_every_request_the_controller_sends_encodes_at_its_version_and_decodes_back_equal():
    c = Cluster([1, 2, 3])
    c.create_topic("a", {0: [1, 2, 3], 1: [3, 2]})
    c.kill(3)
    c.broker_change()
    c.feed(ControlledShutdown(1, -1))
    c.delete_topic("a")
    sent = c.take_sent()
    assert {type(r.message) for r in sent} == {LeaderAndIsrRequest, UpdateMetadataRequest, StopReplicaRequest}
    for r in sent:
        assert codec.decode(type(r.message), codec.encode(r.message, r.api_version), r.api_version) == r.message
