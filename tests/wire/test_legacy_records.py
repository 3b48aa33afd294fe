"""Legacy message sets (magic 0 and 1) written by kafka-python's LegacyRecordBatchBuilder."""

from __future__ import annotations

import struct
import zlib

import aiokafka.codec as aio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from tests.wire.kafka_python_codecs import kafka_python_codecs
from wire.compression import Compression
from wire.errors import CorruptRecordError, DecodeError
from wire.legacy_records import (
    LegacyMessage,
    _xxh32,
    iter_all_records,
    iter_legacy_messages,
    iter_legacy_records,
)
from wire.record_batch import build_batch

LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]


@pytest.fixture(autouse=True)
def _codecs_for_kafka_python():
    with kafka_python_codecs():
        yield


def sample(n: int = 4) -> list[tuple[bytes | None, bytes | None, int]]:
    return [
        (None if i == 1 else b"key-%d" % i, None if i == 2 else (b"value %d " % i) * 10,
         1_600_000_000_000 + i)
        for i in range(n)
    ]


def legacy_set(magic: int, codec: int, records, first_offset: int = 0) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=int(codec),
                                       batch_size=1 << 20)
    for i, (key, value, ts) in enumerate(records):
        assert builder.append(first_offset + i, timestamp=ts, key=key, value=value)
    return bytes(builder.build())


def set_offset(data: bytes, pos: int, offset: int) -> bytes:
    buf = bytearray(data)
    struct.pack_into(">q", buf, pos, offset)  # outside the legacy CRC too
    return bytes(buf)


@pytest.mark.parametrize("codec", LEGACY_CODECS[:3], ids=lambda c: c.name)
@pytest.mark.parametrize("magic", [0, 1])
def test_a_legacy_set_decodes_exactly_as_written(magic, codec):
    written = sample()
    data = legacy_set(magic, codec, written)
    if codec is not Compression.NONE:
        # The broker gives a wrapper the offset of its last inner message.
        data = set_offset(data, 0, 103 if magic == 1 else 3)
    records = list(iter_legacy_records(data))
    assert [(r.key, r.value) for r in records] == [(k, v) for k, v, _ in written]
    expected_ts = [ts for *_, ts in written] if magic == 1 else [-1] * len(written)
    assert [r.timestamp for r in records] == expected_ts
    if magic == 1 and codec is not Compression.NONE:
        assert [r.offset for r in records] == [100, 101, 102, 103]  # relative inner offsets
    else:
        assert [r.offset for r in records] == [0, 1, 2, 3]
    assert all(r.headers == [] for r in records)


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_we_agree_with_kafka_pythons_legacy_reader(codec):
    data = legacy_set(1, codec, sample(3))
    theirs = []
    mr = MemoryRecords(data)
    while mr.has_next():
        batch = mr.next_batch()
        assert isinstance(batch, LegacyRecordBatch) and batch.validate_crc()
        theirs += [(r.offset, r.timestamp, r.key, r.value) for r in batch]
    assert len(theirs) == 3
    ours = [(r.offset, r.timestamp, r.key, r.value) for r in iter_legacy_records(data)]
    assert ours == theirs


def test_a_log_append_time_wrapper_gives_its_timestamp_to_every_inner_record():
    data = bytearray(legacy_set(1, Compression.GZIP, sample(3)))
    attrs_pos, ts_pos = 17, 18
    data[attrs_pos] |= 0x08
    struct.pack_into(">q", data, ts_pos, 1_999_999_999_999)
    struct.pack_into(">I", data, 12, zlib.crc32(bytes(data[16:])))
    assert {r.timestamp for r in iter_legacy_records(data)} == {1_999_999_999_999}


def test_uncompressed_messages_are_shallow_and_deep_the_same():
    data = legacy_set(0, Compression.NONE, sample(3))
    msgs = list(iter_legacy_messages(data))
    assert [m.offset for m in msgs] == [0, 1, 2]
    assert all(m.magic == 0 and m.is_crc_valid() for m in msgs)
    assert sum(m.size_in_bytes for m in msgs) == len(data)


def test_a_flipped_bit_after_the_crc_field_fails_the_crc32_check():
    data = legacy_set(1, Compression.NONE, sample(1))
    for i in range(16, len(data)):
        corrupted = bytearray(data)
        corrupted[i] ^= 0x10
        try:
            msg = LegacyMessage(corrupted)
        except CorruptRecordError:
            continue  # magic byte changed
        assert not msg.is_crc_valid(), i
        with pytest.raises(CorruptRecordError):
            list(iter_legacy_records(corrupted))
    # check_crc=False skips it (for forensics on damaged data)
    corrupted = bytearray(data)
    corrupted[-1] ^= 1
    assert len(list(iter_legacy_records(corrupted, check_crc=False))) == 1


