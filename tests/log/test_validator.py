import struct
from dataclasses import replace

import pytest

from log.config import LogConfig
from log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordTooLargeError,
    UnsupportedForMessageFormatError,
)
from log.validator import validate_and_assign_offsets
from wire.error_codes import ErrorCode
from wire.record_batch import RecordBatch, build_control_batch

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
