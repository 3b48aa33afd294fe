import os

from log.checkpoint import MetaProperties, OffsetCheckpointFile
from log.clock import ManualClock
from log.log_manager import LogManager
from log.scheduler import Scheduler

from .helpers import SMALL, batch


def _manager(tmp_path, clock=None, dirs=("d1",)):
    clock = clock or ManualClock()
    lm = LogManager([str(tmp_path / d) for d in dirs], SMALL, clock, Scheduler(clock))
    lm.startup()
    return lm


def test_partitions_live_in_topic_partition_directories_spread_over_log_dirs(tmp_path):
    lm = _manager(tmp_path, dirs=("d1", "d2"))
    a = lm.get_or_create_log(("orders", 0))
    b = lm.get_or_create_log(("orders", 1))
    assert os.path.basename(a.dir) == "orders-0" and os.path.basename(b.dir) == "orders-1"
    assert os.path.dirname(a.dir) != os.path.dirname(b.dir)


def test_clean_shutdown_writes_checkpoints_and_marker_and_reopens_without_recovery(tmp_path):
    lm = _manager(tmp_path)
    log = lm.get_or_create_log(("t", 0))
    for _ in range(30):
        log.append_as_leader(batch())
    log.maybe_increment_log_start_offset(40)
    leo = log.log_end_offset
    lm.shutdown()
    d = str(tmp_path / "d1")
    assert OffsetCheckpointFile(os.path.join(d, "recovery-point-offset-checkpoint")).read() == {("t", 0): leo}
    assert OffsetCheckpointFile(os.path.join(d, "log-start-offset-checkpoint")).read() == {("t", 0): 40}
    assert os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))
    lm2 = _manager(tmp_path)
    log2 = lm2.get_log(("t", 0))
    assert lm2.had_clean_shutdown[str(tmp_path / "d1")]
    assert log2.loader.segments_recovered == 0
    assert (log2.log_start_offset, log2.log_end_offset) == (40, leo)
    assert not os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))


def test_after_a_crash_logs_are_recovered_from_the_checkpointed_recovery_point(tmp_path):
    lm = _manager(tmp_path)
    log = lm.get_or_create_log(("t", 0))
    for _ in range(30):
        log.append_as_leader(batch())
    leo = log.log_end_offset
    lm.crash()
    lm2 = _manager(tmp_path)
    assert not lm2.had_clean_shutdown[str(tmp_path / "d1")]
    assert lm2.get_log(("t", 0)).log_end_offset == leo
    assert lm2.get_log(("t", 0)).loader.segments_recovered >= 1


def test_retention_runs_on_the_scheduler_every_check_interval(tmp_path):
    from dataclasses import replace

    clock = ManualClock()
    lm = LogManager([str(tmp_path / "d")], replace(SMALL, retention_bytes=4096), clock, Scheduler(clock))
    lm.startup()
    log = lm.get_or_create_log(("t", 0))
    for _ in range(60):
        log.append_as_leader(batch())
    n = log.number_of_segments()
    clock.sleep(300000)
    lm.scheduler.run_pending()
    assert log.number_of_segments() < n


def test_deleting_a_partition_renames_its_directory_then_removes_it(tmp_path):
    clock = ManualClock()
    lm = _manager(tmp_path, clock)
    log = lm.get_or_create_log(("t", 0))
    log.append_as_leader(batch())
    lm.async_delete(("t", 0))
    names = os.listdir(tmp_path / "d1")
    assert any(n.startswith("t-0.") and n.endswith("-delete") for n in names) and "t-0" not in names
    clock.sleep(60000)
    lm.scheduler.run_pending()
    assert not any(n.endswith("-delete") for n in os.listdir(tmp_path / "d1"))


def test_meta_properties_are_written_once_and_checked(tmp_path):
    import pytest

    lm = _manager(tmp_path)
    lm.ensure_meta_properties(1, "cluster-a")
    assert MetaProperties.read(str(tmp_path / "d1")) == MetaProperties(1, "cluster-a")
    lm.ensure_meta_properties(1, "cluster-a")
    with pytest.raises(RuntimeError):
        lm.ensure_meta_properties(2, "cluster-a")


def test_a_second_manager_cannot_lock_the_same_log_dir(tmp_path):
    import pytest

    _manager(tmp_path)
    with pytest.raises(RuntimeError):
        _manager(tmp_path)


# ---- compaction through the LogManager

def _compact_config(**kw):
    from dataclasses import replace

    return replace(SMALL, **{"cleanup_policy": ("compact",), "min_cleanable_dirty_ratio": 0.0, **kw})


