"""Start-up checks of the log dirs: lost or foreign storage stops start-up with a message
that names the dir and says what to do (Kafka's wording where Kafka has one)."""

from __future__ import annotations

import os
import shutil

import pytest

from log.checkpoint import RECOVERY_POINT_CHECKPOINT_FILE, MetaProperties, OffsetCheckpointFile
from log.clock import ManualClock
from log.config import LogConfig
from log.log_dir_checks import LogDirError, check_log_dirs
from log.log_manager import LogManager
from log.scheduler import Scheduler


def test_new_empty_dirs_pass_and_record_no_cluster_id(tmp_path):
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    assert check_log_dirs(dirs, 1) is None
    assert all(os.path.isdir(d) for d in dirs)
    assert os.listdir(dirs[0]) == []  # the write probe is gone


def test_formatted_dirs_give_their_cluster_id(tmp_path):
    for name in ("a", "b"):
        os.makedirs(tmp_path / name)
        MetaProperties(1, "cluster-x").write(str(tmp_path / name))
    assert check_log_dirs([str(tmp_path / "a"), str(tmp_path / "b")], 1) == "cluster-x"


def test_another_nodes_dir_is_refused_in_kafkas_words(tmp_path):
    MetaProperties(2, "cluster-x").write(str(tmp_path))
    with pytest.raises(LogDirError) as e:
        check_log_dirs([str(tmp_path)], 1)
    assert str(e.value).startswith(
        f"Stored node id 2 doesn't match previous node id 1 in {tmp_path}/meta.properties. "
        "If you moved your data, make sure your configured node id matches.")


def test_dirs_of_two_clusters_are_refused_in_kafkas_words(tmp_path):
    for name, cluster in (("a", "cluster-x"), ("b", "cluster-y")):
        os.makedirs(tmp_path / name)
        MetaProperties(1, cluster).write(str(tmp_path / name))
    with pytest.raises(LogDirError) as e:
        check_log_dirs([str(tmp_path / "a"), str(tmp_path / "b")], 1)
    assert str(e.value) == f"Invalid cluster.id in: {tmp_path}/b/meta.properties. Expected cluster-x, but read cluster-y"


def test_a_non_empty_dir_without_meta_properties_is_refused_not_formatted(tmp_path):
    os.makedirs(tmp_path / "orders-0")
    with pytest.raises(LogDirError) as e:
        check_log_dirs([str(tmp_path)], 1)
    assert str(e.value).startswith(f"No `meta.properties` found in {tmp_path}, which is not empty")
    assert not (tmp_path / "meta.properties").exists()


def test_only_a_lock_file_or_lost_and_found_does_not_make_a_dir_in_use(tmp_path):
    (tmp_path / ".lock").touch()
    os.makedirs(tmp_path / "lost+found")
    assert check_log_dirs([str(tmp_path)], 1) is None


def test_a_log_dir_that_cannot_be_created_is_refused(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(LogDirError) as e:
        check_log_dirs([str(tmp_path / "file" / "data")], 1)
    assert str(e.value).startswith(f"Failed to create data directory {tmp_path}/file/data")


def test_a_log_dir_that_is_a_file_is_not_a_readable_log_directory(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(LogDirError) as e:
        check_log_dirs([str(tmp_path / "file")], 1)
    assert str(e.value).startswith(f"{tmp_path}/file is not a readable log directory.")


def test_a_log_dir_that_cannot_be_written_is_refused(tmp_path, monkeypatch):
    # root ignores permission bits, so the failing write is injected at os.open
    real_open = os.open

    def read_only_fs(path, flags, *args):
        if str(path).endswith(".kbroker-write-check"):
            raise OSError(30, "Read-only file system")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only_fs)
    with pytest.raises(LogDirError) as e:
        check_log_dirs([str(tmp_path)], 1)
    assert str(e.value) == (f"Log dir {tmp_path} cannot be written: Read-only file system. "
                            "Make it writable by this user, or remove it from log.dirs.")


def _manager(d) -> LogManager:
    clock = ManualClock()
    return LogManager([str(d)], LogConfig(segment_bytes=4096), clock, Scheduler(clock))


def test_a_partition_dir_the_recovery_checkpoint_lists_but_the_disk_lost_stops_loading(tmp_path):
    lm = _manager(tmp_path)
    lm.startup()
    lm.get_or_create_log(("orders", 0))
    lm.get_or_create_log(("orders", 1))
    lm.shutdown()
    shutil.rmtree(tmp_path / "orders-1")
    with pytest.raises(LogDirError) as e:
        _manager(tmp_path).startup()
    assert str(e.value).startswith(f"Partition directories missing from log dir {tmp_path}: orders-1 "
                                   f"(listed in {tmp_path}/{RECOVERY_POINT_CHECKPOINT_FILE}, so they existed).")
    assert not (tmp_path / "orders-1").exists()  # not recreated empty


def test_removing_the_lost_partition_from_the_checkpoint_accepts_the_loss(tmp_path):
    lm = _manager(tmp_path)
    lm.startup()
    lm.get_or_create_log(("orders", 0))
    lm.get_or_create_log(("orders", 1))
    lm.shutdown()
    shutil.rmtree(tmp_path / "orders-1")
    cp = OffsetCheckpointFile(str(tmp_path / RECOVERY_POINT_CHECKPOINT_FILE))
    cp.write({tp: o for tp, o in cp.read().items() if tp != ("orders", 1)})
    lm = _manager(tmp_path)
    lm.startup()
    assert sorted(lm.logs) == [("orders", 0)]
    lm.shutdown()


def test_a_partition_whose_deletion_was_under_way_is_not_missing(tmp_path):
    lm = _manager(tmp_path)
    lm.startup()
    lm.get_or_create_log(("orders", 0))
    lm.checkpoint_log_recovery_offsets()
    # a crash after the rename to -delete, before the checkpoints were rewritten
    log = lm.remove_log(("orders", 0))
    log.close()
    os.rename(log.dir, tmp_path / "orders-0.0123456789abcdef0123456789abcdef-delete")
    lm.crash()
    lm = _manager(tmp_path)
    lm.startup()
    assert lm.logs == {}
    lm.shutdown()
