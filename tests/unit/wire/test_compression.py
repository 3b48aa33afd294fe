"""Compression codecs: formats other Kafka clients write and read, bounds, garbage."""

from __future__ import annotations

import gzip
import struct

import aiokafka.codec as aio
import cramjam
import kafka.codec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wire.compression import Compression, compress, decompress
from wire.errors import DecodeError

CODECS = list(Compression)
XERIAL_MAGIC = b"\x82SNAPPY\x00"


def test_codec_ids_are_kafkas():
    assert [(c.name, int(c)) for c in Compression] == [
        ("NONE", 0), ("GZIP", 1), ("SNAPPY", 2), ("LZ4", 3), ("ZSTD", 4)]


@given(data=st.binary(max_size=5000), codec=st.sampled_from(CODECS))
@settings(max_examples=200, deadline=None)
def test_every_codec_round_trips_any_bytes(data, codec):
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("size", [0, 1, 32 * 1024, 32 * 1024 + 1, 65536, 65537, 300_000])
def test_sizes_around_block_and_buffer_boundaries_round_trip(codec, size):
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert decompress(codec, compress(codec, data)) == data
    assert decompress(codec, compress(codec, data), max_size=size) == data


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_accepts_bytearray_and_memoryview_input(codec):
    data = b"hello kafka " * 100
    packed = compress(codec, bytearray(data))
    assert decompress(codec, memoryview(packed)) == data
    assert decompress(codec, bytearray(packed)) == data


# --------------------------------------------------------------------------- snappy


def test_snappy_is_written_with_the_xerial_framing_java_uses():
    data = b"abc" * 30_000  # 90 000 bytes -> three 32 KiB chunks
    packed = compress(Compression.SNAPPY, data)
    assert packed[:8] == XERIAL_MAGIC
    assert struct.unpack(">ii", packed[8:16]) == (1, 1)
    pos, chunks = 16, []
    while pos < len(packed):
        (n,) = struct.unpack_from(">i", packed, pos)
        chunks.append(bytes(cramjam.snappy.decompress_raw(packed[pos + 4 : pos + 4 + n])))
        pos += 4 + n
    assert [len(c) for c in chunks] == [32768, 32768, 90_000 - 65536]
    assert b"".join(chunks) == data
    # Other clients' readers agree.
    assert aio.snappy_decode(packed) == data


def test_raw_snappy_as_librdkafka_writes_it_is_read():
    data = b"librdkafka writes one raw snappy block " * 50
    assert decompress(Compression.SNAPPY, aio.snappy_encode(data, xerial_compatible=False)) == data
    assert decompress(Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_xerial_snappy_from_kafka_python_and_aiokafka_is_read():
    data = bytes(range(256)) * 600
    assert decompress(Compression.SNAPPY, aio.snappy_encode(data, xerial_blocksize=1000)) == data


def test_xerial_snappy_with_little_endian_version_fields_is_read():
    # Redpanda wrote version/compat little-endian (kafka-python#2414): they are ignored.
    data = b"redpanda " * 1000
    packed = bytearray(compress(Compression.SNAPPY, data))
    packed[8:16] = struct.pack("<ii", 1, 1)
    assert decompress(Compression.SNAPPY, bytes(packed)) == data


def test_a_xerial_chunk_length_past_the_end_is_a_decode_error():
    packed = bytearray(compress(Compression.SNAPPY, b"x" * 1000))
    struct.pack_into(">i", packed, 16, 10_000)
    with pytest.raises(DecodeError):
        decompress(Compression.SNAPPY, bytes(packed))
    struct.pack_into(">i", packed, 16, -1)
    with pytest.raises(DecodeError):
        decompress(Compression.SNAPPY, bytes(packed))


# --------------------------------------------------------------------------- lz4, gzip, zstd


def test_lz4_is_a_frame_with_independent_blocks_and_no_content_checksum():
    packed = compress(Compression.LZ4, b"lz4 " * 100_000)
    assert packed[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flg = packed[4]
    assert flg >> 6 == 1  # version 01
    assert flg & 0x20  # block independence: Kafka's Java reader needs it (KIP-57)
    assert not flg & 0x04  # no content checksum, as Java's Lz4BlockOutputStream
    assert aio.lz4_decode(packed) == b"lz4 " * 100_000


def test_lz4_frames_with_linked_blocks_and_checksums_are_read_too():
    data = b"linked " * 50_000
    assert decompress(Compression.LZ4, bytes(cramjam.lz4.compress(data))) == data
    assert decompress(Compression.LZ4, aio.lz4_encode(data)) == data


def test_gzip_from_the_stdlib_and_kafka_python_is_read_and_ours_is_plain_gzip():
    data = b"gzip " * 1000
    assert decompress(Compression.GZIP, gzip.compress(data)) == data
    assert decompress(Compression.GZIP, kafka.codec.gzip_encode(data)) == data
    assert gzip.decompress(compress(Compression.GZIP, data)) == data


def test_concatenated_gzip_members_and_zstd_frames_are_read_whole():
    a, b = b"first " * 100, b"second " * 100
    assert decompress(Compression.GZIP, gzip.compress(a) + gzip.compress(b)) == a + b
    zstd = bytes(cramjam.zstd.compress(a)) + bytes(cramjam.zstd.compress(b))
    assert decompress(Compression.ZSTD, zstd) == a + b


def test_zstd_from_aiokafka_is_read():
    data = b"zstd " * 10_000
    assert decompress(Compression.ZSTD, aio.zstd_encode(data)) == data


# --------------------------------------------------------------------------- bounds and garbage


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_output_over_max_size_is_refused(codec):
    data = b"\x00" * 2_000_000
    packed = compress(codec, data)
    with pytest.raises(DecodeError, match="bytes"):
        decompress(codec, packed, max_size=1_999_999)
    assert decompress(codec, packed, max_size=2_000_000) == data


def test_a_snappy_bomb_is_refused_before_anything_is_allocated():
    # A raw block that *claims* 2**31 bytes: its length header is read first.
    bomb = b"\x80\x80\x80\x80\x08" + b"\x00" * 10
    with pytest.raises(DecodeError):
        decompress(Compression.SNAPPY, bomb, max_size=1 << 20)


def test_an_unknown_codec_id_is_a_decode_error():
    with pytest.raises(DecodeError):
        decompress(7, b"abc")


@given(data=st.binary(max_size=400), codec=st.sampled_from(CODECS))
@settings(max_examples=300, deadline=None)
def test_garbage_raises_only_decode_errors(data, codec):
    for blob in (data, XERIAL_MAGIC + data, b"\x04\x22\x4d\x18" + data, b"\x1f\x8b\x08" + data,
                 b"\x28\xb5\x2f\xfd" + data):
        try:
            decompress(codec, blob, max_size=1 << 20)
        except DecodeError:
            pass


@given(data=st.binary(min_size=1, max_size=3000), codec=st.sampled_from(CODECS[1:]))
@settings(max_examples=60, deadline=None)
def test_truncated_input_gives_a_decode_error_or_a_prefix(data, codec):
    packed = compress(codec, data * 3)
    for cut in range(len(packed)):
        try:
            out = decompress(codec, packed[:cut])
        except DecodeError:
            continue
        # e.g. xerial snappy cut at a chunk boundary is a valid, shorter stream
        assert (data * 3).startswith(out)