def _keyed_batches(log, n, keys=5):
    from .helpers import keyed

    for i in range(n):
        log.append_as_leader(keyed([(f"k{i % keys}", f"v{i}")], ts=log.clock.milliseconds()))


def test_the_cleaner_keeps_one_checkpoint_per_log_dir_and_cleans_offsets_topic_logs(tmp_path):
    from log.config import CleanerConfig

    clock = ManualClock()
    compact = _compact_config()
    lm = LogManager([str(tmp_path / "d1"), str(tmp_path / "d2")], SMALL, clock, Scheduler(clock),
                    topic_configs=lambda t: compact if t in ("__consumer_offsets", "c") else None,
                    cleaner_config=CleanerConfig(dedupe_buffer_size=1 << 20))
    lm.startup()
    offsets = lm.get_or_create_log(("__consumer_offsets", 0))
    other = lm.get_or_create_log(("c", 0))
    plain = lm.get_or_create_log(("plain", 0))
    for log in (offsets, other, plain):
        _keyed_batches(log, 200)
        log.roll()
    cleaned = set()
    while (r := lm.cleaner.clean_once()) is not None:
        cleaned.add(r.topic_partition)
    assert cleaned == {("__consumer_offsets", 0), ("c", 0)}  # not the delete-policy log
    for log in (offsets, other):
        cp = OffsetCheckpointFile(os.path.join(os.path.dirname(log.dir), "cleaner-offset-checkpoint")).read()
        assert cp == {log.topic_partition: log.active_segment().base_offset}
    assert os.path.dirname(offsets.dir) != os.path.dirname(other.dir)
    lm.shutdown()
    lm2 = LogManager([str(tmp_path / "d1"), str(tmp_path / "d2")], SMALL, clock, Scheduler(clock),
                     topic_configs=lambda t: compact if t in ("__consumer_offsets", "c") else None)
    lm2.startup()
    assert lm2.cleaner.cleaner_checkpoints() == {("__consumer_offsets", 0): offsets.active_segment().base_offset,
                                                  ("c", 0): other.active_segment().base_offset}
    assert lm2.cleaner.clean_once() is None
    lm2.shutdown()


def test_compact_and_delete_both_compacts_and_deletes_old_segments_by_retention(tmp_path):
    import time

    from .helpers import read_records

    # file mtimes are real time; segments emptied by the cleaner are aged by theirs
    clock = ManualClock(int(time.time() * 1000))
    both = _compact_config(cleanup_policy=("compact", "delete"), retention_ms=3_600_000)
    lm = LogManager([str(tmp_path / "d1")], SMALL, clock, Scheduler(clock), topic_configs=lambda t: both)
    lm.startup()
    log = lm.get_or_create_log(("cd", 0))
    _keyed_batches(log, 200)
    log.roll()
    assert lm.cleaner.clean_once().committed
    assert len(read_records(log)) == 5
    clock.sleep(2 * 3_600_000)
    _keyed_batches(log, 3)
    assert lm.cleanup_logs() > 0  # retention removed the cleaned, now expired, segments
    assert log.log_start_offset > 0 and len(read_records(log)) == 3


def test_deleting_a_partition_cancels_its_cleaning_and_drops_it_from_the_cleaner_checkpoint(tmp_path):
    clock = ManualClock()
    compact = _compact_config()
    lm = LogManager([str(tmp_path / "d1")], SMALL, clock, Scheduler(clock), topic_configs=lambda t: compact)
    lm.startup()
    a, b = lm.get_or_create_log(("a", 0)), lm.get_or_create_log(("b", 0))
    for log in (a, b):
        _keyed_batches(log, 100)
        log.roll()
        lm.cleaner.clean_log(log)
    _keyed_batches(a, 100)
    a.roll()
    job = lm.cleaner.grab_filthiest()
    assert job.topic_partition == ("a", 0)
    lm.async_delete(("a", 0))
    job.prepare()
    assert not job.commit().committed
    path = str(tmp_path / "d1" / "cleaner-offset-checkpoint")
    assert set(OffsetCheckpointFile(path).read()) == {("b", 0)}


def test_log_cleaner_enable_false_means_no_cleaner(tmp_path):
    from log.config import CleanerConfig

    clock = ManualClock()
    lm = LogManager([str(tmp_path / "d1")], SMALL, clock, Scheduler(clock),
                    cleaner_config=CleanerConfig.from_properties({"log.cleaner.enable": "false"}))
    lm.startup()
    assert lm.cleaner is None
    lm.shutdown()
