import pytest

from log.errors import OffsetOutOfRangeError
from log.log import FetchIsolation
from wire.record_batch import iter_batches

from .helpers import SMALL, batch, open_log


def _offsets(info):
    return [(b.base_offset, b.last_offset) for b in iter_batches(info.records.read())]


def test_appends_get_consecutive_offsets_across_segment_rolls(tmp_path):
    log = open_log(tmp_path)
    ranges = [log.append_as_leader(batch(n=1 + i % 4)) for i in range(60)]
    assert log.number_of_segments() >= 3
    assert ranges[0].first_offset == 0
    for a, b in zip(ranges, ranges[1:], strict=False):
        assert b.first_offset == a.last_offset + 1
    assert log.log_end_offset == ranges[-1].last_offset + 1 == log.high_watermark


def test_reading_every_offset_returns_the_batch_that_contains_it(tmp_path):
    log = open_log(tmp_path)
    infos = [log.append_as_leader(batch(n=3)) for _ in range(40)]
    for info in infos:
        for offset in range(info.first_offset, info.last_offset + 1):
            got = _offsets(log.read(offset, 1))
            assert got == [(info.first_offset, info.last_offset)]


def test_a_read_returns_whole_batches_up_to_max_bytes(tmp_path):
    log = open_log(tmp_path)
    sizes = [log.append_as_leader(batch(n=2)).valid_bytes for _ in range(10)]
    info = log.read(0, sizes[0] * 3 + 10)
    assert len(info.records) == sizes[0] * 3
    assert len(_offsets(info)) == 3


def test_kip_74_a_batch_larger_than_max_bytes_is_returned_whole(tmp_path):
    log = open_log(tmp_path)
    big = log.append_as_leader(batch(n=5, value_size=300))
    log.append_as_leader(batch())
    info = log.read(2, 10)
    assert len(info.records) == big.valid_bytes
    assert _offsets(info) == [(0, 4)]


def test_reads_outside_the_log_are_offset_out_of_range_and_the_end_is_empty(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(n=3))
    assert len(log.read(3, 1000).records) == 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 1000)
    log.maybe_increment_log_start_offset(2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 1000)


def test_the_read_handle_is_a_file_descriptor_position_and_length(tmp_path):
    import os

    log = open_log(tmp_path)
    log.append_as_leader(batch())
    info = log.read(0, 100000)
    assert os.pread(info.records.fileno(), len(info.records), info.records.position) == info.records.read()


def test_reads_stop_at_the_high_watermark_unless_reading_to_log_end(tmp_path):
    log = open_log(tmp_path, high_watermark_follows_log_end=False)
    a = log.append_as_leader(batch())
    log.append_as_leader(batch())
    assert log.high_watermark == 0
    log.update_high_watermark(a.last_offset + 1)
    assert _offsets(log.read(0, 10**6)) == [(0, 2)]
    assert len(_offsets(log.read(0, 10**6, FetchIsolation.LOG_END))) == 2


def test_a_batch_larger_than_a_segment_is_rejected(tmp_path):
    from log.config import LogConfig
    from log.errors import RecordBatchTooLargeError

    log = open_log(tmp_path, LogConfig(segment_bytes=500, max_message_bytes=10**6))
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_leader(batch(n=3, value_size=400))


def test_segment_ms_rolls_on_the_batch_timestamp(tmp_path):
    from dataclasses import replace

    log = open_log(tmp_path, replace(SMALL, segment_ms=1000))
    log.append_as_leader(batch(ts=1_700_000_000_000))
    log.append_as_leader(batch(ts=1_700_000_000_500))
    assert log.number_of_segments() == 1
    log.append_as_leader(batch(ts=1_700_000_002_000))
    assert log.number_of_segments() == 2
