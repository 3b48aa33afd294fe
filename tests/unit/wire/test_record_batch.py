"""Magic v2 record batches: interop with kafka-python 3, CRC coverage, in-place patches, fuzzing."""

from __future__ import annotations

import struct

import cramjam
import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import (
    ControlRecord,
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
)
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from tests.unit.wire.kafka_python_codecs import kafka_python_codecs
from wire.compression import Compression
from wire.errors import CorruptRecordError, DecodeError
from wire.record_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    ControlRecordType,
    Record,
    RecordBatch,
    TimestampType,
    build_batch,
    build_control_batch,
    decode_control_record,
    iter_batches,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)

CODECS = list(Compression)
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.fixture(autouse=True)
def _codecs_for_kafka_python():
    with kafka_python_codecs():
        yield


def sample_records(n: int = 5) -> list[tuple]:
    """Compressible records with every shape: null key/value, headers, null header value."""
    out = []
    for i in range(n):
        key = None if i == 1 else b"key-%d" % i
        value = None if i == 2 else (b"value-%d " % i) * 20
        headers = [] if i % 2 else [("trace", b"abc%d" % i), ("empty", b""), ("none", None)]
        out.append((key, value, headers, 1_700_000_000_000 + i * 7 - (3 if i == 4 else 0)))
    return out


def kafka_python_batch(records, codec=0, *, producer_id=-1, producer_epoch=-1,
                       base_sequence=-1, transactional=False) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=int(codec), is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=base_sequence, batch_size=1 << 30,
    )
    for i, (key, value, headers, ts) in enumerate(records):
        assert builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


def as_tuples(records) -> list[tuple]:
    return [(r.key, r.value, list(r.headers), r.timestamp) for r in records]


# --------------------------------------------------------------------------- kafka-python -> us


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_a_batch_written_by_kafka_pythons_builder_decodes_to_exactly_what_was_written(codec):
    written = sample_records(6)
    data = kafka_python_batch(written, codec)
    batch = RecordBatch(data)
    batch.validate()
    assert batch.compression is codec  # the builder kept the compressed form
    records = list(batch.records())
    assert as_tuples(records) == written
    assert [r.offset for r in records] == list(range(6))
    assert [r.offset_delta for r in records] == list(range(6))
    assert batch.record_count == 6 and batch.last_offset_delta == 5
    assert batch.size_in_bytes == len(data)
    assert batch.max_timestamp == max(ts for *_, ts in written)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_memory_records_builder_output_with_several_batches_iterates_batch_by_batch(codec):
    blobs = []
    for base in (0, 3):
        b = MemoryRecordsBuilder(magic=2, compression_type=int(codec), batch_size=1 << 20,
                                 offset=base)
        for i in range(3):
            assert b.append(timestamp=1000 + base + i, key=b"k%d" % (base + i),
                            value=b"v" * 100, headers=[("h", b"%d" % i)])
        b.close()
        blobs.append(bytes(b.buffer()))
    data = b"".join(blobs)
    batches = list(iter_batches(data))
    # kafka-python always writes baseOffset 0 and puts the builder's offsets in the deltas.
    assert [b.base_offset for b in batches] == [0, 0]
    assert [b.next_offset for b in batches] == [3, 6]
    got = [r for batch in batches for r in batch.records()]
    assert [r.offset for r in got] == list(range(6))
    assert [r.key for r in got] == [b"k%d" % i for i in range(6)]
    assert [r.timestamp for r in got] == [1000, 1001, 1002, 1003, 1004, 1005]
    assert all(r.value == b"v" * 100 for r in got)
    assert [r.headers for r in got][:3] == [[("h", b"0")], [("h", b"1")], [("h", b"2")]]
    for batch in batches:
        batch.validate()


