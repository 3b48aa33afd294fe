"""FileRecords.pin: a slice on a descriptor of its own, readable after the file is gone."""

from __future__ import annotations

import os

from log.file_records import FileRecords, PinnedSlice


def _records(tmp_path, data: bytes) -> FileRecords:
    fr = FileRecords.open(str(tmp_path / "00000000000000000000.log"))
    fr.append(data)
    return fr


def test_a_pinned_slice_reads_its_bytes_after_the_file_is_closed_and_deleted(tmp_path):
    fr = _records(tmp_path, b"0123456789" * 1000)
    pinned = fr.slice(100, 5000).pin()
    assert isinstance(pinned, PinnedSlice) and len(pinned) == 5000 and pinned.fd != fr.fd
    assert fr.delete_if_exists() and not os.path.exists(fr.path)
    assert bytes(pinned) == (b"0123456789" * 1000)[100:5100]
    pinned.close()
    assert pinned.fd == -1


def test_pinning_a_closed_file_gives_none_not_a_descriptor_that_may_be_another_file(tmp_path):
    fr = _records(tmp_path, b"x" * 100)
    fr.close()
    assert fr.slice(0, 100).pin() is None
    assert fr.slice(0, 0).pin() is None


def test_open_slices_are_counted_until_closed_or_dropped(tmp_path):
    fr = _records(tmp_path, b"x" * 100)
    before = PinnedSlice.open_count
    a, b = fr.pin(0, 10), fr.pin(10, 10)
    assert PinnedSlice.open_count == before + 2
    a.close()
    a.close()   # idempotent
    assert PinnedSlice.open_count == before + 1
    del b       # a response dropped unsent
    assert PinnedSlice.open_count == before
    fr.close()


def test_a_slice_reading_past_the_end_of_a_truncated_file_raises_instead_of_returning_short_bytes(tmp_path):
    fr = _records(tmp_path, b"y" * 1000)
    pinned = fr.pin(0, 1000)
    fr.truncate_to(500)
    try:
        bytes(pinned)
    except OSError as e:
        assert "ends before position 1000" in str(e)
    else:
        raise AssertionError("a short read passed")
    pinned.close()
    fr.close()
