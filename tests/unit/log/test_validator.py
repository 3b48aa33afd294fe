import struct
from dataclasses import replace

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from log import record_validation
from log.config import LogConfig
from log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordTooLargeError,
    UnsupportedForMessageFormatError,
)
from log.producer_state import AppendOrigin
from log.validator import validate_and_assign_offsets
from wire.compression import Compression, compress, decompress
from wire.error_codes import ErrorCode
from wire.record_batch import HEADER_SIZE, RecordBatch, build_control_batch

from .helpers import batch

NOW = 1_700_000_000_000
CFG = LogConfig()


def test_offsets_are_assigned_in_place_without_touching_the_crc():
    buf = batch(n=3) + batch(n=2)
    res = validate_and_assign_offsets(buf, 100, NOW, CFG, partition_leader_epoch=7)
    assert (res.first_offset, res.last_offset, res.record_count) == (100, 104, 5)
    b = RecordBatch(buf)
    assert b.base_offset == 100 and b.partition_leader_epoch == 7 and b.is_crc_valid()
    assert RecordBatch(buf, b.size_in_bytes).base_offset == 103


def test_log_append_time_rewrites_max_timestamp_and_the_crc():
    buf = batch(n=2, ts=NOW - 5000)
    res = validate_and_assign_offsets(buf, 0, NOW, replace(CFG, message_timestamp_type="LogAppendTime"))
    b = RecordBatch(buf)
    assert b.max_timestamp == NOW and b.timestamp_type == 1 and b.is_crc_valid()
    assert res.log_append_time == NOW and res.max_timestamp == NOW


def test_a_flipped_bit_is_a_corrupt_message():
    buf = batch()
    buf[70] ^= 1
    with pytest.raises(CorruptRecordError) as e:
        validate_and_assign_offsets(buf, 0, NOW, CFG)
    assert e.value.error == ErrorCode.CORRUPT_MESSAGE


def test_a_batch_above_max_message_bytes_is_message_too_large():
    with pytest.raises(RecordTooLargeError) as e:
        validate_and_assign_offsets(batch(n=3, value_size=500), 0, NOW, replace(CFG, max_message_bytes=1000))
    assert e.value.error == ErrorCode.MESSAGE_TOO_LARGE


def test_client_batches_must_start_at_offset_zero_with_consistent_counts():
    buf = batch()
    struct.pack_into(">q", buf, 0, 5)
    with pytest.raises(InvalidRecordError):
        validate_and_assign_offsets(buf, 0, NOW, CFG)
    ctrl = bytearray(build_control_batch(commit=True, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=NOW))
    with pytest.raises(InvalidRecordError):
        validate_and_assign_offsets(ctrl, 0, NOW, CFG)


def test_timestamps_too_far_in_the_future_are_invalid_timestamp():
    with pytest.raises(InvalidTimestampError):
        validate_and_assign_offsets(batch(ts=NOW + 2 * 3600_000), 0, NOW, CFG)


def test_magic_1_is_unsupported_and_compacted_topics_need_keys():
    buf = batch()
    buf[16] = 1
    with pytest.raises(UnsupportedForMessageFormatError):
        validate_and_assign_offsets(buf, 0, NOW, CFG)
    from wire.record_batch import build_batch

    keyless = bytearray(build_batch([(None, b"v", None, NOW)]))
    with pytest.raises(InvalidRecordError):
        validate_and_assign_offsets(keyless, 0, NOW, replace(CFG, cleanup_policy=("compact",)))


def test_a_partial_trailing_batch_is_dropped_but_no_batch_at_all_is_corrupt():
    whole = batch()
    res = validate_and_assign_offsets(whole + batch()[:30], 0, NOW, CFG)
    assert len(res.records) == len(whole)
    with pytest.raises(CorruptRecordError):
        validate_and_assign_offsets(batch()[:40], 0, NOW, CFG)


