"""Record-batch compression codecs, by Kafka's attribute id (bits 0-2 of a batch's attributes).

What is on the wire for each codec (magic 2; magic 0/1 wrapper messages use the same bodies):

* GZIP (1): a gzip member (RFC 1952).  Decoded with zlib in gzip mode; concatenated members
  are accepted (Java's GZIPInputStream reads them too).
* SNAPPY (2): two formats exist in the wild and a reader must take both:
    - the xerial snappy-java "stream" framing that Kafka's Java client writes
      (``SnappyOutputStream``): header ``\\x82SNAPPY\\x00`` + int32 version + int32 compat
      (16 bytes), then chunks ``[int32 compressed length][raw snappy block]``, each block
      holding at most 32 KiB of input;
    - a plain raw snappy block, which librdkafka writes (``rd_kafka_snappy_compress_iov``;
      its reader, ``rd_kafka_snappy_java_uncompress``, also sniffs for the xerial header).
  Version/compat are ignored when reading: some producers (Redpanda, kafka-python#2414) write
  them little-endian.  We write the xerial framing, like the Java client, because every reader
  (Java, librdkafka, kafka-python, aiokafka) understands it.
* LZ4 (3): the LZ4 *frame* format (magic ``04 22 4D 18``), independent blocks, as Java's
  ``Lz4BlockOutputStream`` and librdkafka write for magic >= 1.  (Magic 0's broken header
  checksum, KAFKA-3160, is not supported: legacy data is read-only and rare.)
* ZSTD (4): a zstd frame (RFC 8878); concatenated frames are accepted.

Decompression-bomb guard: :func:`decompress` takes ``max_size`` and raises
:class:`~wire.errors.DecodeError` as soon as the output would exceed it, without materialising
more than ``max_size`` (+1) bytes.  Every codec failure (cramjam/zlib errors, truncation) is
converted to ``DecodeError``; callers that decompress a batch re-raise it as
``CorruptRecordError``.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

import cramjam

from wire.errors import DecodeError

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "Compression",
    "compress",
    "decompress",
]


class Compression(IntEnum):
    """Kafka's compression type ids (``CompressionType`` in the Java client)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# A decompressed batch larger than this is treated as a bomb unless the caller says otherwise.
# Kafka has no hard limit here; 256 MiB is far above any sane batch (max.message.bytes is 1 MiB
# by default) while still bounding memory per request.
DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compat 1 (snappy-java)
_XERIAL_HEADER_SIZE = 16
_XERIAL_BLOCK_SIZE = 32 * 1024  # snappy-java's default block size: input bytes per chunk
_INT32 = struct.Struct(">i")

# cramjam raises DecompressionError for bad input and OSError/ValueError for some truncations.
_CODEC_ERRORS = (cramjam.DecompressionError, OSError, ValueError, TypeError, zlib.error)


# --------------------------------------------------------------------------- compress


def compress(codec: Compression | int, data, level: int | None = None) -> bytes:
    """Compress ``data`` (bytes-like) the way Kafka's Java client does for ``codec``.
    ``level`` is KIP-390's ``compression.<codec>.level`` (None: Kafka's default for the
    codec: gzip -1 = zlib's 6, lz4 9, zstd 3); snappy has no levels."""
    codec = Compression(codec)
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.GZIP:
        # Java's GZIPOutputStream uses Deflater's default (-1, which zlib takes as 6).
        c = zlib.compressobj(6 if level is None or level < 0 else level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if codec is Compression.SNAPPY:
        return _snappy_xerial_compress(data)
    if codec is Compression.LZ4:
        # Frame format with independent blocks and no content checksum, as Java's
        # Lz4BlockOutputStream writes (cramjam's one-shot compress() links blocks).
        c = cramjam.lz4.Compressor(level=9 if level is None else level, content_checksum=False,
                                   block_linked=False)
        c.compress(data if type(data) is bytes else bytes(data))  # takes bytes only
        return bytes(c.finish())
    if codec is Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=3 if level is None else level))
    raise ValueError(f"unknown compression codec {codec!r}")  # pragma: no cover


