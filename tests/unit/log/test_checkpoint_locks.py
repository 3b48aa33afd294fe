"""One lock per checkpoint file: every writer of a path, whichever object it uses, waits for
the holder of that path's lock (two threads never share the ``.tmp`` file)."""

from __future__ import annotations

import threading

from log.checkpoint import OffsetCheckpointFile, checkpoint_lock
from log.clock import ManualClock
from log.config import LogConfig
from log.log_manager import LogManager
from log.scheduler import Scheduler

DEADLINE_S = 60.0


def test_two_checkpoint_objects_for_one_path_share_one_lock_and_other_paths_do_not(tmp_path):
    a = OffsetCheckpointFile(str(tmp_path / "recovery-point-offset-checkpoint"))
    b = OffsetCheckpointFile(str(tmp_path / "." / "recovery-point-offset-checkpoint"))
    other = OffsetCheckpointFile(str(tmp_path / "log-start-offset-checkpoint"))
    assert a.lock is b.lock is checkpoint_lock(str(tmp_path / "recovery-point-offset-checkpoint"))
    assert other.lock is not a.lock


def test_a_write_waits_while_another_thread_holds_the_files_lock(tmp_path):
    path = str(tmp_path / "cleaner-offset-checkpoint")
    written = threading.Event()

    def write() -> None:
        OffsetCheckpointFile(path).write({("t", 0): 5})
        written.set()

    with checkpoint_lock(path):
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        # however slow the machine, the writer cannot get past the lock held here
        assert not written.wait(0.3)
    assert written.wait(DEADLINE_S)
    assert OffsetCheckpointFile(path).read() == {("t", 0): 5}


def test_a_periodic_checkpoint_racing_a_deletion_never_leaves_the_deleted_partition_listed(tmp_path):
    clock = ManualClock()
    lm = LogManager([str(tmp_path)], LogConfig(segment_bytes=4096), clock, Scheduler(clock))
    lm.startup()
    for i in range(20):
        lm.get_or_create_log(("t", i))
    stop = threading.Event()

    def checkpoint_forever() -> None:  # the background thread's periodic task, back to back
        while not stop.is_set():
            lm.checkpoint_log_recovery_offsets()

    bg = threading.Thread(target=checkpoint_forever, daemon=True)
    bg.start()
    try:
        for i in range(20):
            lm.async_delete(("t", i))
    finally:
        stop.set()
        bg.join(DEADLINE_S)
    cp = OffsetCheckpointFile(str(tmp_path / "recovery-point-offset-checkpoint")).read()
    assert cp == {}
    lm.shutdown()
