import os

import pytest

from log.errors import CorruptIndexError, IndexOffsetOverflowError
from log.index import OffsetIndex, TimeIndex
from log.types import OffsetPosition, TimestampOffset


def test_a_new_offset_index_is_preallocated_to_max_index_size_rounded_to_entries(tmp_path):
    idx = OffsetIndex(str(tmp_path / "00000000000000000010.index"), 10, 1003)
    assert os.path.getsize(idx.path) == 1000 and idx.max_entries == 125 and idx.entries == 0


def test_offset_index_lookup_returns_the_greatest_entry_not_above_the_target(tmp_path):
    idx = OffsetIndex(str(tmp_path / "a.index"), 100, 800)
    for i in range(1, 50):
        idx.append(100 + 3 * i, 10 * i)
    assert idx.lookup(99) == OffsetPosition(100, 0)
    assert idx.lookup(103) == OffsetPosition(103, 10)
    assert idx.lookup(105) == OffsetPosition(103, 10)
    assert idx.lookup(10_000) == OffsetPosition(247, 490)


def test_offset_index_rejects_non_increasing_offsets_and_overflowing_relative_offsets(tmp_path):
    idx = OffsetIndex(str(tmp_path / "a.index"), 0, 800)
    idx.append(5, 0)
    with pytest.raises(ValueError):
        idx.append(5, 10)
    with pytest.raises(IndexOffsetOverflowError):
        idx.append(1 << 31, 20)


def test_offset_index_truncate_to_removes_entries_at_and_above_the_offset(tmp_path):
    idx = OffsetIndex(str(tmp_path / "a.index"), 0, 800)
    for o in (2, 4, 6, 8):
        idx.append(o, o * 10)
    idx.truncate_to(6)
    assert idx.all_entries() == [OffsetPosition(2, 20), OffsetPosition(4, 40)]
    idx.truncate_to(5)
    assert idx.entries == 2 and idx.last_offset == 4


def test_trim_then_reopen_keeps_the_entries_and_shrinks_the_file(tmp_path):
    path = str(tmp_path / "a.index")
    idx = OffsetIndex(path, 0, 800)
    idx.append(1, 0)
    idx.append(2, 64)
    idx.close()
    assert os.path.getsize(path) == 16
    again = OffsetIndex(path, 0, 800)
    assert again.all_entries() == [OffsetPosition(1, 0), OffsetPosition(2, 64)]


def test_time_index_appends_only_larger_timestamps_and_looks_up_the_floor(tmp_path):
    idx = TimeIndex(str(tmp_path / "a.timeindex"), 0, 120)
    idx.maybe_append(100, 1)
    idx.maybe_append(100, 2)  # same timestamp: ignored
    idx.maybe_append(200, 5)
    assert idx.all_entries() == [TimestampOffset(100, 1), TimestampOffset(200, 5)]
    assert idx.lookup(50) == TimestampOffset(-1, 0)
    assert idx.lookup(150) == TimestampOffset(100, 1)
    with pytest.raises(ValueError):
        idx.maybe_append(150, 6)


def test_time_index_keeps_its_last_slot_for_the_roll_entry(tmp_path):
    idx = TimeIndex(str(tmp_path / "a.timeindex"), 0, 36)  # 3 slots
    idx.maybe_append(1, 1)
    idx.maybe_append(2, 2)
    assert idx.is_full()
    idx.maybe_append(3, 3, skip_full_check=True)
    assert idx.entries == 3


def test_an_index_whose_size_is_not_a_multiple_of_the_entry_size_fails_its_sanity_check(tmp_path):
    path = tmp_path / "a.index"
    path.write_bytes(b"\x00" * 13)
    with pytest.raises(CorruptIndexError):
        OffsetIndex(str(path), 0, 800).sanity_check()


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_new_index_holds_no_descriptor_until_it_is_searched_or_has_two_entries_and_then_one(tmp_path):
    # CPython's mmap keeps a dup of the file's descriptor while mapped: mapping at the first
    # search or the second append (Kafka's LazyIndex opens on first use) keeps a segment with
    # at most one index entry at one fd.
    before = _open_descriptors()
    offsets = OffsetIndex(str(tmp_path / "00000000000000000000.index"), 0, 800)
    times = TimeIndex(str(tmp_path / "00000000000000000000.timeindex"), 0, 1200)
    assert _open_descriptors() == before
    assert offsets.lookup(7) == OffsetPosition(0, 0) and times.lookup(123) == TimestampOffset(-1, 0)
    offsets.resize(400)    # a roll or a recovery resizes an index that was never mapped
    assert _open_descriptors() == before
    offsets.append(5, 4100)
    times.maybe_append(1_000, 5)
    assert _open_descriptors() == before
    assert offsets.lookup(7) == OffsetPosition(5, 4100) and times.lookup(1_000) == TimestampOffset(1_000, 5)
    assert _open_descriptors() == before + 2
    offsets.append(9, 8200)
    assert offsets.lookup(9) == OffsetPosition(9, 8200)
    offsets.close()
    times.close()
    assert _open_descriptors() == before
    assert os.path.getsize(offsets.path) == 16 and os.path.getsize(times.path) == 12


