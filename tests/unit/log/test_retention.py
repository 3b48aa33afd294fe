"""Retention by time and size, log start offset, delayed file deletion."""

import os
from dataclasses import replace

import pytest

from log.errors import OffsetOutOfRangeError

from .helpers import SMALL, batch, open_log

DAY = 24 * 3600 * 1000


def _files(log):
    return sorted(os.listdir(log.dir))


def test_time_retention_deletes_old_segments_but_keeps_the_newest_data(tmp_path):
    cfg = replace(SMALL, retention_ms=DAY)
    log = open_log(tmp_path, cfg)
    now = log.clock.milliseconds()
    for i in range(30):
        log.append_as_leader(batch(ts=now - 3 * DAY + i))  # old data
    old_segments = log.number_of_segments()
    for i in range(5):
        log.append_as_leader(batch(ts=now + i))  # fresh data
    deleted = log.delete_old_segments()
    assert deleted >= old_segments - 1
    assert log.log_start_offset == log.log_segments()[0].base_offset > 0
    assert log.read(log.log_end_offset - 1, 100).records.read()


def test_time_retention_follows_the_injected_clock(tmp_path):
    cfg = replace(SMALL, retention_ms=DAY)
    log = open_log(tmp_path, cfg)
    now = log.clock.milliseconds()
    for i in range(30):
        log.append_as_leader(batch(ts=now + i))
    assert log.delete_old_segments() == 0
    log.clock.sleep(DAY + 1000)
    assert log.delete_old_segments() > 0


def test_when_every_segment_expires_a_new_empty_active_segment_is_rolled_first(tmp_path):
    # Kafka's deleteSegments: "we must always have at least one segment"; the segment that
    # was active is rolled, then deleted: appends continue at the old log end offset.
    cfg = replace(SMALL, retention_ms=DAY)
    log = open_log(tmp_path, cfg)
    now = log.clock.milliseconds()
    for i in range(10):
        log.append_as_leader(batch(ts=now - 2 * DAY + i))
    leo = log.log_end_offset
    log.delete_old_segments()
    assert log.number_of_segments() == 1 and log.active_segment().size() == 0
    assert log.log_start_offset == leo == log.active_segment().base_offset
    assert log.delete_old_segments() == 0  # the empty active segment is never deleted
    assert log.append_as_leader(batch()).first_offset == leo


def test_size_retention_deletes_oldest_segments_until_under_retention_bytes(tmp_path):
    cfg = replace(SMALL, retention_bytes=3 * 4096)
    log = open_log(tmp_path, cfg)
    for _ in range(100):
        log.append_as_leader(batch())
    log.delete_old_segments()
    assert log.size() <= 3 * 4096 + 4096
    assert log.size() > 3 * 4096 - 4096
    assert log.log_start_offset == log.log_segments()[0].base_offset


def test_deleted_segments_are_renamed_then_removed_after_file_delete_delay(tmp_path):
    cfg = replace(SMALL, retention_bytes=0, file_delete_delay_ms=60000)
    log = open_log(tmp_path, cfg)
    for _ in range(20):
        log.append_as_leader(batch())
    first = log.log_segments()[0]
    name = os.path.basename(first.log.path)
    slice_ = log.read(0, 100).records
    log.delete_old_segments()
    assert name + ".deleted" in _files(log) and name not in _files(log)
    assert slice_.read()  # an in-flight read still works on the renamed file
    log.clock.sleep(59999)
    log.scheduler.run_pending()
    assert name + ".deleted" in _files(log)
    log.clock.sleep(1)
    log.scheduler.run_pending()
    assert not any(f.endswith(".deleted") for f in _files(log))


def test_advancing_the_log_start_offset_hides_data_and_deletes_whole_segments_below_it(tmp_path):
    log = open_log(tmp_path)
    infos = [log.append_as_leader(batch()) for _ in range(40)]
    target = infos[25].first_offset + 1
    assert log.maybe_increment_log_start_offset(target)
    assert log.log_start_offset == target
    with pytest.raises(OffsetOutOfRangeError):
        log.read(target - 1, 100)
    log.delete_old_segments()
    assert log.log_segments()[0].base_offset <= target
    assert log.log_start_offset == target  # not moved back to the segment base
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(log.log_end_offset + 1)


def test_the_log_start_offset_survives_a_restart_through_its_checkpoint(tmp_path):
    from .helpers import reopen

    log = open_log(tmp_path)
    for _ in range(40):
        log.append_as_leader(batch())
    log.maybe_increment_log_start_offset(50)
    again = reopen(log, clean=True)
    assert again.log_start_offset == 50