def test_every_keyless_record_on_a_compacted_topic_is_reported_with_its_index_in_the_batch():
    from wire.record_batch import build_batch

    buf = bytearray(build_batch([(b"k", b"v", None, NOW), (None, b"v", None, NOW), (b"k", b"v", None, NOW),
                                 (None, None, None, NOW)]))
    with pytest.raises(InvalidRecordError) as e:
        validate_and_assign_offsets(buf, 0, NOW, replace(CFG, cleanup_policy=("compact", "delete")),
                                    topic_partition=("t", 3))
    assert e.value.error == ErrorCode.INVALID_RECORD
    assert [(r.batch_index, r.message) for r in e.value.record_errors] == [
        (1, "Compacted topic cannot accept message without key in topic partition t-3"),
        (3, "Compacted topic cannot accept message without key in topic partition t-3")]
    assert str(e.value) == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first "
        "three errors at most: [RecordError(batchIndex=1, message='Compacted topic cannot accept message without "
        "key in topic partition t-3'), RecordError(batchIndex=3, message='Compacted topic cannot accept message "
        "without key in topic partition t-3')]")


def test_keyless_records_are_fine_on_a_delete_topic_and_keyed_ones_on_a_compacted_topic():
    from wire.record_batch import build_batch

    validate_and_assign_offsets(bytearray(build_batch([(None, b"v", None, NOW)])), 0, NOW, CFG)
    validate_and_assign_offsets(bytearray(build_batch([(b"k", None, None, NOW)])), 0, NOW,
                                replace(CFG, cleanup_policy=("compact",)))


# ---------------------------------------------------------------- the record walk (issue 12)

def _reseal(buf: bytearray | bytes, body: bytes, count: int | None = None) -> bytearray:
    """The batch ``buf`` with ``body`` as its records (and ``count`` as recordCount and
    lastOffsetDelta + 1), batchLength and CRC-32C recomputed: corrupt but CRC-valid."""
    out = bytearray(buf[:HEADER_SIZE]) + body
    struct.pack_into(">i", out, 8, len(out) - 12)
    if count is not None:
        struct.pack_into(">i", out, 57, count)
        struct.pack_into(">i", out, 23, count - 1)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return out


def _body(buf) -> bytes:
    return bytes(buf[HEADER_SIZE:])


def test_the_record_walk_runs_natively_when_the_extension_is_built():
    # `pip install -e .` (make test) builds log/_record_scan.c; without it produce would walk
    # records in Python, several times slower
    assert record_validation.NATIVE


def test_a_crc_valid_batch_declaring_three_records_but_holding_one_and_garbage_is_refused_untouched():
    one = batch(n=1)
    poison = _reseal(one, _body(one) + b"\xde\xad\xbe\xef" * 8, count=3)
    before = bytes(poison)
    with pytest.raises(InvalidRecordError) as e:
        validate_and_assign_offsets(poison, 42, NOW, CFG, partition_leader_epoch=3)
    assert e.value.error == ErrorCode.INVALID_RECORD and e.value.record_errors == ()
    assert bytes(poison) == before  # nothing patched before the refusal


@pytest.mark.parametrize("mangle, message", [
    (lambda body: body + b"\x00", "Incorrect declared batch size, records still remaining in file"),
    (lambda body: body[:-1], "Invalid record size: expected"),
    (lambda body: body[:1], "Invalid record size: expected"),
])
def test_trailing_bytes_and_truncated_records_are_invalid_record_with_kafkas_message(mangle, message):
    three = batch(n=3)
    with pytest.raises(InvalidRecordError) as e:
        validate_and_assign_offsets(_reseal(three, mangle(_body(three))), 0, NOW, CFG)
    assert str(e.value).startswith(message)


def test_a_count_above_or_below_the_records_present_is_refused():
    three = batch(n=3)
    with pytest.raises(InvalidRecordError, match="premature EOF"):
        validate_and_assign_offsets(_reseal(three, _body(three), count=4), 0, NOW, CFG)
    with pytest.raises(InvalidRecordError, match="records still remaining"):
        validate_and_assign_offsets(_reseal(three, _body(three), count=2), 0, NOW, CFG)