def _snappy_xerial_compress(data) -> bytes:
    mv = memoryview(data).cast("B")
    parts = [_XERIAL_HEADER]
    for start in range(0, len(mv), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(mv[start : start + _XERIAL_BLOCK_SIZE]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


# --------------------------------------------------------------------------- decompress


def decompress(
    codec: Compression | int, data, max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> bytes:
    """Decompress ``data`` for ``codec``; DecodeError if corrupt or larger than ``max_size``."""
    try:
        codec = Compression(codec)
    except ValueError:
        raise DecodeError(f"unknown compression codec id {codec}") from None
    if codec is Compression.NONE:
        if len(data) > max_size:
            raise DecodeError(f"data exceeds {max_size} bytes")
        return bytes(data)
    try:
        if codec is Compression.GZIP:
            return _gzip_decompress(data, max_size)
        if codec is Compression.SNAPPY:
            return _snappy_decompress(data, max_size)
        if codec is Compression.LZ4:
            return _bounded_cramjam(cramjam.lz4.decompress_into, data, max_size, "lz4")
        return _bounded_cramjam(cramjam.zstd.decompress_into, data, max_size, "zstd")
    except DecodeError:
        raise
    except _CODEC_ERRORS as e:
        raise DecodeError(f"{codec.name.lower()} decompression failed: {e}") from None


def _gzip_decompress(data, max_size: int) -> bytes:
    # zlib with max_length gives an exact, streaming bound.  A gzip body may be several
    # concatenated members; loop over unused_data like gzip.decompress does.
    out = bytearray()
    rest = memoryview(data).cast("B")
    first = True
    while first or rest:
        first = False
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += d.decompress(rest, max_size + 1 - len(out))
        if len(out) > max_size:
            raise DecodeError(f"gzip data decompresses to more than {max_size} bytes")
        if d.unconsumed_tail:
            # Output limit reached with input left: it cannot fit.
            raise DecodeError(f"gzip data decompresses to more than {max_size} bytes")
        if not d.eof:
            raise DecodeError("truncated gzip data")
        rest = memoryview(d.unused_data)
        # Trailing zero padding after the last member is tolerated (as by gzip.decompress).
        if rest and not any(rest):
            break
    return bytes(out)


def _snappy_raw(block, max_size: int) -> bytes:
    # A raw snappy block starts with its uncompressed length (an unsigned varint), so the
    # bound is checked before anything is allocated.
    n = cramjam.snappy.decompress_raw_len(block)
    if n > max_size:
        raise DecodeError(f"snappy block decompresses to {n} bytes, over {max_size}")
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decompress(data, max_size: int) -> bytes:
    mv = memoryview(data).cast("B")
    if len(mv) < _XERIAL_HEADER_SIZE or mv[:8] != _XERIAL_MAGIC:
        return _snappy_raw(mv, max_size)
    parts = []
    total = 0
    pos = _XERIAL_HEADER_SIZE
    end = len(mv)
    while pos < end:
        if end - pos < 4:
            raise DecodeError("truncated xerial snappy chunk length")
        (n,) = _INT32.unpack_from(mv, pos)
        pos += 4
        if n < 0 or n > end - pos:
            raise DecodeError(f"xerial snappy chunk length {n} exceeds the data")
        chunk = _snappy_raw(mv[pos : pos + n], max_size - total)
        total += len(chunk)
        parts.append(chunk)
        pos += n
    return b"".join(parts)


def _bounded_cramjam(decompress_into, data, max_size: int, name: str) -> bytes:
    """Decompress with cramjam into a buffer that grows (doubling) up to ``max_size`` + 1.

    cramjam's ``decompress_into`` stops with "failed to write whole buffer" when the output
    does not fit, so memory stays bounded; the retry costs at most log2(max/initial) passes.
    """
    size = min(max_size + 1, max(64 * 1024, 4 * len(data)))
    while True:
        buf = bytearray(size)
        try:
            n = decompress_into(data, buf)
        except cramjam.DecompressionError as e:
            if "whole buffer" not in str(e):
                raise
            if size > max_size:
                raise DecodeError(f"{name} data decompresses to more than {max_size} bytes") from None
            size = min(max_size + 1, size * 2)
            continue
        if n > max_size:
            raise DecodeError(f"{name} data decompresses to more than {max_size} bytes")
        return bytes(memoryview(buf)[:n])