def test_the_header_fields_match_what_kafka_python_reports():
    data = kafka_python_batch(sample_records(4), Compression.GZIP, producer_id=4242,
                              producer_epoch=7, base_sequence=100, transactional=True)
    ours, theirs = RecordBatch(data), DefaultRecordBatch(data)
    assert ours.base_offset == theirs.base_offset == 0
    assert ours.partition_leader_epoch == theirs.leader_epoch
    assert ours.magic == MAGIC_V2 == theirs.magic
    assert ours.crc == theirs.crc == ours.compute_crc()
    assert ours.attributes == theirs.attributes
    assert ours.compression == theirs.compression_type
    assert ours.timestamp_type == theirs.timestamp_type == TimestampType.CREATE_TIME
    assert ours.is_transactional and theirs.is_transactional
    assert not ours.is_control and not ours.has_delete_horizon
    assert ours.last_offset_delta == theirs.last_offset_delta
    assert ours.next_offset == theirs.next_offset == 4
    assert ours.base_timestamp == theirs.first_timestamp
    assert ours.max_timestamp == theirs.max_timestamp
    assert (ours.producer_id, ours.producer_epoch) == (4242, 7)
    assert ours.base_sequence == theirs.base_sequence == 100
    assert ours.last_sequence == theirs.last_sequence == 103
    assert ours.record_count == theirs.records_count


# --------------------------------------------------------------------------- us -> kafka-python


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_a_batch_we_build_is_read_back_exactly_by_kafka_pythons_reader(codec):
    written = sample_records(6)
    data = build_batch(written, compression=codec, base_offset=50, producer_id=9,
                       producer_epoch=1, base_sequence=0, partition_leader_epoch=3)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc()
    assert theirs.compression_type == codec
    assert (theirs.base_offset, theirs.leader_epoch, theirs.producer_id) == (50, 3, 9)
    records = list(theirs)
    assert as_tuples(records) == written
    assert [r.offset for r in records] == list(range(50, 56))
    # MemoryRecords (the consumer's path) agrees on the framing too.
    mr = MemoryRecords(data + data)
    n = 0
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        n += 1
    assert n == 2


@given(
    records=st.lists(
        st.tuples(
            st.none() | st.binary(max_size=40),
            st.none() | st.binary(max_size=200),
            st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=10)),
                     max_size=3),
            st.integers(0, 1 << 45),
        ),
        min_size=1, max_size=12,
    ),
    codec=st.sampled_from(CODECS),
)
@FUZZ
def test_any_records_round_trip_through_us_and_kafka_python_alike(records, codec):
    with kafka_python_codecs():
        data = build_batch(records, compression=codec)
        batch = RecordBatch(data)
        batch.validate()
        assert as_tuples(batch.records()) == records
        theirs = DefaultRecordBatch(data)
        assert theirs.validate_crc()
        assert as_tuples(theirs) == records
        assert as_tuples(RecordBatch(kafka_python_batch(records, codec)).records()) == records


def test_records_objects_can_be_fed_back_into_the_builder():
    first = list(RecordBatch(build_batch(sample_records(3))).records())
    again = list(RecordBatch(build_batch(first, base_offset=10)).records())
    assert as_tuples(again) == as_tuples(first)
    assert [r.offset for r in again] == [10, 11, 12]


def test_base_timestamp_is_the_first_records_and_deltas_may_be_negative():
    batch = RecordBatch(build_batch([(b"a", b"1", [], 5000), (b"b", b"2", [], 4000)]))
    assert batch.base_timestamp == 5000 and batch.max_timestamp == 5000
    assert [(r.timestamp, r.timestamp_delta) for r in batch.records()] == [(5000, 0), (4000, -1000)]


# --------------------------------------------------------------------------- CRC coverage


def test_a_flipped_bit_anywhere_after_the_crc_field_fails_validation():
    data = build_batch(sample_records(2), producer_id=1, producer_epoch=0, base_sequence=0)
    assert RecordBatch(data).is_crc_valid()
    for i in range(21, len(data)):
        for bit in range(8):
            corrupted = bytearray(data)
            corrupted[i] ^= 1 << bit
            batch = RecordBatch(corrupted)
            assert not batch.is_crc_valid(), (i, bit)
            with pytest.raises(CorruptRecordError):
                batch.validate()


def test_a_flipped_bit_in_the_stored_crc_fails_validation():
    data = build_batch(sample_records(2))
    for i in range(17, 21):
        for bit in range(8):
            corrupted = bytearray(data)
            corrupted[i] ^= 1 << bit
            with pytest.raises(CorruptRecordError, match="CRC"):
                RecordBatch(corrupted).validate()


