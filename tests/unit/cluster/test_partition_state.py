"""cluster/partition_state.py: Kafka's leader-side replication decisions, pure."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.partition_state import IsrProposal, PartitionState
from wire.error_codes import ErrorCode

LAG = 30_000


def leader(isr=(1, 2, 3), replicas=(1, 2, 3), leo=0, now=1_000, epoch=1, partition_epoch=0) -> PartitionState:
    s = PartitionState(1, LAG)
    assert s.make_leader(epoch, partition_epoch, list(isr), list(replicas), leo, now)
    return s


def test_high_watermark_is_the_lowest_log_end_offset_in_the_isr():
    s = leader(leo=0)
    s.update_follower_fetch_state(2, 10, 0, 1_100, 10)
    s.update_follower_fetch_state(3, 7, 0, 1_100, 10)
    assert s.maybe_increment_hw(0, 10, 1_100, 1) == 7
    assert s.maybe_increment_hw(7, 10, 1_100, 1) is None  # never moves down or sideways


def test_high_watermark_waits_for_followers_whose_offsets_are_unknown_after_becoming_leader():
    s = leader(leo=5)
    assert s.maybe_increment_hw(3, 5, 1_000, 1) is None


def test_high_watermark_is_frozen_while_the_isr_is_below_min_insync_replicas():
    s = leader(isr=(1,), leo=10)
    assert s.maybe_increment_hw(0, 10, 1_000, 2) is None
    # min.insync.replicas above the replication factor counts as the replication factor
    single = leader(isr=(1,), replicas=(1,), leo=10)
    assert single.maybe_increment_hw(0, 10, 1_000, 3) == 10


def test_a_caught_up_replica_outside_the_isr_holds_the_high_watermark_back():
    s = leader(isr=(1, 2), leo=10)
    s.update_follower_fetch_state(2, 10, 0, 1_100, 10)
    s.update_follower_fetch_state(3, 4, 0, 1_100, 4)  # caught up with the LEO it saw
    assert s.maybe_increment_hw(0, 10, 1_100, 1) == 4


def test_a_follower_one_fetch_behind_a_busy_leader_stays_caught_up():
    s = leader(leo=0, now=0)
    s.update_follower_fetch_state(2, 0, 0, 1_000, 10)   # leader at 10 when it fetched 0
    s.update_follower_fetch_state(2, 10, 0, 20_000, 20)  # reached what the leader had then
    assert s.followers[2].last_caught_up_time_ms == 1_000
    s.update_follower_fetch_state(2, 20, 0, 40_000, 30)
    assert s.followers[2].last_caught_up_time_ms == 20_000
    s.update_follower_fetch_state(3, 30, 0, 40_000, 30)
    assert s.out_of_sync_replicas(45_000, 30) == set()


def test_an_isr_member_that_stops_fetching_is_out_of_sync_after_the_lag_time():
    s = leader(leo=0, now=0)
    s.update_follower_fetch_state(2, 0, 0, 0, 0)
    s.update_follower_fetch_state(3, 0, 0, 0, 0)
    s.update_follower_fetch_state(2, 5, 0, LAG, 5)
    assert s.out_of_sync_replicas(LAG, 5) == set()      # exactly the lag: still in
    assert s.out_of_sync_replicas(LAG + 1, 5) == {3}
    proposal = s.maybe_shrink_isr(LAG + 1, 5)
    assert proposal == IsrProposal(1, (1, 2), 0)
    # while the shrink is in flight: the old ISR counts, nothing else is proposed
    assert s.maximal_isr == (1, 2, 3)
    assert s.out_of_sync_replicas(LAG * 3, 5) == set()
    assert s.apply_committed(1, [1, 2], 1)
    assert s.isr == (1, 2) and s.partition_epoch == 1 and not s.is_inflight


def test_a_follower_rejoins_once_it_reaches_the_high_watermark_and_the_epoch_start():
    s = leader(isr=(1, 2), leo=8)  # epoch start offset 8
    s.update_follower_fetch_state(3, 6, 0, 1_100, 12)
    assert s.maybe_expand_isr(3, 5) is None          # behind the epoch start offset
    s.update_follower_fetch_state(3, 9, 0, 1_200, 12)
    assert s.maybe_expand_isr(3, 10) is None         # behind the HW
    s.update_follower_fetch_state(3, 10, 0, 1_300, 12)
    proposal = s.maybe_expand_isr(3, 10)
    assert proposal == IsrProposal(1, (1, 2, 3), 0)
    assert s.maximal_isr == (1, 2, 3) and s.isr == (1, 2)
    assert s.maybe_expand_isr(3, 10) is None         # one change in flight at a time


def test_a_failed_change_is_forgotten_and_a_stale_commit_ignored():
    s = leader(isr=(1, 2), leo=0)
    s.update_follower_fetch_state(3, 0, 0, 1_100, 0)
    proposal = s.maybe_expand_isr(3, 0)
    s.clear_pending(proposal)
    assert not s.is_inflight and s.isr == (1, 2)
    assert not s.apply_committed(0, [1, 2, 3], 5)    # another leader epoch
    s.maybe_expand_isr(3, 0)
    assert s.apply_committed(1, [1, 2, 3], 1)
    assert not s.apply_committed(1, [1, 2], 0)       # older partition epoch


def test_a_leader_and_isr_with_an_older_partition_epoch_is_ignored():
    s = leader(partition_epoch=4)
    assert not s.make_leader(1, 3, [1], [1, 2, 3], 0, 2_000)
    assert s.isr == (1, 2, 3)
    assert s.make_leader(2, 0, [1], [1, 2, 3], 0, 2_000)   # a new leader epoch always applies


def test_acks_all_completes_when_the_high_watermark_passes_the_offset():
    s = leader(leo=0)
    assert s.check_enough_replicas_reach_offset(5, 4, 2) == (False, ErrorCode.NONE)
    assert s.check_enough_replicas_reach_offset(5, 5, 2) == (True, ErrorCode.NONE)
    shrunk = leader(isr=(1,), leo=0)
    assert shrunk.check_enough_replicas_reach_offset(5, 5, 2) == (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)


def test_a_replica_outside_the_assignment_is_not_tracked():
    s = leader()
    assert not s.update_follower_fetch_state(9, 0, 0, 1_000, 0)


# -- property: the HW against a simple model ------------------------------------------------

ops = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 5)),
    st.tuples(st.just("fetch"), st.sampled_from([2, 3]), st.integers(0, 100)),
    st.tuples(st.just("tick"), st.integers(0, 40_000)),
    st.tuples(st.just("shrink")),
    st.tuples(st.just("commit")),
    st.tuples(st.just("fail")),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(ops, st.integers(1, 3))
def test_the_high_watermark_never_decreases_never_passes_an_isr_member_and_freezes_below_min_isr(script, min_isr):
    s = leader(leo=0, now=0)
    leo, hw, now = 0, 0, 0
    follower_leo = {2: -1, 3: -1}
    for op in script:
        if op[0] == "append":
            leo += op[1]
        elif op[0] == "fetch":
            _, r, offset = op
            offset = min(offset, leo, max(follower_leo[r], 0) + 10)
            s.update_follower_fetch_state(r, offset, 0, now, leo)
            follower_leo[r] = offset
            s.maybe_expand_isr(r, hw)
        elif op[0] == "tick":
            now += op[1]
        elif op[0] == "shrink":
            s.maybe_shrink_isr(now, leo)
        elif op[0] == "commit" and s.pending is not None:
            p = s.pending.proposal
            assert s.apply_committed(p.leader_epoch, list(p.new_isr), p.partition_epoch + 1)
        elif op[0] == "fail":
            s.clear_pending()
        isr_before = s.isr
        new = s.maybe_increment_hw(hw, leo, now, min_isr)
        if new is not None:
            assert new > hw
            assert len(isr_before) >= min(min_isr, 3), "HW moved below min ISR"
            for r in s.maximal_isr:
                if r != 1:
                    assert new <= follower_leo[r]
            assert new <= leo
            hw = new


def test_a_new_leader_epoch_while_leading_keeps_follower_offsets_and_moves_the_epoch_start():
    s = leader(leo=0, now=0)
    s.update_follower_fetch_state(2, 4, 0, 100, 4)
    assert s.make_leader(2, 1, [1, 2], [1, 2, 3], 6, 200)   # controller-made shrink: epoch + 1
    assert s.followers[2].log_end_offset == 4 and s.leader_epoch_start_offset == 6
    assert s.followers[3].last_caught_up_time_ms == 0      # out of the ISR: not caught up
    fresh = PartitionState(1, LAG)
    fresh.make_leader(2, 1, [1, 2], [1, 2, 3], 6, 200)
    assert fresh.followers[2].log_end_offset == -1
