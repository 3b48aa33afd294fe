"""Crash recovery: cut files at every byte, lose or corrupt indexes, clean vs unclean reopen."""

import logging
import os

from log.segment import LogSegment
from wire.record_batch import iter_batches

from .helpers import batch, open_log, reopen


def _stored(log):
    out = []
    for seg in log.log_segments():
        data = open(seg.log.path, "rb").read()
        for b in iter_batches(data):
            assert b.is_crc_valid()
            out.append((b.base_offset, b.last_offset))
    return out


def test_truncating_the_log_anywhere_inside_its_last_batch_recovers_the_batches_before_it(tmp_path):
    log = open_log(tmp_path)
    for i in range(4):
        log.append_as_leader(batch(n=2 + i))
    before = _stored(log)
    seg = log.active_segment()
    path, size = seg.log.path, seg.size()
    last_size = (before[-1][1] - before[-1][0] + 1)
    last_start = size - next(b.size_in_bytes for b in iter_batches(open(path, "rb").read()) if b.base_offset == before[-1][0])
    assert last_size == 5
    log.close()
    original = open(path, "rb").read()
    for cut in range(last_start, size):
        with open(path, "wb") as f:
            f.write(original[:cut])
        again = open_log(tmp_path, had_clean_shutdown=False)
        assert _stored(again) == before[:-1], cut
        assert again.log_end_offset == before[-2][1] + 1
        info = again.append_as_leader(batch(n=1))
        assert info.first_offset == before[-2][1] + 1
        again.close()


def test_a_corrupted_byte_in_a_batch_truncates_the_log_there_after_an_unclean_shutdown(tmp_path):
    log = open_log(tmp_path)
    infos = [log.append_as_leader(batch()) for _ in range(5)]
    seg = log.active_segment()
    pos = seg.translate_offset(infos[2].first_offset).position
    log.close_handlers()
    with open(seg.log.path, "r+b") as f:
        f.seek(pos + 70)
        b = f.read(1)
        f.seek(pos + 70)
        f.write(bytes([b[0] ^ 0xFF]))
    again = open_log(tmp_path)
    assert again.log_end_offset == infos[2].first_offset


def test_a_deleted_index_is_rebuilt_on_open(tmp_path):
    log = open_log(tmp_path)
    for _ in range(30):
        log.append_as_leader(batch())
    seg = log.log_segments()[0]
    entries = seg.offset_index.all_entries()
    tentries = seg.time_index.all_entries()
    idx_path, tidx_path = seg.offset_index.path, seg.time_index.path
    log.close()
    os.remove(idx_path)
    os.remove(tidx_path)
    again = open_log(tmp_path, had_clean_shutdown=True, recovery_point=log.log_end_offset)
    seg2 = again.log_segments()[0]
    assert seg2.offset_index.all_entries() == entries
    assert seg2.time_index.all_entries() == tentries
    assert again.loader.segments_recovered == 1


def test_a_corrupt_index_is_rebuilt_on_open(tmp_path):
    log = open_log(tmp_path)
    for _ in range(30):
        log.append_as_leader(batch())
    seg = log.log_segments()[0]
    entries = seg.offset_index.all_entries()
    path = seg.offset_index.path
    log.close()
    with open(path, "r+b") as f:
        f.write(b"\xff" * 8)  # first entry: relative offset -1
        f.seek(0, 2)
        f.write(b"\x00\x00\x00")  # not a multiple of 8 any more
    again = open_log(tmp_path, had_clean_shutdown=True, recovery_point=log.log_end_offset)
    assert again.log_segments()[0].offset_index.all_entries() == entries
    assert again.read(5, 100).records.read()


