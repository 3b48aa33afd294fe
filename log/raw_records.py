"""Record-level scanning of one v2 batch for the log cleaner, without building ``Record`` objects.

The cleaner reads every record of the segments it cleans twice (once to map keys to their
latest offsets, once to decide what to keep), so it needs only a few fields per record and
the byte span to copy a kept record unchanged.  Record layout (wire/record_batch.py)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint | headers

:func:`batch_records` locates the records area of a batch (in the read buffer itself when
uncompressed, so nothing is copied; else the decompressed bytes); :func:`scan` walks it and
yields :class:`RawRecord`: offsetDelta, timestampDelta, key, whether the value is
present (a null value is a tombstone), and the positions of the fields after the timestamp
(``rest``) and of the record's start and end, so a kept record can be re-emitted with a new timestamp
delta by copying ``data[rest:end]``.  Value and headers are skipped using the record length.

Errors: a malformed record raises ``log.errors.CorruptRecordError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from log.errors import CorruptRecordError
from wire.batch_header import HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from wire.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, decompress
from wire.errors import DecodeError
from wire.varint import decode_varint, decode_varlong

__all__ = ["RawRecord", "batch_records", "scan"]


class RawRecord(NamedTuple):
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    has_value: bool
    attributes: int
    start: int  # position of the record's length varint: data[start:end] is the whole record
    rest: int  # position of offsetDelta: data[rest:end] is everything after the timestamp
    end: int  # position after the record


def batch_records(buf: bytes, pos: int, h: BatchHeader,
                  max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> tuple[bytes, int, int]:
    """(data, start, end): the records area of the batch at ``buf[pos:]`` (header ``h``) is
    ``data[start:end]`` - ``buf`` itself for an uncompressed batch, else its decompression."""
    end = pos + LOG_OVERHEAD + h.batch_length
    if not h.compression:
        return buf, pos + HEADER_SIZE, end
    try:
        data = decompress(h.compression, memoryview(buf)[pos + HEADER_SIZE : end], max_decompressed_bytes)
    except DecodeError as e:
        raise CorruptRecordError(f"cannot decompress record batch at offset {h.base_offset}: {e}") from None
    return data, 0, len(data)


def scan(data: bytes, count: int, pos: int = 0, n: int | None = None) -> Iterator[RawRecord]:
    """The ``count`` records in ``data[pos:n]`` (a batch's records area), in order."""
    if n is None:
        n = len(data)
    try:
        for _ in range(count):
            start = pos
            # one- and two-byte varints inline: lengths of records up to 8 KiB
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | (data[pos + 1] << 7)
                length = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                length, pos = decode_varint(data, pos)
            end = pos + length
            if length < 6 or end > n:
                raise CorruptRecordError(f"record length {length} out of bounds")
            attributes = data[pos]
            b = data[pos + 1]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                rest = pos + 2
            else:
                ts_delta, rest = decode_varlong(data, pos + 1)
            b = data[rest]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                p = rest + 1
            else:
                offset_delta, p = decode_varint(data, rest)
            b = data[p]
            if b < 0x80:
                key_len = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                key_len, p = decode_varint(data, p)
            if key_len < 0:
                key = None
            else:
                if p + key_len > end:
                    raise CorruptRecordError(f"record key length {key_len} out of bounds")
                key = data[p : p + key_len]
                p += key_len
            b = data[p]
            if b < 0x80:
                value_len = (b >> 1) ^ -(b & 1)
            elif data[p + 1] < 0x80:
                u = (b & 0x7F) | (data[p + 1] << 7)
                value_len = (u >> 1) ^ -(u & 1)
            else:
                value_len, _ = decode_varint(data, p)
            yield RawRecord(offset_delta, ts_delta, key, value_len >= 0, attributes, start, rest, end)
            pos = end
    except (IndexError, DecodeError) as e:
        raise CorruptRecordError(f"malformed record: {e}") from None
    if pos != n:
        raise CorruptRecordError(f"{n - pos} bytes left over after {count} records in the batch")