def test_base_offset_and_leader_epoch_bytes_are_outside_the_crc():
    data = build_batch(sample_records(2))
    for i in range(0, 8):
        corrupted = bytearray(data)
        corrupted[i] ^= 0xFF
        assert RecordBatch(corrupted).is_crc_valid()
    for i in range(12, 16):
        corrupted = bytearray(data)
        corrupted[i] ^= 0xFF
        assert RecordBatch(corrupted).is_crc_valid()


def test_the_crc_is_crc32c_of_bytes_21_to_the_end():
    data = build_batch(sample_records(3), compression=Compression.LZ4)
    assert RecordBatch(data).crc == crc32c.crc32c(data[21:])
    assert struct.unpack_from(">I", data, 17)[0] == crc32c.crc32c(data[21:])


# --------------------------------------------------------------------------- in-place patches


@pytest.mark.parametrize("make_buf", [bytearray, lambda b: memoryview(bytearray(b))],
                         ids=["bytearray", "memoryview"])
def test_set_base_offset_and_leader_epoch_keep_the_crc_valid(make_buf):
    buf = make_buf(b"\x00" * 7 + build_batch(sample_records(3), compression=Compression.ZSTD))
    batch = RecordBatch(buf, 7)
    crc_before = batch.crc
    set_base_offset(buf, 7, 123_456_789_012)
    set_partition_leader_epoch(buf, 7, 42)
    assert batch.base_offset == 123_456_789_012  # the view sees the patch
    assert batch.partition_leader_epoch == 42
    assert batch.crc == crc_before
    batch.validate()
    assert [r.offset for r in batch.records()] == [123_456_789_012 + i for i in range(3)]
    assert batch.last_offset == 123_456_789_014 and batch.next_offset == 123_456_789_015
    assert DefaultRecordBatch(bytes(buf[7:])).validate_crc()


def test_set_log_append_time_sets_bit_3_and_max_timestamp_and_a_valid_crc():
    buf = bytearray(build_batch(sample_records(3), compression=Compression.SNAPPY))
    set_log_append_time(buf, 0, 1_800_000_000_000)
    batch = RecordBatch(buf)
    batch.validate()
    assert batch.attributes & 0x08
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 1_800_000_000_000
    assert batch.compression is Compression.SNAPPY  # other attribute bits untouched
    # Readers report maxTimestamp for every record of a LogAppendTime batch.
    assert {r.timestamp for r in batch.records()} == {1_800_000_000_000}
    theirs = DefaultRecordBatch(bytes(buf))
    assert theirs.validate_crc() and theirs.timestamp_type == 1
    assert {r.timestamp for r in theirs} == {1_800_000_000_000}


def test_patching_the_header_never_touches_record_bytes():
    # The body is garbage: header access and patches must still work (O(1), lazy records).
    data = bytearray(build_batch([(b"k", b"v", [], 1)]))
    body_garbage = bytearray(data[:HEADER_SIZE]) + b"\xff" * 10_000
    struct.pack_into(">i", body_garbage, 8, len(body_garbage) - LOG_OVERHEAD)
    batch = RecordBatch(body_garbage)
    records = batch.records()  # lazy: nothing decoded yet
    set_base_offset(body_garbage, 0, 99)
    assert batch.base_offset == 99 and batch.record_count == 1
    assert len(batch.view()) == len(body_garbage)
    with pytest.raises(CorruptRecordError):
        list(records)


def test_view_is_a_zero_copy_window_on_the_batch():
    data = bytearray(b"xx" + build_batch(sample_records(2)) + b"tail")
    view = RecordBatch(data, 2).view()
    assert view.obj is data
    assert bytes(view) == bytes(data[2:-4])


# --------------------------------------------------------------------------- control batches


@pytest.mark.parametrize("commit", [True, False])
def test_a_control_batch_is_a_transactional_marker_kafka_python_understands(commit):
    data = build_control_batch(commit=commit, producer_id=77, producer_epoch=3,
                               coordinator_epoch=12, timestamp=1234, base_offset=40)
    batch = RecordBatch(data)
    batch.validate()
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, -1)
    (record,) = list(batch.records())
    assert record.offset == 40 and record.timestamp == 1234
    ctype, epoch = decode_control_record(record)
    assert ctype is (ControlRecordType.COMMIT if commit else ControlRecordType.ABORT)
    assert epoch == 12
    assert record.key == struct.pack(">hh", 0, int(commit))
    assert record.value == struct.pack(">hi", 0, 12)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc() and theirs.is_control_batch
    (their_record,) = list(theirs)
    assert isinstance(their_record, ControlRecord)
    assert their_record.commit is commit and their_record.abort is (not commit)


