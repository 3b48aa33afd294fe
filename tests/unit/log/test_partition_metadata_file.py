"""partition.metadata (Kafka's PartitionMetadataFile): the exact bytes, Kafka's read rules,
and a log's topic id kept across reopening."""

from __future__ import annotations

import os
import uuid

import pytest

from log.clock import ManualClock
from log.partition_metadata_file import (
    InconsistentTopicIdError,
    PartitionMetadataError,
    PartitionMetadataFile,
    decode_partition_metadata,
    encode_partition_metadata,
)
from log.scheduler import Scheduler
from tests.unit.log.helpers import batch, open_log, reopen
from wire.uuids import METADATA_TOPIC_ID, ZERO_UUID, random_uuid, uuid_from_string, uuid_to_string

TID = uuid_from_string("XAV9JMHxQLW36n-AOjOZPQ")


def test_the_file_is_kafkas_two_lines_with_the_id_in_url_safe_base64_and_no_trailing_newline():
    assert encode_partition_metadata(TID) == b"version: 0\ntopic_id: XAV9JMHxQLW36n-AOjOZPQ"


def test_reading_accepts_any_whitespace_after_the_colon_and_a_trailing_newline():
    assert decode_partition_metadata("version:   0\ntopic_id:\tXAV9JMHxQLW36n-AOjOZPQ\n") == TID


@pytest.mark.parametrize("text, message", [
    ("", "Malformed line"),
    ("version: x\ntopic_id: XAV9JMHxQLW36n-AOjOZPQ", "Malformed line"),
    ("version: -1\ntopic_id: XAV9JMHxQLW36n-AOjOZPQ", "Unrecognized version"),
    ("version: 0\n", "Malformed line"),
    ("version: 0\ntopicid: XAV9JMHxQLW36n-AOjOZPQ", "Malformed line"),
    ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "Invalid topic ID"),
    ("version: 0\ntopic_id: short", "Malformed line"),
])
def test_a_malformed_file_is_an_error_naming_what_is_wrong(text, message):
    with pytest.raises(PartitionMetadataError, match=message):
        decode_partition_metadata(text)


def test_random_ids_are_never_reserved_and_never_print_with_a_leading_dash():
    for _ in range(2000):
        u = random_uuid()
        assert u not in (ZERO_UUID, METADATA_TOPIC_ID)
        assert not uuid_to_string(u).startswith("-")
        assert uuid_from_string(uuid_to_string(u)) == u


def test_recording_a_second_different_id_before_the_flush_is_refused(tmp_path):
    f = PartitionMetadataFile(str(tmp_path))
    f.record(TID)
    with pytest.raises(InconsistentTopicIdError):
        f.record(uuid.uuid4())
    f.maybe_flush()
    assert not f.dirty and f.read() == TID
    assert sorted(os.listdir(tmp_path)) == ["partition.metadata"]


def test_a_log_writes_its_topic_id_on_the_scheduler_and_reads_it_back_when_reopened(tmp_path):
    lg = open_log(tmp_path)
    assert lg.topic_id is None
    lg.assign_topic_id(TID)
    path = os.path.join(lg.dir, "partition.metadata")
    assert not os.path.exists(path)      # written by the flush-metadata-file task
    lg.scheduler.run_pending()
    assert open(path, "rb").read() == b"version: 0\ntopic_id: XAV9JMHxQLW36n-AOjOZPQ"
    again = reopen(lg, clean=True)
    assert again.topic_id == TID


def test_the_first_append_writes_a_pending_topic_id_before_the_data_and_the_task_fsyncs_it(tmp_path, monkeypatch):
    import log.partition_metadata_file as pmf

    lg = open_log(tmp_path)
    lg.assign_topic_id(TID)
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(pmf.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    lg.append_as_leader(batch())
    assert PartitionMetadataFile(lg.dir).read() == TID
    assert synced == []          # the append path (maybe the event loop) never waits on an fsync
    lg.scheduler.run_pending()   # flush-state-files
    assert len(synced) == 2      # the file, then its directory (the rename), as Kafka's atomic move
    lg.scheduler.run_pending()
    assert len(synced) == 2      # nothing left to sync


def test_logs_given_ids_together_share_one_flush_task_that_fsyncs_each_file_and_its_directory(tmp_path, monkeypatch):
    import log.partition_metadata_file as pmf

    scheduler = Scheduler(ManualClock())
    logs = [open_log(tmp_path, scheduler=scheduler, name=f"t-{i}") for i in range(50)]
    for lg in logs:
        lg.assign_topic_id(TID)
    assert scheduler.pending_names() == ["flush-state-files"]
    synced: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(pmf.os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                     real_fsync(fd)))
    scheduler.run_pending()
    assert all(PartitionMetadataFile(lg.dir).read() == TID for lg in logs)
    expected = [p for lg in logs for p in (os.path.join(lg.dir, "partition.metadata.tmp"), lg.dir)]
    assert synced == expected
    assert scheduler.pending_names() == []
    late = open_log(tmp_path, scheduler=scheduler, name="t-50")
    late.assign_topic_id(TID)    # after the task ran: a task of its own
    assert scheduler.pending_names() == ["flush-state-files"]


def test_a_log_refuses_a_topic_id_other_than_the_one_it_holds(tmp_path):
    lg = open_log(tmp_path)
    lg.assign_topic_id(TID)
    lg.assign_topic_id(TID)              # the same id again: nothing to do
    with pytest.raises(InconsistentTopicIdError, match="already contained topic ID XAV9JMHxQLW36n-AOjOZPQ"):
        lg.assign_topic_id(uuid.uuid4())


def test_deleting_a_log_removes_its_directory_with_the_file(tmp_path):
    lg = open_log(tmp_path)
    lg.assign_topic_id(TID)
    lg.delete()
    lg.scheduler.run_pending()           # the pending flush finds nothing to write
    assert not os.path.exists(lg.dir)