def test_a_reopened_index_passes_its_checks_and_answers_its_last_entry_without_holding_a_descriptor(tmp_path):
    offsets = OffsetIndex(str(tmp_path / "00000000000000000000.index"), 0, 800)
    times = TimeIndex(str(tmp_path / "00000000000000000000.timeindex"), 0, 1200)
    for i in range(1, 4):
        offsets.append(10 * i, 100 * i)
    times.maybe_append(2_000, 30)
    offsets.close()
    times.close()
    before = _open_descriptors()
    offsets = OffsetIndex(offsets.path, 0, 800)
    times = TimeIndex(times.path, 0, 1200)
    offsets.sanity_check(1_000)
    times.sanity_check()
    assert offsets.last_offset == 30 and times.last_entry() == TimestampOffset(2_000, 30)
    assert _open_descriptors() == before
    assert offsets.lookup(25) == OffsetPosition(20, 200)   # the first search maps it
    assert _open_descriptors() == before + 1
    offsets.close()
    times.close()


def test_a_reopened_time_index_whose_last_timestamp_is_below_its_first_fails_its_check(tmp_path):
    times = TimeIndex(str(tmp_path / "00000000000000000000.timeindex"), 0, 1200)
    times.maybe_append(2_000, 10)
    times.maybe_append(3_000, 20)
    times.close()
    with open(times.path, "r+b") as f:   # the first entry's timestamp overwritten past the last
        f.write((5_000).to_bytes(8, "big"))
    with pytest.raises(CorruptIndexError):
        TimeIndex(times.path, 0, 1200).sanity_check()


def _pwrite_positions(monkeypatch) -> list[int]:
    """Byte positions of the entries log/index.py writes with os.pwrite."""
    import log.index as index_module
    positions: list[int] = []
    real = os.pwrite

    def counting(fd, data, position):
        positions.append(position)
        return real(fd, data, position)
    monkeypatch.setattr(index_module.os, "pwrite", counting)
    return positions


def test_an_offset_index_writes_the_first_entry_of_each_page_with_pwrite_and_the_rest_through_its_map(
        tmp_path, monkeypatch):
    page = __import__("mmap").PAGESIZE
    positions = _pwrite_positions(monkeypatch)
    idx = OffsetIndex(str(tmp_path / "a.index"), 0, 3 * page)
    n = 3 * page // 8
    for i in range(n):
        idx.append(i, 10 * i)
    assert positions == [0, 8, page, 2 * page]   # the second entry maps the index
    assert idx.all_entries() == [OffsetPosition(i, 10 * i) for i in range(n)]
    with open(idx.path, "rb") as f:   # what the file holds, read without the map
        raw = f.read()
    assert raw[page - 8:page + 8] == (page // 8 - 1).to_bytes(4, "big") + (10 * (page // 8 - 1)).to_bytes(4, "big") + \
        (page // 8).to_bytes(4, "big") + (10 * (page // 8)).to_bytes(4, "big")


def test_a_time_index_entry_straddling_two_pages_is_written_with_pwrite_and_reads_back_whole(tmp_path, monkeypatch):
    page = __import__("mmap").PAGESIZE
    positions = _pwrite_positions(monkeypatch)
    idx = TimeIndex(str(tmp_path / "a.timeindex"), 0, 2 * page)
    n = page // 12 + 2   # past the entry that crosses the first page boundary
    for i in range(n):
        idx.maybe_append(1000 + i, i)
    straddling = page // 12   # bytes [12k, 12k + 12) cross the boundary when 12k < page < 12k + 12
    assert positions == [0, 12, straddling * 12]   # the second entry maps the index
    assert idx.entry(straddling) == TimestampOffset(1000 + straddling, straddling)
    assert idx.lookup(1000 + n - 1) == TimestampOffset(1000 + n - 1, n - 1)


def test_an_index_reset_after_truncation_writes_its_new_first_entry_with_pwrite(tmp_path, monkeypatch):
    idx = OffsetIndex(str(tmp_path / "a.index"), 0, 800)
    for o in range(10):
        idx.append(o, o * 10)
    positions = _pwrite_positions(monkeypatch)
    idx.reset()
    idx.append(3, 30)
    idx.append(4, 40)
    assert positions == [0]
    assert idx.all_entries() == [OffsetPosition(3, 30), OffsetPosition(4, 40)]