def test_a_control_record_with_a_short_key_is_corrupt():
    with pytest.raises(CorruptRecordError):
        decode_control_record(Record(0, 0, b"\x00", None, []))


# --------------------------------------------------------------------------- iter_batches


def test_iter_batches_stops_cleanly_before_a_partial_trailing_batch():
    one = build_batch(sample_records(2))
    two = build_batch(sample_records(3), base_offset=2)
    data = one + two
    for cut in range(len(one), len(data)):
        assert [b.base_offset for b in iter_batches(data[:cut])] == [0]
    assert [b.base_offset for b in iter_batches(data)] == [0, 2]
    assert list(iter_batches(b"")) == []


def test_iter_batches_rejects_an_impossible_batch_length():
    data = bytearray(build_batch(sample_records(1)))
    struct.pack_into(">i", data, 8, HEADER_SIZE - LOG_OVERHEAD - 1)
    with pytest.raises(CorruptRecordError):
        list(iter_batches(data))
    struct.pack_into(">i", data, 8, -5)
    with pytest.raises(CorruptRecordError):
        list(iter_batches(data))


def test_iter_batches_rejects_another_magic():
    data = bytearray(build_batch(sample_records(1)))
    data[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        list(iter_batches(data))


def test_iter_batches_starts_at_the_given_position():
    data = b"\x00" * 5 + build_batch(sample_records(1), base_offset=8)
    (batch,) = list(iter_batches(data, 5))
    assert batch.base_offset == 8 and batch.position == 5


# --------------------------------------------------------------------------- validation


def _rewrite(data: bytes, fmt: str, offset: int, value: int) -> bytes:
    buf = bytearray(data)
    struct.pack_into(fmt, buf, offset, value)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def test_validate_rejects_counts_that_do_not_fit_the_offset_range():
    data = build_batch(sample_records(3))
    with pytest.raises(CorruptRecordError, match="negative record count"):
        RecordBatch(_rewrite(data, ">i", 57, -1)).validate()
    with pytest.raises(CorruptRecordError, match="exceeds the offset range"):
        RecordBatch(_rewrite(data, ">i", 23, 1)).validate()
    with pytest.raises(CorruptRecordError, match="negative lastOffsetDelta"):
        RecordBatch(_rewrite(data, ">i", 23, -1)).validate()


def test_a_compacted_batch_with_fewer_records_than_offsets_is_valid():
    data = build_batch(sample_records(2), last_offset_delta=9)
    batch = RecordBatch(data)
    batch.validate()
    assert batch.next_offset == 10 and batch.record_count == 2
    empty = RecordBatch(build_batch([], last_offset_delta=4, base_timestamp=77))
    empty.validate()
    assert list(empty.records()) == [] and empty.next_offset == 5


def test_an_unknown_compression_codec_is_corrupt():
    data = _rewrite(build_batch(sample_records(1)), ">h", 21, 6)
    batch = RecordBatch(data)
    with pytest.raises(CorruptRecordError, match="codec"):
        batch.validate()
    with pytest.raises(CorruptRecordError):
        list(batch.records())


def test_a_batch_with_a_wrong_record_count_is_corrupt_when_iterated():
    data = build_batch(sample_records(3))
    with pytest.raises(CorruptRecordError, match="left over"):
        list(RecordBatch(_rewrite(data, ">i", 57, 2)).records())
    with pytest.raises(CorruptRecordError):
        list(RecordBatch(_rewrite(data, ">i", 57, 4)).records())


def test_a_short_header_or_wrong_magic_is_rejected_at_construction():
    data = build_batch(sample_records(1))
    with pytest.raises(CorruptRecordError):
        RecordBatch(data[:HEADER_SIZE - 1])
    bad = bytearray(data)
    bad[16] = 0
    with pytest.raises(CorruptRecordError):
        RecordBatch(bad)


def test_a_decompression_bomb_is_refused():
    data = build_batch([(None, b"\x00" * 1_000_000, [], 0)], compression=Compression.ZSTD)
    assert len(data) < 1000
    with pytest.raises(CorruptRecordError, match="decompress"):
        list(RecordBatch(data).records(max_decompressed_bytes=100_000))
    assert len(next(RecordBatch(data).records()).value) == 1_000_000


def test_raw_snappy_as_librdkafka_writes_it_decodes():
    plain = build_batch(sample_records(4))
    body = bytes(cramjam.snappy.compress_raw(plain[HEADER_SIZE:]))
    buf = bytearray(plain[:HEADER_SIZE] + body)
    struct.pack_into(">i", buf, 8, len(buf) - LOG_OVERHEAD)
    struct.pack_into(">h", buf, 21, Compression.SNAPPY)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    batch = RecordBatch(buf)
    batch.validate()
    assert as_tuples(batch.records()) == sample_records(4)


def test_last_sequence_wraps_past_int32_max_like_kafka():
    data = build_batch(sample_records(3), producer_id=1, producer_epoch=0,
                       base_sequence=2**31 - 2)
    assert RecordBatch(data).last_sequence == 0
    assert RecordBatch(build_batch(sample_records(3))).last_sequence == -1


# --------------------------------------------------------------------------- fuzzing


def _exercise(buf) -> None:
    """Everything a consumer of wire.record_batch may call on untrusted bytes."""
    for batch in iter_batches(buf):
        batch.is_crc_valid()
        batch.validate()
        for _ in batch.records():
            pass
    batch = RecordBatch(buf)
    _ = (batch.compression, batch.timestamp_type, batch.last_sequence, batch.next_offset)
    batch.view()
    list(batch.records())


def _only_decode_errors(buf) -> None:
    try:
        _exercise(buf)
    except DecodeError:
        pass


batches = st.builds(
    lambda records, codec, pid: build_batch(records, compression=codec, producer_id=pid,
                                            producer_epoch=0, base_sequence=0),
    st.lists(
        st.tuples(st.none() | st.binary(max_size=20), st.none() | st.binary(max_size=60),
                  st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)),
                           max_size=2),
                  st.integers(0, 1 << 42)),
        min_size=1, max_size=4,
    ),
    st.sampled_from(CODECS),
    st.integers(-1, 1000),
)


