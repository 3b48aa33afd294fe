"""Variable-length integers as Kafka writes them (protobuf-style base-128, little-endian groups).

Formats
-------
* unsigned varint: 7 bits per byte, least significant group first, high bit = "more follows".
  Used by flexible versions (compact lengths, tagged fields).  32-bit: at most 5 bytes.
* varint / varlong: the signed value is zigzag-mapped first (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...)
  so small negatives stay short; then written as an unsigned varint.  Record fields use them
  (lengths with -1 = null, timestamp/offset deltas).  varint is 32-bit (<= 5 bytes), varlong
  64-bit (<= 10 bytes), as in Kafka's ``ByteUtils.readVarint``/``readVarlong``.

Decoders take a bytes-like ``buf`` (bytes, bytearray or memoryview of bytes) and a position and
return ``(value, new_position)``.  They never raise IndexError: a truncated or over-long varint
raises :class:`wire.errors.DecodeError`.  A value that does not fit its width (e.g. a 5-byte
varint carrying more than 32 bits) is rejected rather than silently truncated like Java does:
no real client writes one, so it can only be garbage.

The one-byte case (values -64..63 / 0..127) is by far the most common in records, and two
bytes covers most of the rest (lengths and deltas below 8192), so every decoder tries those
inline before entering the general loop.
"""

from __future__ import annotations

from wire.errors import DecodeError

__all__ = [
    "decode_unsigned_varint",
    "decode_unsigned_varlong",
    "decode_varint",
    "decode_varlong",
    "encode_unsigned_varint",
    "encode_unsigned_varlong",
    "encode_varint",
    "encode_varlong",
    "size_of_unsigned_varint",
    "size_of_varint",
    "size_of_varlong",
    "write_unsigned_varint",
    "write_varint",
    "write_varlong",
]

_U32_MAX = (1 << 32) - 1
_U64_MAX = (1 << 64) - 1
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1

# Pre-encoded single bytes: bytes([b]) allocates, indexing a tuple does not.
_ONE_BYTE = tuple(bytes((i,)) for i in range(128))


# --------------------------------------------------------------------------- decoding


def _decode_unsigned_slow(buf, pos: int, max_bytes: int, max_value: int) -> tuple[int, int]:
    """The multi-byte loop shared by every decoder.  ``pos`` points at the first byte."""
    if pos < 0:
        raise DecodeError(f"negative position {pos}")
    result = 0
    shift = 0
    end = len(buf)
    limit = pos + max_bytes
    while True:
        if pos >= end:
            raise DecodeError("truncated varint")
        if pos >= limit:
            raise DecodeError(f"varint longer than {max_bytes} bytes")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result > max_value:
                raise DecodeError(f"varint value {result:#x} out of range")
            return result, pos
        shift += 7


def decode_unsigned_varint(buf, pos: int = 0) -> tuple[int, int]:
    """Unsigned 32-bit varint at ``buf[pos]`` -> (value, next position)."""
    if 0 <= pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        if pos + 1 < len(buf) and buf[pos + 1] < 0x80:
            return (b & 0x7F) | (buf[pos + 1] << 7), pos + 2
    elif pos >= 0:
        raise DecodeError("truncated varint")
    return _decode_unsigned_slow(buf, pos, 5, _U32_MAX)


def decode_unsigned_varlong(buf, pos: int = 0) -> tuple[int, int]:
    """Unsigned 64-bit varint at ``buf[pos]`` -> (value, next position)."""
    if 0 <= pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        if pos + 1 < len(buf) and buf[pos + 1] < 0x80:
            return (b & 0x7F) | (buf[pos + 1] << 7), pos + 2
    elif pos >= 0:
        raise DecodeError("truncated varint")
    return _decode_unsigned_slow(buf, pos, 10, _U64_MAX)


def decode_varint(buf, pos: int = 0) -> tuple[int, int]:
    """Zigzag signed 32-bit varint at ``buf[pos]`` -> (value, next position)."""
    if 0 <= pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        if pos + 1 < len(buf) and buf[pos + 1] < 0x80:
            u = (b & 0x7F) | (buf[pos + 1] << 7)
            return (u >> 1) ^ -(u & 1), pos + 2
    elif pos >= 0:
        raise DecodeError("truncated varint")
    u, pos = _decode_unsigned_slow(buf, pos, 5, _U32_MAX)
    return (u >> 1) ^ -(u & 1), pos


def decode_varlong(buf, pos: int = 0) -> tuple[int, int]:
    """Zigzag signed 64-bit varint at ``buf[pos]`` -> (value, next position)."""
    if 0 <= pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        if pos + 1 < len(buf) and buf[pos + 1] < 0x80:
            u = (b & 0x7F) | (buf[pos + 1] << 7)
            return (u >> 1) ^ -(u & 1), pos + 2
    elif pos >= 0:
        raise DecodeError("truncated varint")
    u, pos = _decode_unsigned_slow(buf, pos, 10, _U64_MAX)
    return (u >> 1) ^ -(u & 1), pos


# --------------------------------------------------------------------------- encoding


def _encode_unsigned(value: int) -> bytes:
    if value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_unsigned_varint(value: int) -> bytes:
    """Unsigned 32-bit varint.  ValueError if ``value`` is outside 0..2**32-1."""
    if not 0 <= value <= _U32_MAX:
        raise ValueError(f"unsigned varint out of range: {value}")
    return _encode_unsigned(value)


def encode_unsigned_varlong(value: int) -> bytes:
    """Unsigned 64-bit varint.  ValueError if ``value`` is outside 0..2**64-1."""
    if not 0 <= value <= _U64_MAX:
        raise ValueError(f"unsigned varlong out of range: {value}")
    return _encode_unsigned(value)


def encode_varint(value: int) -> bytes:
    """Zigzag signed 32-bit varint.  ValueError if ``value`` does not fit an int32."""
    if not _I32_MIN <= value <= _I32_MAX:
        raise ValueError(f"varint out of range: {value}")
    return _encode_unsigned((value << 1) ^ (value >> 31))


def encode_varlong(value: int) -> bytes:
    """Zigzag signed 64-bit varint.  ValueError if ``value`` does not fit an int64."""
    if not _I64_MIN <= value <= _I64_MAX:
        raise ValueError(f"varlong out of range: {value}")
    return _encode_unsigned((value << 1) ^ (value >> 63))


def write_unsigned_varint(out: bytearray, value: int) -> None:
    """Append an unsigned 32-bit varint to ``out``."""
    out += encode_unsigned_varint(value)


def write_varint(out: bytearray, value: int) -> None:
    """Append a zigzag 32-bit varint to ``out``."""
    out += encode_varint(value)


def write_varlong(out: bytearray, value: int) -> None:
    """Append a zigzag 64-bit varint to ``out``."""
    out += encode_varlong(value)


def size_of_unsigned_varint(value: int) -> int:
    """Encoded size in bytes of a non-negative value (any width)."""
    return max(1, (value.bit_length() + 6) // 7)


def size_of_varint(value: int) -> int:
    """Encoded size in bytes of a zigzag 32-bit varint."""
    return size_of_unsigned_varint((value << 1) ^ (value >> 31))


def size_of_varlong(value: int) -> int:
    """Encoded size in bytes of a zigzag 64-bit varint."""
    return size_of_unsigned_varint((value << 1) ^ (value >> 63))
