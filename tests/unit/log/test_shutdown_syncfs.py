"""A shutdown closing many logs writes their state files (producer snapshot, leader epoch
file) without fsync and syncs each file system once, before the checkpoints and the
clean-shutdown marker that vouch for them (LogManager.close_syncs_each_file,
finish_shutdown(syncfs_first=True)).  Below the threshold each file is fsynced as before.
The threshold is lowered here so that a few logs stand for thousands."""

from __future__ import annotations

import errno
import os

import pytest

import log.durable_batch as durable_batch
import log.durable_files as durable_files
from log.checkpoint import RECOVERY_POINT_CHECKPOINT_FILE, CleanShutdownFile, OffsetCheckpointFile
from log.clock import ManualClock
from log.leader_epoch_cache import LeaderEpochCheckpointFile
from log.log_manager import LogManager
from log.scheduler import Scheduler

from .helpers import SMALL, batch

LOGS = 3


def _manager(tmp_path) -> LogManager:
    clock = ManualClock()
    lm = LogManager([str(tmp_path / "d1")], SMALL, clock, Scheduler(clock))
    lm.startup()
    return lm


def _filled(tmp_path) -> tuple[LogManager, list[int]]:
    lm = _manager(tmp_path)
    ends = []
    for i in range(LOGS):
        lg = lm.get_or_create_log(("t", i))
        for n in range(i + 1):   # log i: i + 1 batches of 2 records from producer 7 + i
            lg.append_as_leader(batch(n=2, producer_id=7 + i, producer_epoch=0, base_sequence=2 * n), leader_epoch=5)
        ends.append(lg.log_end_offset)
    return lm, ends


@pytest.fixture
def watched(monkeypatch, tmp_path):
    """(events, marker path): every fsync (its path) and syncfs, in order, with whether the
    clean-shutdown marker existed at that moment; the syncfs threshold at 2 x LOGS files."""
    monkeypatch.setattr(durable_batch, "SYNCFS_MIN_WRITES", 2 * LOGS)
    marker = CleanShutdownFile(str(tmp_path / "d1"))
    events: list[tuple[str, str, bool]] = []
    real_fsync, real_syncfs = os.fsync, durable_files.syncfs

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), marker.exists()))
        real_fsync(fd)

    def syncfs(path: str) -> None:
        events.append(("syncfs", path, marker.exists()))
        real_syncfs(path)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(durable_files, "syncfs", syncfs)
    return events, marker


def _state_file(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith((".snapshot", ".snapshot.tmp")) or name.startswith("leader-epoch-checkpoint")


def test_a_shutdown_of_many_logs_writes_their_state_files_unsynced_then_one_syncfs_before_the_marker(tmp_path, watched):
    events, marker = watched
    lm, ends = _filled(tmp_path)
    lm.shutdown()
    assert [e for e in events if e[0] == "fsync" and _state_file(e[1])] == []
    syncfs_calls = [e for e in events if e[0] == "syncfs"]
    assert len(syncfs_calls) == 1 and syncfs_calls[0][2] is False   # one file system, before the marker
    assert marker.exists()
    for i in range(LOGS):   # what the closes wrote is there
        d = tmp_path / "d1" / f"t-{i}"
        assert (d / f"{ends[i]:020d}.snapshot").exists()
        assert LeaderEpochCheckpointFile(str(d / "leader-epoch-checkpoint")).read() == [(5, 0)]
    again = _manager(tmp_path)
    assert again.had_clean_shutdown[str(tmp_path / "d1")]
    for i in range(LOGS):
        lg = again.get_log(("t", i))
        assert lg.loader.segments_recovered == 0 and lg.log_end_offset == ends[i]
        assert lg.producer_state_manager.producers[7 + i].last_seq == 2 * i + 1


def test_a_shutdown_of_fewer_logs_than_the_threshold_fsyncs_each_state_file_as_before(tmp_path, watched, monkeypatch):
    events, marker = watched
    monkeypatch.setattr(durable_batch, "SYNCFS_MIN_WRITES", 2 * LOGS + 1)
    lm, ends = _filled(tmp_path)
    lm.shutdown()
    assert [e for e in events if e[0] == "syncfs"] == []
    synced = sorted(os.path.relpath(e[1], tmp_path / "d1") for e in events if e[0] == "fsync" and _state_file(e[1]))
    assert synced == sorted([f"t-{i}/leader-epoch-checkpoint.tmp" for i in range(LOGS)]
                            + [f"t-{i}/{end:020d}.snapshot.tmp" for i, end in enumerate(ends)])
    assert marker.exists()


def test_a_failed_syncfs_at_shutdown_leaves_no_checkpoints_or_marker_and_the_next_start_recovers(tmp_path, watched,
                                                                                              monkeypatch):
    _, marker = watched

    def failing(path: str) -> None:
        raise OSError(errno.EIO, "Input/output error", path)
    lm, ends = _filled(tmp_path)
    monkeypatch.setattr(durable_files, "syncfs", failing)
    with pytest.raises(OSError, match="Input/output error"):
        lm.shutdown()
    lm.release_locks()
    assert not marker.exists()
    points = tmp_path / "d1" / RECOVERY_POINT_CHECKPOINT_FILE   # not rewritten: nothing vouches for the closes
    assert not points.exists() or OffsetCheckpointFile(str(points)).read() == {}
    again = _manager(tmp_path)
    assert not again.had_clean_shutdown[str(tmp_path / "d1")]
    assert [again.get_log(("t", i)).log_end_offset for i in range(LOGS)] == ends