@given(batches)
@settings(max_examples=40, deadline=None)
def test_truncating_a_valid_batch_anywhere_raises_only_decode_errors(data):
    for cut in range(len(data)):
        truncated = data[:cut]
        assert list(iter_batches(truncated)) == []  # stops cleanly, never a partial batch
        with pytest.raises(DecodeError):
            _exercise(truncated)


@given(batches)
@settings(max_examples=40, deadline=None)
def test_a_body_cut_short_with_a_matching_length_raises_only_decode_errors(data):
    # Framing agrees with the buffer, so the record parser / decompressor sees the cut.
    for cut in range(HEADER_SIZE, len(data)):
        buf = bytearray(data[:cut])
        struct.pack_into(">i", buf, 8, cut - LOG_OVERHEAD)
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
        with pytest.raises(DecodeError):
            list(RecordBatch(buf).records())


@given(st.binary(max_size=300))
@FUZZ
def test_random_garbage_raises_only_decode_errors(garbage):
    _only_decode_errors(garbage)


@given(
    codec=st.integers(0, 7),
    count=st.integers(-3, 40),
    body=st.binary(max_size=300),
)
@FUZZ
def test_garbage_behind_a_plausible_header_raises_only_decode_errors(codec, count, body):
    header = bytearray(build_batch([], last_offset_delta=0))
    struct.pack_into(">h", header, 21, codec)
    struct.pack_into(">i", header, 57, count)
    buf = header + body
    struct.pack_into(">i", buf, 8, len(buf) - LOG_OVERHEAD)
    _only_decode_errors(bytes(buf))


@given(data=batches, position=st.integers(0, 10_000), byte=st.integers(0, 255))
@FUZZ
def test_a_mutated_byte_anywhere_raises_only_decode_errors(data, position, byte):
    buf = bytearray(data)
    buf[position % len(buf)] = byte
    _only_decode_errors(bytes(buf))
