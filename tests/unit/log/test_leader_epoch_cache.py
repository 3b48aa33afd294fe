"""The leader epoch cache and its leader-epoch-checkpoint file, as Kafka's
LeaderEpochFileCache keeps them, and the log operations that move it."""

from __future__ import annotations

import os

from log.clock import ManualClock
from log.leader_epoch_cache import EpochEntry, LeaderEpochFileCache
from log.scheduler import Scheduler
from wire.record_batch import iter_batches

from .helpers import batch, open_log, reopen


def _cache(tmp_path) -> LeaderEpochFileCache:
    os.makedirs(tmp_path / "t-0", exist_ok=True)
    return LeaderEpochFileCache(str(tmp_path / "t-0"), ("t", 0), Scheduler(ManualClock()))


def _file(tmp_path) -> str:
    return (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text()


def test_assigning_epoch_0_at_offset_0_writes_kafkas_checkpoint_format(tmp_path):
    cache = _cache(tmp_path)
    assert cache.assign(0, 0)
    assert _file(tmp_path) == "0\n1\n0 0\n"


def test_the_same_epoch_again_changes_nothing_and_a_new_epoch_is_appended(tmp_path):
    cache = _cache(tmp_path)
    cache.assign(0, 0)
    assert not cache.assign(0, 5)
    assert cache.assign(3, 1200)
    assert cache.entries() == [EpochEntry(0, 0), EpochEntry(3, 1200)]
    assert _file(tmp_path) == "0\n2\n0 0\n3 1200\n"


def test_an_entry_that_contradicts_later_ones_removes_them(tmp_path):
    cache = _cache(tmp_path)
    for epoch, offset in ((1, 0), (2, 10), (4, 20)):
        cache.assign(epoch, offset)
    cache.assign(3, 15)  # epoch 4 >= 3 goes
    assert cache.entries() == [EpochEntry(1, 0), EpochEntry(2, 10), EpochEntry(3, 15)]
    cache.assign(5, 5)  # start offsets 10 and 15 >= 5 go
    assert cache.entries() == [EpochEntry(1, 0), EpochEntry(5, 5)]


def test_end_offset_for_answers_as_kafkas_end_offset_for(tmp_path):
    cache = _cache(tmp_path)
    for epoch, offset in ((2, 10), (4, 20), (6, 30)):
        cache.assign(epoch, offset)
    assert cache.end_offset_for(-1, 99) == (-1, -1)
    assert cache.end_offset_for(6, 99) == (6, 99)       # the latest epoch ends at the LEO
    assert cache.end_offset_for(4, 99) == (4, 30)       # next epoch's start
    assert cache.end_offset_for(5, 99) == (4, 30)       # largest epoch <= 5
    assert cache.end_offset_for(1, 99) == (1, 10)       # older than the cache: first start
    assert cache.end_offset_for(7, 99) == (-1, -1)      # newer than any


def test_truncating_from_the_end_drops_epochs_starting_at_or_after_the_offset(tmp_path):
    cache = _cache(tmp_path)
    for epoch, offset in ((2, 10), (4, 20), (6, 30)):
        cache.assign(epoch, offset)
    cache.truncate_from_end(20)
    assert cache.entries() == [EpochEntry(2, 10)]


def test_truncating_from_the_start_moves_the_last_dropped_epoch_up_to_the_new_start(tmp_path):
    cache = _cache(tmp_path)
    for epoch, offset in ((2, 10), (4, 20), (6, 30)):
        cache.assign(epoch, offset)
    cache.truncate_from_start(25)
    assert cache.entries() == [EpochEntry(4, 25), EpochEntry(6, 30)]
    cache.truncate_from_start(30)  # an entry at exactly the offset is kept
    assert cache.entries() == [EpochEntry(6, 30)]


def test_truncations_write_the_file_only_on_the_scheduler_and_fsynced_there(tmp_path):
    cache = _cache(tmp_path)
    cache.assign(0, 0)
    cache.assign(1, 10)
    cache.scheduler.run_pending()
    cache.truncate_from_end(10)
    assert _file(tmp_path) == "0\n2\n0 0\n1 10\n"  # not yet: the caller may hold the log's lock
    assert cache.scheduler.run_pending() == 1
    assert _file(tmp_path) == "0\n1\n0 0\n"


def test_a_closed_cache_never_writes_into_a_directory_recreated_under_its_name(tmp_path):
    cache = _cache(tmp_path)
    cache.assign(4, 0)
    cache.truncate_from_start(3)  # queues a flush
    cache.close()
    os.rename(tmp_path / "t-0", tmp_path / "t-0.abc-delete")
    os.makedirs(tmp_path / "t-0")  # a new topic of the same name
    cache.scheduler.run_pending()
    assert not (tmp_path / "t-0" / "leader-epoch-checkpoint").exists()


def _epochs_in(log) -> list[int]:
    return [b.partition_leader_epoch for b in iter_batches(log.read(0, 1 << 20).records.read())]


def test_a_new_log_led_at_epoch_0_stamps_its_batches_and_keeps_the_epoch_across_a_clean_restart(tmp_path):
    log = open_log(tmp_path)
    log.maybe_assign_epoch_start_offset(0, log.log_end_offset)
    for _ in range(10):
        log.append_as_leader(batch(n=3), leader_epoch=0)
    assert set(_epochs_in(log)) == {0}
    log = reopen(log, clean=True)
    assert log.leader_epoch_cache.entries() == [EpochEntry(0, 0)]
    assert log.end_offset_for_epoch(0) == (0, 30)
    assert log.end_offset_for_epoch(1) is None


def test_after_a_crash_before_the_file_was_written_the_epochs_come_back_from_the_batches(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(n=3), leader_epoch=0)
    log.append_as_leader(batch(n=3), leader_epoch=2)
    os.remove(os.path.join(log.dir, "leader-epoch-checkpoint"))  # never flushed
    log = reopen(log, clean=False)
    assert log.leader_epoch_cache.entries() == [EpochEntry(0, 0), EpochEntry(2, 3)]


def test_an_append_with_a_newer_epoch_starts_it_at_the_batchs_base_offset(tmp_path):
    log = open_log(tmp_path)
    log.maybe_assign_epoch_start_offset(0, 0)
    log.append_as_leader(batch(n=3), leader_epoch=0)
    log.append_as_leader(batch(n=3), leader_epoch=5)
    assert log.leader_epoch_cache.entries() == [EpochEntry(0, 0), EpochEntry(5, 3)]
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(5) == (5, 6)


def test_truncating_the_log_truncates_the_epoch_cache(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(n=3), leader_epoch=0)
    log.append_as_leader(batch(n=3), leader_epoch=1)
    log.append_as_leader(batch(n=3), leader_epoch=2)
    assert log.truncate_to(6)
    assert log.leader_epoch_cache.entries() == [EpochEntry(0, 0), EpochEntry(1, 3)]
    assert log.end_offset_for_epoch(1) == (1, 6)


def test_moving_the_log_start_offset_moves_the_first_epoch_entry(tmp_path):
    log = open_log(tmp_path)
    log.maybe_assign_epoch_start_offset(0, 0)
    for _ in range(4):
        log.append_as_leader(batch(n=3), leader_epoch=0)
    log.maybe_increment_log_start_offset(7)
    assert log.leader_epoch_cache.entries() == [EpochEntry(0, 7)]
    log = reopen(log, clean=True)
    assert log.leader_epoch_cache.entries() == [EpochEntry(0, 7)]