def test_a_partial_trailing_message_is_left_alone():
    data = legacy_set(1, Compression.NONE, sample(2))
    first = struct.unpack_from(">i", data, 8)[0] + 12
    for cut in range(first, len(data)):
        assert len(list(iter_legacy_records(data[:cut]))) == 1


def test_lz4_under_magic_0_with_kafka_3160s_broken_header_checksum_is_read():
    inner = legacy_set(0, Compression.NONE, sample(3))
    frame = bytearray(aio.lz4_encode(inner))
    # Kafka 0.8/0.9 hashed the magic + descriptor: bytes 0..5 for a frame without content size.
    assert not frame[4] & 0x09
    frame[6] = (_xxh32(bytes(frame[0:6])) >> 8) & 0xFF
    assert frame[6] != (_xxh32(bytes(frame[4:6])) >> 8) & 0xFF
    wrapper = _wrapper(0, Compression.LZ4, bytes(frame), offset=2)
    assert [r.key for r in iter_legacy_records(wrapper)] == [k for k, _, _ in sample(3)]


def test_xxh32_matches_the_published_test_vectors():
    assert _xxh32(b"") == 0x02CC5D05
    assert _xxh32(b"a") == 0x550D7456
    assert _xxh32(b"abc") == 0x32D153FF
    assert _xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def _wrapper(magic: int, codec: Compression, value: bytes | None, offset: int = 0,
             timestamp: int = 0) -> bytes:
    body = struct.pack(">bb", magic, int(codec))
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += struct.pack(">i", -1)
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def test_nested_compression_is_corrupt():
    inner = legacy_set(1, Compression.GZIP, sample(2))
    wrapper = _wrapper(1, Compression.GZIP, zlib.compress(inner, wbits=31))
    with pytest.raises(CorruptRecordError, match="nested"):
        list(iter_legacy_records(wrapper))


def test_a_wrapper_with_no_inner_messages_or_a_null_value_is_corrupt():
    with pytest.raises(CorruptRecordError, match="no inner"):
        list(iter_legacy_records(_wrapper(1, Compression.GZIP, zlib.compress(b"", wbits=31))))
    with pytest.raises(CorruptRecordError, match="null"):
        list(iter_legacy_records(_wrapper(1, Compression.GZIP, None)))


def test_zstd_is_not_a_legacy_codec():
    with pytest.raises(CorruptRecordError, match="codec"):
        list(iter_legacy_records(_wrapper(1, Compression.ZSTD, b"x")))


def test_a_mixed_buffer_of_magic_0_1_and_2_reads_in_order():
    data = (legacy_set(0, Compression.NONE, sample(1))
            + set_offset(legacy_set(1, Compression.GZIP, sample(2)), 0, 2)
            + build_batch([(b"v2", b"x", [("h", b"1")], 5)], base_offset=3))
    records = list(iter_all_records(data))
    assert [r.offset for r in records] == [0, 1, 2, 3]
    assert records[-1].headers == [("h", b"1")]


@given(st.binary(max_size=200))
@settings(max_examples=150, deadline=None)
def test_random_garbage_raises_only_decode_errors(garbage):
    for fn in (iter_legacy_records, iter_all_records):
        try:
            list(fn(garbage))
        except DecodeError:
            pass


@given(codec=st.sampled_from(LEGACY_CODECS[:3]), magic=st.integers(0, 1),
       position=st.integers(0, 10_000), byte=st.integers(0, 255), fix_crc=st.booleans())
@settings(max_examples=150, deadline=None)
def test_a_mutated_legacy_set_raises_only_decode_errors(codec, magic, position, byte, fix_crc):
    with kafka_python_codecs():
        data = bytearray(legacy_set(magic, codec, sample(3)))
    data[position % len(data)] = byte
    if fix_crc and len(data) >= 16:
        struct.pack_into(">I", data, 12, zlib.crc32(bytes(data[16:])))
    for cut in (len(data), len(data) - 3):
        try:
            list(iter_legacy_records(bytes(data[:cut])))
            list(iter_all_records(bytes(data[:cut])))
        except DecodeError:
            pass