def test_a_clean_shutdown_reopen_does_not_read_or_recover_data(tmp_path, monkeypatch):
    log = open_log(tmp_path)
    infos = [log.append_as_leader(batch()) for _ in range(40)]
    first = log.log_segments()[0]
    pos = first.translate_offset(infos[1].first_offset).position
    log.close()
    with open(first.log.path, "r+b") as f:  # corrupt a CRC-covered byte in an old segment
        f.seek(pos + 70)
        f.write(b"\x00\x01")
    monkeypatch.setattr(LogSegment, "recover", lambda self, psm=None: (_ for _ in ()).throw(AssertionError("recovered")))
    again = open_log(tmp_path, had_clean_shutdown=True, recovery_point=infos[-1].last_offset + 1)
    assert again.log_end_offset == infos[-1].last_offset + 1
    assert again.loader.segments_recovered == 0


def test_an_unclean_shutdown_recovers_only_from_the_recovery_point(tmp_path):
    log = open_log(tmp_path)
    for _ in range(40):
        log.append_as_leader(batch())
    n = log.number_of_segments()
    log.flush()
    rp = log.active_segment().base_offset
    log.close_handlers()
    again = open_log(tmp_path, had_clean_shutdown=False, recovery_point=rp)
    assert again.loader.segments_recovered == 1
    assert again.number_of_segments() == n


def _loader_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "log.loader" and r.levelno >= logging.WARNING]


def test_after_a_kill_the_active_segments_preallocated_indexes_are_rebuilt_once_and_without_a_warning(tmp_path, caplog):
    # Kafka does not check the indexes of segments recovery rebuilds anyway (LogSegment.
    # sanityCheck) and logs their recovery at INFO: one WARNING per partition was kbroker's
    log = open_log(tmp_path)
    for _ in range(8):   # a few index entries (index_interval_bytes=256), one segment
        log.append_as_leader(batch())
    assert log.number_of_segments() == 1 and len(log.active_segment().offset_index.all_entries()) > 1
    entries = log.active_segment().offset_index.all_entries()
    end = log.log_end_offset
    log.close_handlers()   # kill -9: the index files keep their preallocated length
    with caplog.at_level(logging.DEBUG, logger="log.loader"):
        again = open_log(tmp_path, had_clean_shutdown=False, recovery_point=0)
    assert _loader_warnings(caplog) == []
    assert again.loader.segments_recovered == 1   # by the recovery, not also by the check
    assert again.log_end_offset == end
    assert again.active_segment().offset_index.all_entries() == entries


def test_a_corrupt_index_below_the_recovery_point_is_still_a_warning_after_an_unclean_shutdown(tmp_path, caplog):
    log = open_log(tmp_path)
    for _ in range(40):
        log.append_as_leader(batch())
    first = log.log_segments()[0]
    assert log.number_of_segments() > 1
    entries = first.offset_index.all_entries()
    log.flush()
    rp = log.active_segment().base_offset   # every segment but the active one is flushed
    log.close()
    with open(first.offset_index.path, "ab") as f:
        f.write(b"\x00\x00\x00")   # not a multiple of 8 any more
    with caplog.at_level(logging.WARNING, logger="log.loader"):
        again = open_log(tmp_path, had_clean_shutdown=False, recovery_point=rp)
    assert any("Could not use the indexes" in w for w in _loader_warnings(caplog))
    assert again.log_segments()[0].offset_index.all_entries() == entries


def test_leftover_deleted_files_are_removed_on_open(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch())
    log.close()
    stray = os.path.join(log.dir, "00000000000000000000.log.deleted")
    open(stray, "wb").close()
    open_log(tmp_path, had_clean_shutdown=True, recovery_point=3)
    assert not os.path.exists(stray)


def test_truncate_to_removes_whole_batches_and_segments_above(tmp_path):
    log = open_log(tmp_path)
    infos = [log.append_as_leader(batch()) for _ in range(40)]
    target = infos[10].first_offset + 1  # inside a batch: the whole batch goes
    assert log.truncate_to(target)
    assert log.log_end_offset == infos[10].first_offset
    assert _stored(log)[-1] == (infos[9].first_offset, infos[9].last_offset)
    assert log.append_as_leader(batch()).first_offset == infos[10].first_offset
    again = reopen(log, clean=False)
    assert again.log_end_offset == infos[10].first_offset + 3