def test_a_negative_header_count_and_a_negative_header_key_size_are_refused():
    # one record: length, attributes 0, ts delta 0, offset delta 0, key null, value null, headers
    def record(fields: bytes) -> bytes:
        return bytes([len(fields) * 2]) + fields

    base = batch(n=1)
    with pytest.raises(InvalidRecordError, match="Found invalid number of record headers -1"):
        validate_and_assign_offsets(_reseal(base, record(b"\x00\x00\x00\x01\x01\x01")), 0, NOW, CFG)
    with pytest.raises(InvalidRecordError, match="Invalid negative header key size -2"):
        validate_and_assign_offsets(_reseal(base, record(b"\x00\x00\x00\x01\x01\x02\x03\x01")), 0, NOW, CFG)
    with pytest.raises(InvalidRecordError, match="Found invalid record structure"):  # 6-byte varint
        validate_and_assign_offsets(_reseal(base, record(b"\x00\x00\xff\xff\xff\xff\xff\x01")), 0, NOW, CFG)


@pytest.mark.parametrize("lie", [NOW + 10, NOW - 50_000, -1])
def test_a_header_lying_about_max_timestamp_is_rewritten_from_the_records_with_a_new_crc(lie):
    buf = batch(n=3, timestamps=[NOW - 300, NOW - 100, NOW - 200])
    struct.pack_into(">q", buf, 35, lie)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    res = validate_and_assign_offsets(buf, 10, NOW, CFG)
    b = RecordBatch(buf)
    assert b.max_timestamp == NOW - 100 and b.is_crc_valid() and b.timestamp_type == 0
    assert (res.max_timestamp, res.offset_of_max_timestamp, res.shallow_offset_of_max_timestamp) == (NOW - 100, 11, 12)
    assert [r.timestamp for r in b.records()] == [NOW - 300, NOW - 100, NOW - 200]


def test_a_truthful_header_is_left_as_it_is_and_keeps_its_crc():
    buf = batch(n=3, timestamps=[NOW - 3, NOW - 1, NOW - 2])
    crc = RecordBatch(buf).crc
    res = validate_and_assign_offsets(buf, 0, NOW, CFG)
    assert RecordBatch(buf).crc == crc and res.max_timestamp == NOW - 1 and res.offset_of_max_timestamp == 1


def test_a_record_timestamp_past_after_max_ms_is_invalid_timestamp_even_when_the_header_is_fine():
    buf = batch(n=3, timestamps=[NOW, NOW + 3 * 3600_000, NOW])
    struct.pack_into(">q", buf, 35, NOW)  # header: maxTimestamp within bounds
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    with pytest.raises(InvalidTimestampError) as e:
        validate_and_assign_offsets(buf, 0, NOW, CFG)
    assert e.value.error == ErrorCode.INVALID_TIMESTAMP
    assert str(e.value) == "One or more records have been rejected due to invalid timestamp"
    assert [(r.batch_index, r.message) for r in e.value.record_errors] == [
        (1, f"Timestamp {NOW + 3 * 3600_000} of message with offset 1 is out of range. The timestamp "
            f"should be within [{NOW - CFG.message_timestamp_before_max_ms}, {NOW + 3600_000}]")]


def test_a_record_older_than_before_max_ms_is_invalid_timestamp_and_minus_one_is_never_checked():
    cfg = replace(CFG, message_timestamp_before_max_ms=1000)
    with pytest.raises(InvalidTimestampError) as e:
        validate_and_assign_offsets(batch(n=2, timestamps=[NOW, NOW - 5000]), 0, NOW, cfg)
    assert [r.batch_index for r in e.value.record_errors] == [1]
    res = validate_and_assign_offsets(batch(n=2, timestamps=[-1, -1]), 0, NOW, cfg)
    assert res.max_timestamp == -1


def test_keyless_and_late_records_on_a_compacted_topic_are_all_named_under_invalid_timestamp():
    from wire.record_batch import build_batch

    buf = bytearray(build_batch([(None, b"v", None, NOW), (b"k", b"v", None, NOW + 7200_000), (b"k", b"v", None, NOW)]))
    with pytest.raises(InvalidTimestampError) as e:
        validate_and_assign_offsets(buf, 0, NOW, replace(CFG, cleanup_policy=("compact",)), topic_partition=("c", 0))
    assert [r.batch_index for r in e.value.record_errors] == [0, 1]
    assert e.value.record_errors[0].message == "Compacted topic cannot accept message without key in topic partition c-0"


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_keyless_records_inside_a_compressed_batch_on_a_compacted_topic_are_named(codec):
    from wire.record_batch import build_batch

    buf = bytearray(build_batch([(b"k", b"v", None, NOW), (None, b"v", None, NOW)], compression=codec))
    with pytest.raises(InvalidRecordError) as e:
        validate_and_assign_offsets(buf, 0, NOW, replace(CFG, cleanup_policy=("compact",)), topic_partition=("c", 1))
    assert [r.batch_index for r in e.value.record_errors] == [1]


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.LZ4])
def test_garbage_after_the_records_inside_a_compressed_batch_is_invalid_record(codec):
    good = batch(n=2, compression=codec)
    inner = decompress(codec, _body(good))
    poison = _reseal(good, compress(codec, inner + b"\x02\x00garbage"))
    with pytest.raises(InvalidRecordError, match="records still remaining"):
        validate_and_assign_offsets(poison, 0, NOW, CFG)


