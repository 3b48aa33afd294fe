"""Kafka's primitive types over a byte buffer: a sticky-error Reader and a Writer.

The Reader follows franz-go's kbin: a short read sets ``failed`` and returns a zero
value, so decoding code needs no checks after every field; ``finish()`` raises one
``DecodeError`` at the end.  Lengths (strings, bytes, arrays) are checked against the
bytes left *before* anything is allocated, so a lying length costs nothing.

Formats (big-endian): int8/16/32/64, uint16/32, float64 (IEEE 754), bool (1 byte, non-zero
is true), uuid (16 bytes), unsigned varint (7 bits per byte, low first, at most 5 bytes
for 32-bit values and 10 for 64-bit), zigzag varint/varlong.  Strings are UTF-8 with an
int16 length (-1 = null) or, in flexible versions, an unsigned varint of length + 1
(0 = null); bytes likewise with int32 / varint; arrays with int32 count / varint count + 1.
"""

from __future__ import annotations

import struct
import uuid

from wire.errors import DecodeError, EncodeError
from wire.varint import encode_unsigned_varint

_i8 = struct.Struct(">b")
_i16 = struct.Struct(">h")
_u16 = struct.Struct(">H")
_i32 = struct.Struct(">i")
_u32 = struct.Struct(">I")
_i64 = struct.Struct(">q")
_f64 = struct.Struct(">d")
ZERO_UUID = uuid.UUID(int=0)

INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


class Reader:
    """Sticky-error reader over a bytes-like object (kept as a memoryview: no copies)."""

    __slots__ = ("buf", "pos", "end", "failed", "why")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None):
        self.buf = buf if isinstance(buf, memoryview) else memoryview(buf)
        self.pos = pos
        self.end = len(self.buf) if end is None else end
        self.failed = False
        self.why = ""

    def fail(self, why: str) -> None:
        if not self.failed:
            self.failed = True
            self.why = f"{why} at byte {self.pos}"

    def remaining(self) -> int:
        return self.end - self.pos

    def _fixed(self, st: struct.Struct) -> int | float:
        p = self.pos
        if self.failed or p + st.size > self.end:
            self.fail("truncated input")
            return 0
        self.pos = p + st.size
        return st.unpack_from(self.buf, p)[0]

    def int8(self) -> int:
        return self._fixed(_i8)  # type: ignore[return-value]

    def int16(self) -> int:
        return self._fixed(_i16)  # type: ignore[return-value]

    def uint16(self) -> int:
        return self._fixed(_u16)  # type: ignore[return-value]

    def int32(self) -> int:
        return self._fixed(_i32)  # type: ignore[return-value]

    def uint32(self) -> int:
        return self._fixed(_u32)  # type: ignore[return-value]

    def int64(self) -> int:
        return self._fixed(_i64)  # type: ignore[return-value]

    def float64(self) -> float:
        return self._fixed(_f64)

    def bool(self) -> bool:
        return self._fixed(_i8) != 0

    def take(self, n: int) -> memoryview:
        p = self.pos
        if self.failed or n < 0 or p + n > self.end:
            self.fail(f"length {n} past the end")
            return self.buf[0:0]
        self.pos = p + n
        return self.buf[p : p + n]

    def uuid(self) -> uuid.UUID:
        b = bytes(self.take(16))
        if self.failed:
            return ZERO_UUID
        return ZERO_UUID if b == bytes(16) else uuid.UUID(bytes=b)

    def uvarint(self, max_bytes: int = 5) -> int:
        value = shift = 0
        for _ in range(max_bytes):
            if self.failed or self.pos >= self.end:
                self.fail("truncated varint")
                return 0
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        self.fail("varint too long")
        return 0

    def length(self, compact: bool, wide: bool) -> int:
        """A length prefix; -1 means null.  ``wide``: int32 (bytes, arrays) else int16."""
        if compact:
            return self.uvarint() - 1
        return self.int32() if wide else self.int16()

    def string(self, compact: bool) -> str | None:
        n = self.length(compact, wide=False)
        if n < 0:
            return None
        # Malformed UTF-8 becomes U+FFFD, as Java's new String(bytes, UTF_8) does in Kafka.
        return str(self.take(n), "utf-8", "replace")

    def bytes_(self, compact: bool) -> memoryview | None:
        n = self.length(compact, wide=True)
        if n < 0:
            return None
        return self.take(n)

    def array_count(self, compact: bool, min_elem_size: int) -> int:
        """Element count (-1 = null), rejected if the elements cannot fit in what is left."""
        n = self.length(compact, wide=True)
        if n > 0 and n * max(min_elem_size, 1) > self.remaining():
            self.fail(f"array of {n} elements cannot fit")
            return -1
        return n

    def finish(self) -> None:
        if self.failed:
            raise DecodeError(self.why)


class Writer:
    """Accumulates encoded bytes; raw record bytes are kept as separate parts (no copy)."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes | memoryview] = []

    def _int(self, st: struct.Struct, kind: str, v: int) -> None:
        lo, hi = INT_RANGES[kind]
        if not isinstance(v, int) or not lo <= v <= hi:
            raise EncodeError(f"{v!r} is not a valid {kind}")
        self.parts.append(st.pack(v))

    def int8(self, v: int) -> None:
        self._int(_i8, "int8", v)

    def int16(self, v: int) -> None:
        self._int(_i16, "int16", v)

    def uint16(self, v: int) -> None:
        self._int(_u16, "uint16", v)

    def int32(self, v: int) -> None:
        self._int(_i32, "int32", v)

    def uint32(self, v: int) -> None:
        self._int(_u32, "uint32", v)

    def int64(self, v: int) -> None:
        self._int(_i64, "int64", v)

    def float64(self, v: float) -> None:
        self.parts.append(_f64.pack(v))

    def bool(self, v: bool) -> None:
        self.parts.append(b"\x01" if v else b"\x00")

    def uuid(self, v: uuid.UUID) -> None:
        self.parts.append(v.bytes)

    def uvarint(self, n: int) -> None:
        try:
            self.parts.append(encode_unsigned_varint(n))
        except ValueError as e:
            raise EncodeError(str(e)) from None

    def length(self, n: int, compact: bool, wide: bool) -> None:
        if compact:
            self.uvarint(n + 1)
        elif wide:
            self.int32(n)
        else:
            if n > 0x7FFF:
                raise EncodeError(f"string of {n} bytes is too long for an int16 length")
            self.int16(n)

    def string(self, v: str | None, compact: bool) -> None:
        if v is None:
            self.length(-1, compact, wide=False)
            return
        b = v.encode("utf-8")
        self.length(len(b), compact, wide=False)
        self.parts.append(b)

    def bytes_(self, v: bytes | memoryview | None, compact: bool) -> None:
        if v is None:
            self.length(-1, compact, wide=True)
            return
        self.length(len(v), compact, wide=True)
        self.parts.append(v)

    def raw(self, b: bytes | memoryview) -> None:
        self.parts.append(b)

    def getvalue(self) -> bytes:
        return b"".join(self.parts)
