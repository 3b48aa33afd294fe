"""The background pass that makes many new logs' small state files durable at once
(log/durable_batch.py): partition.metadata and leader-epoch-checkpoint."""

from __future__ import annotations

import errno
import os

import pytest

import log.durable_batch as durable_batch
import log.durable_files as durable_files
from log.clock import ManualClock
from log.durable_files import syncfs
from log.leader_epoch_cache import LeaderEpochCheckpointFile
from log.partition_metadata_file import PartitionMetadataFile
from log.scheduler import Scheduler
from tests.unit.log.helpers import open_log
from wire.uuids import uuid_from_string

TID = uuid_from_string("XAV9JMHxQLW36n-AOjOZPQ")
N = 12


@pytest.fixture
def counted(monkeypatch):
    """(fsynced paths, syncfs'd paths), with the threshold lowered to N // 2 writes."""
    monkeypatch.setattr(durable_batch, "SYNCFS_MIN_WRITES", N // 2)
    fsynced: list[str] = []
    syncfsd: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsynced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd)))
    monkeypatch.setattr(durable_files, "syncfs", lambda path: (syncfsd.append(path), syncfs(path)))
    return fsynced, syncfsd


def _new_logs(tmp_path, n=N):
    scheduler = Scheduler(ManualClock())
    logs = [open_log(tmp_path, scheduler=scheduler, name=f"t-{i}") for i in range(n)]
    for lg in logs:
        lg.assign_topic_id(TID)
        lg.maybe_assign_epoch_start_offset(3, 0)
    return scheduler, logs


def _assert_written(logs):
    for lg in logs:
        assert PartitionMetadataFile(lg.dir).read() == TID
        assert LeaderEpochCheckpointFile(os.path.join(lg.dir, "leader-epoch-checkpoint")).read() == [(3, 0)]


def test_many_new_logs_are_made_durable_by_one_syncfs_instead_of_two_fsyncs_per_file(tmp_path, counted):
    fsynced, syncfsd = counted
    scheduler, logs = _new_logs(tmp_path)
    assert scheduler.pending_names() == ["flush-state-files"]   # one task for all 2 x N files
    scheduler.run_pending()
    _assert_written(logs)
    assert fsynced == []
    assert len(syncfsd) == 1                                    # one file system
    assert scheduler.pending_names() == []
    for lg in logs:                                             # nothing left for close to fsync
        lg.partition_metadata.maybe_flush(durable=True)
    assert fsynced == []


def test_fewer_new_logs_than_the_threshold_fsync_each_file_and_its_directory(tmp_path, counted):
    fsynced, syncfsd = counted
    scheduler, logs = _new_logs(tmp_path, n=2)                  # 4 writes < N // 2
    scheduler.run_pending()
    _assert_written(logs)
    assert syncfsd == []
    assert len(fsynced) == 2 * 2 * 2                            # per file: the temp file, then the directory


def test_a_failed_syncfs_falls_back_to_fsyncing_each_file(tmp_path, counted, monkeypatch):
    fsynced, _ = counted

    def failing(path):
        raise OSError(errno.EIO, "Input/output error", path)

    monkeypatch.setattr(durable_files, "syncfs", failing)
    scheduler, logs = _new_logs(tmp_path)
    scheduler.run_pending()
    _assert_written(logs)
    assert len(fsynced) == 2 * 2 * N
    for lg in logs:
        assert not lg.partition_metadata._unsynced


def test_a_log_deleted_before_the_pass_is_skipped_and_the_others_are_synced(tmp_path, counted):
    fsynced, syncfsd = counted
    scheduler, logs = _new_logs(tmp_path)
    gone = logs.pop(0)
    gone.delete()
    scheduler.run_pending()
    assert not os.path.exists(gone.dir)
    _assert_written(logs)
    assert fsynced == [] and len(syncfsd) == 1


def test_a_file_queued_while_the_pass_runs_is_taken_by_the_next_pass(tmp_path, counted, monkeypatch):
    fsynced, syncfsd = counted
    scheduler, logs = _new_logs(tmp_path)
    late = open_log(tmp_path, scheduler=scheduler, name="late-0")
    real_flush = durable_batch._flush

    def flush_and_queue_late(w, sync):
        if not late.partition_metadata.dirty and late.topic_id is None:
            late.assign_topic_id(TID)   # while the first pass runs: after it took its list
        real_flush(w, sync)

    monkeypatch.setattr(durable_batch, "_flush", flush_and_queue_late)
    scheduler.run_pending()
    scheduler.run_pending()
    _assert_written(logs)
    assert PartitionMetadataFile(late.dir).read() == TID
    assert len(syncfsd) == 1                                    # the first pass: 2 x N files
    assert fsynced == [os.path.join(late.dir, "partition.metadata.tmp"), late.dir]   # the late one alone


def test_syncfs_syncs_an_existing_path_and_refuses_a_missing_one(tmp_path):
    syncfs(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        syncfs(str(tmp_path / "missing"))
