"""kbroker/replica/partition.py in cluster mode: a replicated log led here, followers' fetches moving
the HW, acks=all refused below min ISR, and a follower copying the leader's batches."""

from __future__ import annotations

import dataclasses

import pytest

from kbroker.replica.fetch_waiters import FetchWaiters
from kbroker.replica.partition import NotEnoughReplicasError, Partition
from log.clock import ManualClock
from log.producer_state import AppendOrigin
from log.scheduler import Scheduler
from tests.unit.log.helpers import SMALL, batch, open_log
from wire.error_codes import ErrorCode


def replicated(tmp_path, name="t-0", min_isr=2, clock=None) -> Partition:
    config = dataclasses.replace(SMALL, min_insync_replicas=min_isr)
    clock = clock or ManualClock()
    lg = open_log(tmp_path, config, clock=clock, scheduler=Scheduler(clock), name=name,
                  high_watermark_follows_log_end=False)
    p = Partition(name.rsplit("-", 1)[0], int(name.rsplit("-", 1)[1]), lg, FetchWaiters())
    return p


def test_a_replicated_log_gets_no_epoch_until_it_leads_then_the_leader_epoch_starts_at_its_leo(tmp_path):
    p = replicated(tmp_path)
    assert p.latest_epoch is None
    assert p.make_leader(3, 0, [1, 2, 3], [1, 2, 3], local_id=1, replica_lag_time_max_ms=30_000)
    assert p._log.leader_epoch_cache.entries() == [(3, 0)]
    assert p.leader_epoch == 3


def test_the_leaders_high_watermark_moves_only_with_the_isrs_fetches(tmp_path):
    p = replicated(tmp_path)
    p.make_leader(1, 0, [1, 2, 3], [1, 2, 3], local_id=1, replica_lag_time_max_ms=30_000)
    p.append_records_as_leader(memoryview(batch(3)), -1)
    assert (p.log_end_offset, p.high_watermark) == (3, 0)
    moved = []
    p.on_high_watermark = lambda: moved.append(p.high_watermark)
    assert p.update_follower_fetch_state(2, 3, 0, 3)
    assert p.high_watermark == 0                      # broker 3 has not fetched yet
    assert p.update_follower_fetch_state(3, 2, 0, 3)
    assert p.high_watermark == 2 and moved == [2]
    assert p.check_enough_replicas_reach_offset(3) == (False, ErrorCode.NONE)
    p.update_follower_fetch_state(3, 3, 0, 3)
    assert p.high_watermark == 3
    assert p.check_enough_replicas_reach_offset(3) == (True, ErrorCode.NONE)
    assert not p.update_follower_fetch_state(9, 3, 0, 3)   # not a replica


def test_acks_all_is_refused_before_the_append_below_min_isr_and_acks_1_is_not(tmp_path):
    p = replicated(tmp_path, min_isr=2)
    p.make_leader(1, 0, [1], [1, 2, 3], local_id=1, replica_lag_time_max_ms=30_000)
    with pytest.raises(NotEnoughReplicasError) as e:
        p.append_records_as_leader(memoryview(batch(1)), -1)
    assert e.value.error == ErrorCode.NOT_ENOUGH_REPLICAS
    assert p.log_end_offset == 0
    p.append_records_as_leader(memoryview(batch(1)), 1)
    assert p.log_end_offset == 1 and p.high_watermark == 0   # frozen below min ISR


def test_a_single_replica_partition_moves_its_high_watermark_on_every_append_whoever_appends(tmp_path):
    p = replicated(tmp_path, min_isr=1)
    p.make_leader(0, 0, [1], [1], local_id=1, replica_lag_time_max_ms=30_000)
    # the group coordinator's write (acks=1 here: the HW moves with the append itself)
    p.append_records_as_leader(memoryview(batch(2)), 1, origin=AppendOrigin.COORDINATOR)
    assert p.high_watermark == 2
    p.append_records_as_leader(memoryview(batch(1)), 0)   # a producer's, acks=0
    assert p.high_watermark == 3


def test_a_follower_keeps_the_leaders_batches_offsets_and_epochs_byte_for_byte(tmp_path):
    leader = replicated(tmp_path, "t-0")
    leader.make_leader(4, 0, [1, 2], [1, 2], local_id=1, replica_lag_time_max_ms=30_000)
    for n in (2, 3):
        leader.append_records_as_leader(memoryview(batch(n)), 1)
    data = leader.read(0, 1 << 20, True, to_log_end=True).records
    follower = replicated(tmp_path / "f", "t-0")
    follower.make_follower(4)
    follower.append_records_as_follower(data)
    assert follower.log_end_offset == 5
    assert follower._log.leader_epoch_cache.entries() == [(4, 0)]
    assert follower.read(0, 1 << 20, True, to_log_end=True).records == data
    assert not follower.update_offsets_from_leader(leader.high_watermark, leader.log_start_offset)
    assert follower.high_watermark == 0