def test_a_compressed_payload_that_does_not_decompress_is_a_corrupt_message():
    good = batch(n=2, compression=Compression.LZ4)
    with pytest.raises(CorruptRecordError):
        validate_and_assign_offsets(_reseal(good, b"\x00not lz4 at all"), 0, NOW, CFG)


def test_a_compressed_batch_with_offset_deltas_out_of_order_is_rebuilt_with_consecutive_ones():
    from wire.record_batch import Record, build_batch

    recs = [Record(0, NOW - i, b"k%d" % i, b"v%d" % i, [("h", b"x")]) for i in range(3)]
    sent = build_batch(recs, compression=Compression.GZIP)
    inner = decompress(Compression.GZIP, sent[HEADER_SIZE:])
    # re-encode with offset deltas 0, 2, 4 (an old client's inner offsets)
    from wire.record_batch import _encode_record
    body = b"".join(_encode_record(2 * i, -i, b"k%d" % i, b"v%d" % i, [("h", b"x")]) for i in range(3))
    assert len(body) == len(inner)
    buf = _reseal(sent, compress(Compression.GZIP, body))
    res = validate_and_assign_offsets(buf, 7, NOW, CFG)
    stored = RecordBatch(bytes(res.records))
    assert stored.compression == Compression.GZIP and stored.is_crc_valid() and stored.base_offset == 7
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in stored.records()] == [
        (7 + i, b"k%d" % i, b"v%d" % i, NOW - i, [("h", b"x")]) for i in range(3)]
    assert res.max_timestamp == NOW and res.last_offset == 9


def test_an_uncompressed_batch_with_offset_deltas_out_of_order_is_kept_as_sent_as_kafka_does():
    from wire.record_batch import _encode_record

    sent = batch(n=2)
    body = b"".join(_encode_record(2 * i, i, b"k", b"v", []) for i in range(2))
    buf = _reseal(sent, body)
    res = validate_and_assign_offsets(buf, 0, NOW, CFG)
    assert bytes(res.records[HEADER_SIZE:]) == body


def test_a_producer_set_log_append_time_is_refused_on_a_log_append_time_topic_and_cleared_on_a_create_time_one():
    with pytest.raises(InvalidTimestampError) as e:
        validate_and_assign_offsets(batch(n=1, log_append_time=True), 0, NOW,
                                    replace(CFG, message_timestamp_type="LogAppendTime"))
    assert e.value.record_errors[0].message.endswith("Producer should not set timestamp type to LogAppendTime.")
    buf = batch(n=2, ts=NOW - 10, log_append_time=True)
    res = validate_and_assign_offsets(buf, 0, NOW, CFG)
    b = RecordBatch(buf)
    # Kafka's setMaxTimestamp(CREATE_TIME, max of the records as read = the header's maxTimestamp)
    assert b.timestamp_type == 0 and b.is_crc_valid() and res.max_timestamp == NOW - 9


def test_a_follower_append_keeps_the_leaders_header_and_does_not_walk_records():
    one = batch(n=1)
    poison = _reseal(one, _body(one) + b"\x00\x01", count=1)
    struct.pack_into(">q", poison, 0, 5)
    res = validate_and_assign_offsets(poison, 0, NOW, CFG, origin=AppendOrigin.REPLICATION, assign_offsets=False)
    assert res.first_offset == 5


# -------------------------------------------------------------- properties

