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
