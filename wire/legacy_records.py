"""Read-only decoding of legacy message sets (magic 0 and 1), for inspecting old data.

kbroker never writes these: produce requests below v3 are not served with them and stored
data is magic 2.  This exists so tools and tests can read segments or fetch payloads written
by pre-0.11 Kafka, yielding the same :class:`wire.record_batch.Record` type.

Layout (big-endian), repeated back to back::

     0 offset        int64    absolute offset (a compressed wrapper: its LAST inner offset)
     8 messageSize   int32    bytes that follow (= total - 12, the same LOG_OVERHEAD as v2)
    12 crc           uint32   CRC-32 (zlib/IEEE, *not* Castagnoli) of bytes 16 .. end
    16 magic         int8     0 or 1 (same position as a v2 batch's magic, by design)
    17 attributes    int8     bits 0-2 compression (1 gzip, 2 snappy, 3 lz4; no zstd),
                              bit 3 timestamp type (magic 1 only; 1 = LogAppendTime)
    18 timestamp     int64    magic 1 only
       key           int32 length (-1 = null) + bytes
       value         int32 length (-1 = null) + bytes

A compressed message is a *wrapper*: its value is a whole inner message set, compressed.
Only one level of nesting is legal.  Inner offsets (KIP-31):

* wrapper magic 0: inner offsets are absolute (the broker rewrote them on append);
* wrapper magic 1: inner offsets are relative 0..n-1 and the wrapper carries the absolute
  offset of the last one, so ``absolute = wrapper.offset - last_inner + inner``.

Inner timestamps: if a magic-1 wrapper says LogAppendTime, every inner record gets the
wrapper's timestamp.  Magic 0 has no timestamps (reported as -1).

LZ4 under magic 0 was written by Kafka 0.8/0.9 with a wrong frame header checksum
(KAFKA-3160: xxh32 over magic + descriptor instead of the descriptor alone); Java's reader
tolerates it for magic 0 and so do we, by rewriting that one byte before decompressing.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from wire.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, Compression, decompress
from wire.errors import CorruptRecordError, DecodeError
from wire.record_batch import MAGIC_V2, Record, iter_batches

__all__ = [
    "LegacyMessage",
    "iter_all_records",
    "iter_legacy_messages",
    "iter_legacy_records",
]

LOG_OVERHEAD = 12
NO_TIMESTAMP = -1
# crc + magic + attributes + key length + value length (+ timestamp for magic 1)
_MIN_SIZE = {0: 14, 1: 22}
_MAGIC_POS = 16

_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08


class LegacyMessage:
    """One magic 0/1 message (possibly a compressed wrapper) at ``buf[pos:]``: a shallow view.

    Construction checks that the message fits the buffer, its size is plausible and magic is
    0 or 1 (CorruptRecordError otherwise).  :meth:`validate` checks the CRC.
    """

    __slots__ = ("_buf", "_pos", "offset", "size", "crc", "magic", "attributes", "timestamp")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        if pos < 0 or len(buf) - pos < LOG_OVERHEAD + 6:
            raise CorruptRecordError("legacy message header truncated")
        self.offset, self.size, self.crc, self.magic, self.attributes = _HEAD.unpack_from(buf, pos)
        if self.magic not in _MIN_SIZE:
            raise CorruptRecordError(f"legacy message magic {self.magic} is not 0 or 1")
        if self.size < _MIN_SIZE[self.magic]:
            raise CorruptRecordError(f"legacy message size {self.size} below the minimum")
        if pos + LOG_OVERHEAD + self.size > len(buf):
            raise CorruptRecordError("legacy message runs past the end of the buffer")
        self.timestamp = _I64.unpack_from(buf, pos + 18)[0] if self.magic == 1 else NO_TIMESTAMP
        self._buf = buf
        self._pos = pos

    def __repr__(self) -> str:
        return (
            f"LegacyMessage(offset={self.offset}, magic={self.magic}, size={self.size}, "
            f"attributes={self.attributes:#x})"
        )

    @property
    def size_in_bytes(self) -> int:
        return self.size + LOG_OVERHEAD

    @property
    def compression(self) -> Compression:
        codec_id = self.attributes & _COMPRESSION_MASK
        if codec_id > Compression.LZ4:  # zstd needs magic 2 (KIP-110)
            raise CorruptRecordError(f"compression codec {codec_id} invalid for magic {self.magic}")
        return Compression(codec_id)

    @property
    def is_log_append_time(self) -> bool:
        return self.magic == 1 and bool(self.attributes & _TIMESTAMP_TYPE_BIT)

    def view(self) -> memoryview:
        return memoryview(self._buf)[self._pos : self._pos + self.size_in_bytes]

    def compute_crc(self) -> int:
        return zlib.crc32(memoryview(self._buf)[self._pos + _MAGIC_POS : self._pos + self.size_in_bytes])

    def is_crc_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def validate(self) -> None:
        if not self.is_crc_valid():
            raise CorruptRecordError(
                f"legacy message CRC mismatch at offset {self.offset}: stored {self.crc:#010x}, "
                f"computed {self.compute_crc():#010x}"
            )
        self.compression  # noqa: B018 - raises for invalid codecs

    def key_value(self) -> tuple[bytes | None, bytes | None]:
        """(key, value) as stored; for a wrapper the value is the compressed inner set."""
        buf = self._buf
        end = self._pos + self.size_in_bytes
        pos = self._pos + (26 if self.magic == 1 else 18)
        key, pos = _read_bytes(buf, pos, end)
        value, pos = _read_bytes(buf, pos, end)
        if pos != end:
            raise CorruptRecordError(f"{end - pos} stray bytes after the legacy message value")
        return key, value

    def records(
        self, *, check_crc: bool = True, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> Iterator[Record]:
        """The record(s) in this message: one, or the inner records of a compressed wrapper."""
        if check_crc:
            self.validate()
        key, value = self.key_value()
        codec = self.compression
        if codec is Compression.NONE:
            yield Record(self.offset, self.timestamp, key, value, [], self.attributes)
            return
        if value is None:
            raise CorruptRecordError("compressed legacy wrapper message has a null value")
        yield from self._inner_records(codec, value, check_crc, max_decompressed_bytes)

    def _inner_records(
        self, codec: Compression, value: bytes, check_crc: bool, max_bytes: int
    ) -> Iterator[Record]:
        if codec is Compression.LZ4 and self.magic == 0:
            value = _fix_kafka_3160_header_checksum(value)
        try:
            inner = decompress(codec, value, max_bytes)
        except DecodeError as e:
            raise CorruptRecordError(f"cannot decompress legacy wrapper: {e}") from None
        messages = []
        pos = 0
        while pos < len(inner):
            msg = LegacyMessage(inner, pos)  # an incomplete inner message is corrupt, not "partial"
            if msg.attributes & _COMPRESSION_MASK:
                raise CorruptRecordError("nested compression inside a legacy wrapper message")
            messages.append(msg)
            pos += msg.size_in_bytes
        if not messages:
            raise CorruptRecordError("compressed legacy wrapper with no inner messages")
        # As Java's DeepRecordsIterator: a negative base means the wrapper was never given an
        # offset (a producer's own request, wrapper offset 0), so inner offsets stay relative.
        shift = self.offset - messages[-1].offset if self.magic > 0 else 0
        if shift < 0:
            shift = 0
        append_time = self.timestamp if self.is_log_append_time else None
        for msg in messages:
            if check_crc:
                msg.validate()
            key, value = msg.key_value()
            timestamp = append_time if append_time is not None else msg.timestamp
            yield Record(msg.offset + shift, timestamp, key, value, [], msg.attributes)


def _read_bytes(buf, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError("legacy message truncated inside a length field")
    (n,) = _I32.unpack_from(buf, pos)
    pos += 4
    if n == -1:
        return None, pos
    if n < 0 or pos + n > end:
        raise CorruptRecordError(f"legacy message length {n} out of bounds")
    return bytes(buf[pos : pos + n]), pos + n


# --------------------------------------------------------------------------- iteration


def iter_legacy_messages(
    buf: bytes | bytearray | memoryview, pos: int = 0
) -> Iterator[LegacyMessage]:
    """Shallow iteration over consecutive messages; stops before a partial trailing one."""
    n = len(buf)
    while n - pos >= LOG_OVERHEAD:
        size = _I32.unpack_from(buf, pos + 8)[0]
        if size < _MIN_SIZE[0]:
            raise CorruptRecordError(f"legacy message size {size} at position {pos} is impossible")
        if pos + LOG_OVERHEAD + size > n:
            return
        msg = LegacyMessage(buf, pos)
        yield msg
        pos += msg.size_in_bytes


def iter_legacy_records(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    check_crc: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Iterator[Record]:
    """Every record of a magic 0/1 message set, decompressing wrappers (deep iteration)."""
    for msg in iter_legacy_messages(buf, pos):
        yield from msg.records(check_crc=check_crc, max_decompressed_bytes=max_decompressed_bytes)


def iter_all_records(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    check_crc: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Iterator[Record]:
    """Records of a buffer mixing magic 0, 1 and 2 entries (e.g. an upgraded log segment).

    Dispatches on the magic byte, which sits at byte 16 in every format.
    """
    n = len(buf)
    while n - pos >= _MAGIC_POS + 1:
        size = _I32.unpack_from(buf, pos + 8)[0]
        if size < _MIN_SIZE[0]:
            raise CorruptRecordError(f"entry size {size} at position {pos} is impossible")
        if pos + LOG_OVERHEAD + size > n:
            return
        magic = buf[pos + _MAGIC_POS]
        if magic == MAGIC_V2:
            batch = next(iter_batches(buf, pos))
            if check_crc:
                batch.validate()
            yield from batch.records(max_decompressed_bytes)
        else:
            yield from LegacyMessage(buf, pos).records(
                check_crc=check_crc, max_decompressed_bytes=max_decompressed_bytes
            )
        pos += LOG_OVERHEAD + size


# --------------------------------------------------------------------------- KAFKA-3160


def _fix_kafka_3160_header_checksum(frame: bytes) -> bytes:
    """Rewrite an LZ4 frame's header checksum byte to the correct value.

    Frame header: magic (4) | FLG (1) | BD (1) | content size (8, if FLG bit 3) |
    dict id (4, if FLG bit 0) | HC (1) where HC = (xxh32(FLG..before HC) >> 8) & 0xFF.
    Kafka 0.8/0.9 hashed from the magic instead.  Anything that does not look like an LZ4
    frame is returned unchanged, for the decompressor to reject.
    """
    if len(frame) < 7 or frame[:4] != b"\x04\x22\x4d\x18":
        return frame
    flg = frame[4]
    hc_pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(frame) <= hc_pos:
        return frame
    hc = (_xxh32(frame[4:hc_pos]) >> 8) & 0xFF
    if frame[hc_pos] == hc:
        return frame
    return frame[:hc_pos] + bytes((hc,)) + frame[hc_pos + 1 :]


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 (only ever used on an LZ4 frame descriptor of <= 15 bytes)."""
    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while i + 16 <= n:
            for lane in range(4):
                word = int.from_bytes(data[i : i + 4], "little")
                v[lane] = (_rotl((v[lane] + word * _P2) & _M32, 13) * _P1) & _M32
                i += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[i : i + 4], "little") * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
