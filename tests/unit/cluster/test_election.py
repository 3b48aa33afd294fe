"""cluster.election: Kafka's four leader-election algorithms and its ISR removal rule."""

from __future__ import annotations

from cluster.election import (
    NO_LEADER,
    RECOVERING,
    LeaderAndIsr,
    controlled_shutdown_election,
    offline_election,
    preferred_replica_election,
    reassign_election,
    remove_replica_from_isr,
)

STATE = LeaderAndIsr(leader=1, leader_epoch=4, isr=(1, 2, 3), partition_epoch=9)


def test_offline_election_picks_the_first_live_in_sync_replica_in_assignment_order():
    new = offline_election([1, 2, 3], STATE, live={2, 3}, unclean_enabled=False)
    assert (new.leader, new.leader_epoch, new.isr) == (2, 5, (2, 3))
    assert new.partition_epoch == 9  # the znode version moves only when it is written


def test_offline_election_never_picks_an_out_of_sync_replica_when_unclean_is_off():
    only_1_in_sync = LeaderAndIsr(1, 4, (1,))
    assert offline_election([1, 2, 3], only_1_in_sync, live={2, 3}, unclean_enabled=False) is None


def test_unclean_offline_election_takes_the_first_live_replica_with_isr_of_itself_recovering():
    only_1_in_sync = LeaderAndIsr(1, 4, (1,))
    new = offline_election([1, 2, 3], only_1_in_sync, live={3, 2}, unclean_enabled=True)
    assert (new.leader, new.isr, new.leader_recovery_state) == (2, (2,), RECOVERING)


def test_preferred_election_is_the_head_of_the_assignment_only_if_live_and_in_sync():
    led_by_2 = LeaderAndIsr(2, 7, (2, 1))
    assert preferred_replica_election([1, 2], led_by_2, live={1, 2}).leader == 1
    assert preferred_replica_election([1, 2], led_by_2, live={2}) is None
    assert preferred_replica_election([3, 2], led_by_2, live={2, 3}) is None


def test_reassignment_election_chooses_among_the_target_replicas():
    assert reassign_election([3, 2], STATE, live={1, 2, 3}).leader == 3
    assert reassign_election([4], STATE, live={1, 2, 3, 4}) is None


def test_controlled_shutdown_moves_leadership_off_and_drops_shutting_down_brokers_from_isr():
    new = controlled_shutdown_election([1, 2, 3], STATE, {1, 2, 3}, shutting_down={1})
    assert (new.leader, new.leader_epoch, new.isr) == (2, 5, (2, 3))
    assert controlled_shutdown_election([1], LeaderAndIsr(1, 0, (1,)), {1}, {1}) is None


def test_removing_a_replica_never_empties_the_isr_and_a_removed_leader_leaves_no_leader():
    assert remove_replica_from_isr(STATE, 2).isr == (1, 3)
    alone = remove_replica_from_isr(LeaderAndIsr(1, 0, (1,)), 1)
    assert (alone.leader, alone.isr, alone.leader_epoch) == (NO_LEADER, (1,), 1)