_records = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=20)), st.one_of(st.none(), st.binary(max_size=300)),
              st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=10))), max_size=3),
              st.integers(NOW - 3600_000, NOW + 3600_000)),
    min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(recs=_records, codec=st.sampled_from([Compression.NONE, Compression.NONE, Compression.GZIP, Compression.LZ4]))
def test_any_well_formed_batch_passes_and_is_stored_byte_for_byte(recs, codec):
    from wire.record_batch import build_batch

    sent = build_batch(recs, compression=codec)
    buf = bytearray(sent)
    res = validate_and_assign_offsets(buf, 0, NOW, CFG)
    assert bytes(res.records) == sent
    assert res.max_timestamp == max(r[3] for r in recs)
    assert res.offset_of_max_timestamp == [r[3] for r in recs].index(res.max_timestamp)


@settings(max_examples=150, deadline=None)
@given(recs=_records, data=st.data(), codec=st.sampled_from([Compression.NONE, Compression.GZIP]))
def test_any_truncation_or_garbage_inside_the_records_of_a_crc_valid_batch_is_refused(recs, data, codec):
    from wire.record_batch import build_batch

    sent = build_batch(recs, compression=codec)
    inner = decompress(codec, sent[HEADER_SIZE:]) if codec else sent[HEADER_SIZE:]
    if data.draw(st.booleans(), label="truncate"):
        body = inner[: data.draw(st.integers(0, len(inner) - 1), label="cut")]
    else:
        body = inner + data.draw(st.binary(min_size=1, max_size=30), label="garbage")
    poison = _reseal(sent, compress(codec, body) if codec else body)
    with pytest.raises(InvalidRecordError):
        validate_and_assign_offsets(poison, 0, NOW, CFG)


@settings(max_examples=400, deadline=None)
@given(body=st.binary(max_size=200), count=st.integers(0, 12))
def test_the_native_walk_and_its_python_twin_agree_on_any_bytes(body, count):
    buf = b"\x07" * 5 + body + b"\x09" * 3  # records in the middle of a larger buffer

    def outcome(fn):
        try:
            return tuple(fn(buf, 5, 5 + len(body), count))
        except record_validation.MalformedRecordError as e:
            return str(e)

    assert outcome(record_validation.scan_records) == outcome(record_validation.scan_records_py)


def test_a_timestamp_sum_past_int64_wraps_as_javas_long_does_instead_of_failing_the_append():
    from wire.record_batch import _encode_record

    big = (1 << 63) - 5
    sent = batch(n=1)
    struct.pack_into(">q", sent, 27, big)  # baseTimestamp near Long.MAX, the record's delta +10
    buf = _reseal(sent, _encode_record(0, 10, b"k", b"v", []))
    cfg = replace(CFG, message_timestamp_after_max_ms=(1 << 63) - 1)
    res = validate_and_assign_offsets(buf, 0, NOW, cfg)
    # Kafka: the record reads as Long.MIN + 4, below NO_TIMESTAMP, so the batch's max stays -1
    assert res.max_timestamp == -1 == RecordBatch(buf).max_timestamp and RecordBatch(buf).is_crc_valid()


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=120), count=st.integers(1, 6), base_ts=st.integers(-(1 << 63), (1 << 63) - 1),
       codec=st.sampled_from([Compression.NONE, Compression.GZIP]), compact=st.booleans())
def test_any_crc_valid_batch_is_either_stored_or_refused_with_a_kafka_error_never_a_crash(body, count, base_ts, codec, compact):
    sent = batch(n=1)
    struct.pack_into(">q", sent, 27, base_ts)
    buf = _reseal(sent, compress(codec, body) if codec else body, count=count)
    if codec:
        struct.pack_into(">h", buf, 21, codec)
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    cfg = replace(CFG, cleanup_policy=("compact",) if compact else ("delete",))
    try:
        res = validate_and_assign_offsets(buf, 0, NOW, cfg)
    except (InvalidRecordError, InvalidTimestampError, CorruptRecordError) as e:
        assert e.error in (ErrorCode.INVALID_RECORD, ErrorCode.INVALID_TIMESTAMP, ErrorCode.CORRUPT_MESSAGE)
    else:
        assert res.record_count == count and RecordBatch(bytes(res.records)).is_crc_valid()
