"""The log cleaner walks the logs through a snapshot (a copy taken under their owner's lock,
``LogManager.snapshot``), never by iterating the live mapping another thread may change."""

from __future__ import annotations

from dataclasses import replace

from log.clock import ManualClock
from log.config import CleanerConfig
from log.log_cleaner import LogCleaner
from log.log_manager import LogManager
from log.scheduler import Scheduler

from .helpers import SMALL, keyed, open_log

COMPACT = replace(SMALL, cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0)


class NoLiveIteration(dict):
    """A logs mapping that fails the test if anything walks it directly."""

    def __iter__(self):
        raise AssertionError("the live logs mapping was iterated")

    def items(self):
        raise AssertionError("the live logs mapping was iterated")

    def keys(self):
        raise AssertionError("the live logs mapping was iterated")

    def values(self):
        raise AssertionError("the live logs mapping was iterated")


def _dirty(log) -> None:
    for i in range(120):
        log.append_as_leader(keyed([(f"k{i % 5}", f"v{i}")], ts=log.clock.milliseconds()))
    log.roll()


def test_the_cleaner_chooses_among_the_logs_of_its_snapshot_without_iterating_the_live_mapping(tmp_path):
    clock = ManualClock()
    a = open_log(tmp_path, COMPACT, clock, name="a-0")
    b = open_log(tmp_path, COMPACT, clock, name="b-0")
    for log in (a, b):
        _dirty(log)
    live = NoLiveIteration({a.topic_partition: a, b.topic_partition: b})
    cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [str(tmp_path)], live, clock,
                         snapshot=lambda: [(b.topic_partition, b)])
    result = cleaner.clean_once()
    assert result is not None and result.committed and result.topic_partition == b.topic_partition
    assert cleaner.clean_once() is None  # a is in the mapping but not in the snapshot
    cleaner.update_checkpoints(str(tmp_path))  # drops checkpoints of logs gone from the snapshot
    cleaner.manager.maintain_uncleanable_partitions()


class CountingLogManager(LogManager):
    snapshots = 0

    def snapshot(self):
        CountingLogManager.snapshots += 1
        return super().snapshot()


def test_the_log_managers_cleaner_walks_the_logs_through_log_manager_snapshot(tmp_path):
    clock = ManualClock()
    lm = CountingLogManager([str(tmp_path / "d1")], SMALL, clock, Scheduler(clock),
                            topic_configs=lambda t: COMPACT, cleaner_config=CleanerConfig(dedupe_buffer_size=1 << 20))
    lm.startup()
    _dirty(lm.get_or_create_log(("c", 0)))
    before = CountingLogManager.snapshots
    result = lm.cleaner.clean_once()
    assert result is not None and result.committed
    assert CountingLogManager.snapshots > before
    lm.shutdown()
