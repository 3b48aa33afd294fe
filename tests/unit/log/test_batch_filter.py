"""filter_batch: Kafka's MemoryRecords.filterTo for one magic-2 batch."""

import pytest

from log.batch_filter import BatchRetention, filter_batch
from wire.batch_header import parse_header
from wire.compression import Compression
from wire.record_batch import RecordBatch, TimestampType, build_batch

T0 = 1_700_000_000_000
HORIZON = T0 + 86_400_000


def _batch(recs, **kw) -> bytes:
    return build_batch([(k, v, [("h", b"x")], ts) for k, v, ts in recs], base_offset=100,
                       producer_id=7, producer_epoch=3, base_sequence=40, partition_leader_epoch=5, **kw)


def _filter(buf: bytes, keep, retention=BatchRetention.DELETE_EMPTY):
    return filter_batch(buf, 0, parse_header(buf), retention, lambda o, k, v: keep(o, k, v), HORIZON)


RECS = [(b"a", b"1", T0), (b"b", b"2", T0 + 5), (b"c", b"3", T0 + 9)]


def test_a_batch_whose_records_are_all_kept_is_copied_byte_for_byte():
    buf = _batch(RECS)
    out = _filter(buf, lambda o, k, v: True)
    assert out.data == buf and out.records_retained == 3 and out.last_offset == 102


def test_a_batch_losing_records_is_rebuilt_with_the_original_offsets_producer_fields_and_timestamps():
    buf = _batch(RECS)
    out = _filter(buf, lambda o, k, v: o != 100)
    b = RecordBatch(out.data)
    b.validate()
    assert (b.base_offset, b.last_offset_delta, b.record_count) == (100, 2, 2)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.partition_leader_epoch) == (7, 3, 40, 5)
    assert not b.has_delete_horizon and b.base_timestamp == T0 + 5 and b.max_timestamp == T0 + 9
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in b] == [
        (101, b"b", b"2", T0 + 5, [("h", b"x")]), (102, b"c", b"3", T0 + 9, [("h", b"x")])]
    assert out.max_timestamp == T0 + 9


def test_a_kept_tombstone_stamps_the_delete_horizon_into_the_base_timestamp_and_attribute_bit_6():
    buf = _batch([(b"a", None, T0), (b"b", b"2", T0 + 5)])
    out = _filter(buf, lambda o, k, v: True)
    b = RecordBatch(out.data)
    b.validate()
    assert b.attributes & 0x40 and b.delete_horizon_ms == HORIZON == b.base_timestamp
    assert [(r.key, r.value, r.timestamp) for r in b] == [(b"a", None, T0), (b"b", b"2", T0 + 5)]
    assert b.max_timestamp == T0 + 5


def test_a_batch_that_already_has_a_horizon_keeps_it_when_rebuilt():
    first = _filter(_batch([(b"a", None, T0), (b"b", b"2", T0 + 5), (b"c", b"3", T0 + 6)]), lambda o, k, v: True).data
    again = filter_batch(first, 0, parse_header(first), BatchRetention.DELETE_EMPTY, lambda o, k, v: o != 102, HORIZON + 999)
    b = RecordBatch(again.data)
    assert b.delete_horizon_ms == HORIZON and [r.offset for r in b] == [100, 101]


def test_nothing_kept_drops_the_batch_unless_it_must_be_retained_empty():
    buf = _batch(RECS)
    assert _filter(buf, lambda o, k, v: False).data is None
    assert _filter(buf, lambda o, k, v: True, BatchRetention.DELETE).data is None
    empty = RecordBatch(_filter(_batch(RECS, compression=Compression.GZIP), lambda o, k, v: False,
                                BatchRetention.RETAIN_EMPTY).data)
    empty.validate()
    assert (empty.record_count, empty.compression, empty.base_timestamp, empty.max_timestamp) == (0, 0, -1, T0 + 9)
    assert (empty.base_offset, empty.last_offset, empty.producer_id, empty.base_sequence, empty.last_sequence) == (100, 102, 7, 40, 42)
    assert list(empty) == []


def test_log_append_time_batches_report_their_max_timestamp_for_every_record_after_a_rebuild():
    buf = _batch(RECS, timestamp_type=TimestampType.LOG_APPEND_TIME)
    out = _filter(buf, lambda o, k, v: o == 101)
    b = RecordBatch(out.data)
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME and b.max_timestamp == T0 + 9
    assert [(r.offset, r.timestamp) for r in b] == [(101, T0 + 9)]


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_compressed_batches_are_rebuilt_with_the_same_codec(codec):
    out = _filter(_batch(RECS, compression=codec), lambda o, k, v: k != b"b")
    b = RecordBatch(out.data)
    b.validate()
    assert b.compression == codec and [(r.key, r.value) for r in b] == [(b"a", b"1"), (b"c", b"3")]


def test_control_and_transactional_bits_survive_a_rebuild():
    buf = build_batch([(b"a", b"1", None, T0), (b"b", b"2", None, T0)], producer_id=1, producer_epoch=0,
                      base_sequence=0, is_transactional=True)
    b = RecordBatch(_filter(buf, lambda o, k, v: k == b"b").data)
    assert b.is_transactional and not b.is_control and b.record_count == 1
