"""The read-position hint: a read at the offset where the last read to the bound ended
starts at the remembered position, and the hint never points at bytes that changed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from log.config import LogConfig
from log.log import FetchIsolation
from log.segment import LogSegment
from tests.unit.log.helpers import batch, open_log

CONFIG = LogConfig(segment_bytes=64 * 1024, index_interval_bytes=256)
HW = FetchIsolation.HIGH_WATERMARK


def _appended(log, n: int, tag: int = 65) -> list[bytes]:
    out = []
    for _ in range(n):
        b = batch(3, ts=1_700_000_000_000 + tag * 1000, value_size=50)   # tag: tells rewritten batches apart
        log.append_as_leader(b, 0)
        out.append(bytes(b))
    log.update_high_watermark(log.log_end_offset)
    return out


def _read(log, offset: int) -> bytes:
    return log.read(offset, 1 << 20, HW, True).records.read()


@pytest.fixture
def no_index_search(monkeypatch):
    """Fails a read that searches the offset index (what the hint saves)."""
    def refuse(self, offset, starting_file_position=0):
        raise AssertionError(f"offset {offset} searched in the index")
    monkeypatch.setattr(LogSegment, "translate_offset", refuse)
    monkeypatch.setattr(LogSegment, "index_position", refuse)


def test_a_read_reaching_the_high_watermark_remembers_where_it_ended(tmp_path):
    log = open_log(tmp_path, CONFIG)
    _appended(log, 10)
    _read(log, 0)
    offset, segment, position = log.local_log._read_hint
    assert (offset, position) == (log.high_watermark, segment.size())
    assert segment is log.local_log.segments.active_segment()


def test_a_woken_read_at_the_previous_end_starts_at_the_hint_without_searching_the_index(tmp_path, monkeypatch):
    log = open_log(tmp_path, CONFIG)
    _appended(log, 10)
    _read(log, 0)
    end = log.high_watermark
    new = _appended(log, 2)
    calls = []
    original = LogSegment.translate_offset
    monkeypatch.setattr(LogSegment, "translate_offset",
                        lambda self, *a: calls.append(a) or original(self, *a))
    assert _read(log, end) == b"".join(new)
    # the bound's own position is known (HW metadata): no index search at all
    assert calls == []
    assert log.local_log._read_hint[0] == log.high_watermark


def test_truncation_clears_the_hint_so_rewritten_batches_are_read_from_their_new_positions(tmp_path):
    log = open_log(tmp_path, CONFIG)
    _appended(log, 10)
    _read(log, 0)
    end = log.high_watermark
    _appended(log, 3, tag=66)
    _read(log, end)                         # hint now at the end of the 13 batches
    log.truncate_to(end - 3)                 # drop the last batch of the first ten and all three
    assert log.local_log._read_hint is None
    rewritten = _appended(log, 4, tag=67)
    assert _read(log, end - 3) == b"".join(rewritten)


def test_after_a_roll_a_read_at_the_hint_continues_in_the_new_segment(tmp_path):
    log = open_log(tmp_path, CONFIG)
    _appended(log, 5)
    _read(log, 0)
    end = log.high_watermark
    log.roll()
    new = _appended(log, 2)
    assert _read(log, end) == b"".join(new)


def test_a_hint_into_a_segment_replaced_or_deleted_is_not_used(tmp_path, no_index_search):
    log = open_log(tmp_path, CONFIG)
    _appended(log, 5)
    # a segment object no longer in the log (what deletion or the cleaner's swap leaves)
    gone = SimpleNamespace(base_offset=0)
    log.local_log._read_hint = (3, gone, 0)
    with pytest.raises(AssertionError, match="searched in the index"):
        _read(log, 3)   # the hint was refused: the normal (index) path ran


def test_a_read_cut_by_its_size_limit_remembers_the_batch_it_left_out(tmp_path):
    log = open_log(tmp_path, CONFIG)
    written = _appended(log, 10)
    size = len(written[0])
    info = log.read(0, 3 * size + size // 2, HW, True)   # room for three and a half batches
    assert info.records.read() == b"".join(written[:3])
    offset, segment, position = log.local_log._read_hint
    assert (offset, position) == (9, 3 * size)            # 3 records a batch: the fourth starts at offset 9


def test_the_next_read_after_a_cut_starts_at_the_hint_without_searching_the_index(tmp_path, monkeypatch):
    log = open_log(tmp_path, CONFIG)
    written = _appended(log, 10)
    size = len(written[0])
    log.read(0, 3 * size + 1, HW, True)
    calls = []
    original = LogSegment.translate_offset
    monkeypatch.setattr(LogSegment, "translate_offset",
                        lambda self, *a: calls.append(a) or original(self, *a))
    assert log.read(9, 2 * size, HW, True).records.read() == b"".join(written[3:5])
    assert calls == []
    assert log.local_log._read_hint[:1] == (15,)


def test_a_read_committed_read_of_a_log_without_aborted_transactions_answers_none_without_a_search(tmp_path,
                                                                                                   monkeypatch):
    log = open_log(tmp_path, CONFIG)
    written = _appended(log, 4)
    monkeypatch.setattr(LogSegment, "fetch_upper_bound_offset",
                        lambda *a: (_ for _ in ()).throw(AssertionError("upper bound searched")))
    info = log.read(0, 1 << 20, FetchIsolation.TXN_COMMITTED, True)
    assert info.records.read() == b"".join(written)
    assert info.aborted_transactions == []


def test_a_woken_read_of_a_small_range_at_the_hint_is_one_pread_and_the_same_bytes_as_a_search(tmp_path, monkeypatch):
    import os as os_module

    from log import segment as segment_module
    from log.file_records import FileRecords

    log = open_log(tmp_path, CONFIG)
    _appended(log, 10)
    _read(log, 0)
    end = log.high_watermark
    new = _appended(log, 3)
    preads = []
    real_pread = os_module.pread
    monkeypatch.setattr(segment_module.os, "pread", lambda *a: preads.append(a) or real_pread(*a))
    monkeypatch.setattr(FileRecords, "search_for_offset_with_size",
                        lambda *a: (_ for _ in ()).throw(AssertionError("searched")))
    info = log.read(end, 1 << 20, HW, True)
    assert info.records.read() == b"".join(new)
    assert len(preads) == 1 and info.records.position + len(info.records) == log.local_log.segments.active_segment().size()
    assert info.fetch_offset_metadata.message_offset == end


def test_a_woken_read_at_the_hint_cut_by_max_bytes_returns_what_the_searching_read_returns(tmp_path):
    log = open_log(tmp_path, CONFIG)
    _appended(log, 10)
    _read(log, 0)
    end = log.high_watermark
    new = _appended(log, 3)
    one = len(new[0])
    hinted = log.read(end, one + 10, HW, True)   # room for one batch: a cut, the general path
    log.local_log._read_hint = None
    searched = log.read(end, one + 10, HW, True)
    assert hinted.records.read() == searched.records.read() == new[0]
    assert hinted.next_batch == searched.next_batch


def _answer(info):
    """What a segment read answers, comparable across the two paths."""
    if info is None:
        return None
    return (info.fetch_offset_metadata.message_offset, info.fetch_offset_metadata.segment_base_offset,
            info.fetch_offset_metadata.relative_position_in_segment, info.records.read(),
            info.first_entry_incomplete, info.next_batch)


def test_a_read_without_a_hint_whose_range_fits_answers_as_the_header_search_does(tmp_path, monkeypatch):
    """The one-pread whole-range read (from the offset index's entry) against the general
    path (header search, then the read): every start offset, size limit and bound."""
    import log.segment as segment_module
    log = open_log(tmp_path, CONFIG)
    for i in range(12):   # batches of 1 to 4 records, 50-byte values: an index entry every 256 B
        b = batch(1 + i % 4, value_size=50)
        log.append_as_leader(b, 0)
    log.update_high_watermark(log.log_end_offset)
    seg = log.local_log.segments.floor_segment(0)
    size = seg.size()
    bounds = sorted({0, 1, size // 3, size // 2, size - 1, size} | {pos for pos, _ in seg.log.batch_headers_from(0)})
    whole_range_reads = []
    original = LogSegment._read_whole_range
    monkeypatch.setattr(LogSegment, "_read_whole_range",
                        lambda self, *a: whole_range_reads.append(a) or original(self, *a))
    checked = 0
    for offset in range(log.log_end_offset + 2):
        for max_size in (0, 1, 60, 200, 700, size, 1 << 20):
            for bound in bounds:
                for min_one in (False, True):
                    fast = _answer(seg.read(offset, max_size, bound, min_one))
                    monkeypatch.setattr(segment_module, "_WHOLE_RANGE_READ_MAX", 0)
                    slow = _answer(seg.read(offset, max_size, bound, min_one))
                    monkeypatch.setattr(segment_module, "_WHOLE_RANGE_READ_MAX", 16 * 1024)
                    assert fast == slow, (offset, max_size, bound, min_one)
                    checked += 1
    assert checked > 1000 and len(whole_range_reads) > 100   # the shortcut was taken, often


def test_a_read_from_a_segments_base_offset_starts_at_the_file_start_without_searching_the_index(tmp_path, monkeypatch):
    """An offset-index entry names a batch after the segment's first, so its offset is above the
    base: a read at (or below) the base offset starts at position 0 without the index, and
    answers what a read through the index answers, in the first segment and in a later one."""
    log = open_log(tmp_path, LogConfig(segment_bytes=2048, index_interval_bytes=100))
    written = _appended(log, 30)
    segments = list(log.local_log.segments)
    assert len(segments) >= 3 and all(s.offset_index.entries for s in segments[:-1])
    expected = {}
    for seg in segments:
        for max_size in (1, 300, 1 << 20):
            through_index = seg.index_position(seg.base_offset)
            expected[seg.base_offset, max_size] = _answer(seg.read(seg.base_offset, max_size, None, True, through_index))
    monkeypatch.setattr(LogSegment, "index_position",
                        lambda self, offset: (_ for _ in ()).throw(AssertionError(f"index searched for {offset}")))
    for seg in segments:
        for max_size in (1, 300, 1 << 20):
            assert _answer(seg.read(seg.base_offset, max_size, None, True)) == expected[seg.base_offset, max_size]
    # the log's read of everything from offset 0 crosses every segment from its base offset
    assert log.read(0, 1 << 20, HW, True).records.read() == b"".join(written)[:segments[0].size()]
