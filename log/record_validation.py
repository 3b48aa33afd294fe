"""The record walk of Kafka's LogValidator for one magic-2 batch: structure, keys, timestamps.

Kafka's ``LogValidator`` iterates every record of a produced batch (``DefaultRecord.readFrom``
on each, decompressing a compressed batch first) before it assigns offsets.  Iterating is what
rejects a batch whose CRC is right but whose records are not (INVALID_RECORD, Kafka's
``InvalidRecordException`` thrown by the iterator); then ``validateRecord`` checks each record's
key (compacted topics) and timestamp (CreateTime topics), collecting one error per record,
and ``processRecordErrors`` turns them into one INVALID_TIMESTAMP or INVALID_RECORD carrying
every record's error (Kafka's ``RecordValidationException``; Produce v8+ returns them as
``record_errors``).

Two layers, so that a valid batch costs one pass over its bytes and no allocation per record:

* :func:`scan_records` walks ``buf[start:end]`` and returns a :class:`RecordScan` summary
  (smallest/largest timestamp delta, index of the first largest, number of keyless records,
  whether offset deltas are 0..n-1), or raises :class:`MalformedRecordError` with Kafka's
  message.  It is the C function ``log._record_scan.scan`` (log/_record_scan.c, built by
  ``pip install -e .`` through setup.py), or, when that module is not built, the Python twin
  :func:`scan_records_py` (same results and messages; ``tests/unit/log/test_validator.py`` holds
  them to it).  From the summary :func:`check_records` decides in O(1) that every key and
  timestamp is fine, the common case.
* only when the summary says some record may fail (a keyless record on a compacted topic, a
  timestamp delta outside the window, a producer-set LogAppendTime) does
  :func:`check_records` walk again with :func:`iter_record_fields` to name each record, with
  Kafka's messages.

Record layout (zigzag varints; a varint is at most 5 bytes, a varlong at most 10, and bits
shifted past 32/64 are dropped as Java's int/long arithmetic does)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value |
    headerCount varint | (headerKeyLength varint | key | headerValueLength varint | value)*

Stricter than Kafka in one place, on purpose: Kafka's in-place path for compressed batches
(``skipKeyValueIterator``) does not compare a record's length prefix with the fields it
holds; we do (as ``readFrom`` does for uncompressed batches and every consumer does), so
nothing is stored that a Java consumer would refuse.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from log.errors import InvalidRecordError, InvalidTimestampError, RecordError

__all__ = [
    "NATIVE",
    "MalformedRecordError",
    "RecordFields",
    "RecordScan",
    "check_records",
    "iter_record_fields",
    "scan_records",
    "scan_records_py",
]

_PREMATURE_EOF = "Incorrect declared batch size, premature EOF reached"
_REMAINING = "Incorrect declared batch size, records still remaining in file"
_STRUCTURE = "Found invalid record structure"
_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1
_I64_SIGN = 1 << 63


class MalformedRecordError(ValueError):
    """A record that Kafka's ``DefaultRecord.readFrom`` refuses; the message is Kafka's."""


class RecordScan(NamedTuple):
    min_ts_delta: int
    max_ts_delta: int
    index_of_max: int  # first record with max_ts_delta; -1 when there are no records
    keyless: int  # records with a null key
    offsets_in_order: int  # 1 when every offsetDelta equals the record's index


class RecordFields(NamedTuple):
    """One record, as much of it as validation needs (no key/value bytes are copied)."""

    timestamp_delta: int
    offset_delta: int
    key_size: int  # -1 = null
    value_size: int  # -1 = null


class _Underflow(Exception):
    pass


def _varint(data, pos: int, end: int) -> tuple[int, int]:
    """Kafka's ``ByteUtils.readVarint`` (int32, at most 5 bytes) -> (value, next pos)."""
    value = shift = 0
    while True:
        if pos >= end:
            raise _Underflow
        b = data[pos]
        pos += 1
        if b < 0x80:
            value |= b << shift
            break
        value |= (b & 0x7F) << shift
        shift += 7
        if shift > 28:
            raise MalformedRecordError(_STRUCTURE)
    value &= _U32
    return (value >> 1) ^ -(value & 1), pos


def _varlong(data, pos: int, end: int) -> tuple[int, int]:
    """Kafka's ``ByteUtils.readVarlong`` (int64, at most 10 bytes) -> (value, next pos)."""
    value = shift = 0
    while True:
        if pos >= end:
            raise _Underflow
        b = data[pos]
        pos += 1
        if b < 0x80:
            value |= b << shift
            break
        value |= (b & 0x7F) << shift
        shift += 7
        if shift > 63:
            raise MalformedRecordError(_STRUCTURE)
    value &= _U64
    return (value >> 1) ^ -(value & 1), pos


def iter_record_fields(data, start: int, end: int, count: int) -> Iterator[RecordFields]:
    """Walk ``count`` records in ``data[start:end]``; MalformedRecordError (Kafka's message)
    for the first malformed one, or for bytes left after the last.  ``count`` 0 reads
    nothing (Kafka's iterator is empty then, whatever follows)."""
    pos = start
    for _ in range(count):
        if pos >= end:
            raise MalformedRecordError(_PREMATURE_EOF)
        try:
            length, pos = _varint(data, pos, end)
        except _Underflow:
            raise MalformedRecordError(_PREMATURE_EOF) from None
        if length > end - pos:
            raise MalformedRecordError(
                f"Invalid record size: expected {length} bytes in record payload, but instead the "
                f"buffer has only {end - pos} remaining bytes.")
        record_start = pos
        try:
            if pos >= end:
                raise _Underflow
            pos += 1  # attributes: no bit is defined for magic-2 records; Kafka ignores it
            ts_delta, pos = _varlong(data, pos, end)
            offset_delta, pos = _varint(data, pos, end)
            key_size, pos = _varint(data, pos, end)
            if key_size >= 0:
                if key_size > end - pos:
                    raise _Underflow
                pos += key_size
            value_size, pos = _varint(data, pos, end)
            if value_size >= 0:
                if value_size > end - pos:
                    raise _Underflow
                pos += value_size
            headers, pos = _varint(data, pos, end)
            if headers < 0:
                raise MalformedRecordError(f"Found invalid number of record headers {headers}")
            if headers > end - pos:
                raise MalformedRecordError(
                    f"Found invalid number of record headers. {headers} is larger than the "
                    "remaining size of the buffer")
            for _ in range(headers):
                hk, pos = _varint(data, pos, end)
                if hk < 0:
                    raise MalformedRecordError(f"Invalid negative header key size {hk}")
                if hk > end - pos:
                    raise _Underflow
                pos += hk
                hv, pos = _varint(data, pos, end)
                if hv >= 0:
                    if hv > end - pos:
                        raise _Underflow
                    pos += hv
        except _Underflow:
            raise MalformedRecordError(_STRUCTURE) from None
        if pos - record_start != length:
            raise MalformedRecordError(
                f"Invalid record size: expected to read {length} bytes in record payload, but "
                f"instead read {pos - record_start}")
        yield RecordFields(ts_delta, offset_delta, key_size, value_size)
    if count > 0 and pos != end:
        raise MalformedRecordError(_REMAINING)


def scan_records_py(data, start: int, end: int, count: int) -> RecordScan:
    """The pure-Python twin of ``log._record_scan.scan``."""
    min_ts = max_ts = 0
    index_of_max = -1
    keyless = 0
    in_order = 1
    for i, r in enumerate(iter_record_fields(data, start, end, count)):
        d = r.timestamp_delta
        if i == 0 or d < min_ts:
            min_ts = d
        if i == 0 or d > max_ts:
            max_ts, index_of_max = d, i
        if r.key_size < 0:
            keyless += 1
        if r.offset_delta != i:
            in_order = 0
    return RecordScan(min_ts, max_ts, index_of_max, keyless, in_order)


try:
    from log._record_scan import scan as _native_scan
except ImportError:  # not built (a source tree without `pip install -e .`): the twin
    _native_scan = None

NATIVE = _native_scan is not None


def scan_records(data, start: int, end: int, count: int) -> RecordScan:
    """Summary of the ``count`` records in ``data[start:end]``; MalformedRecordError."""
    if _native_scan is None:
        return scan_records_py(data, start, end, count)
    try:
        return RecordScan._make(_native_scan(data, start, end, count))
    except MalformedRecordError:
        raise
    except ValueError as e:
        raise MalformedRecordError(str(e)) from None


def _wrap64(v: int) -> int:
    """Java long arithmetic: wrap to int64."""
    return ((v + _I64_SIGN) & _U64) - _I64_SIGN


def check_records(scan: RecordScan, data, start: int, end: int, count: int,
                  base_offset: int, base_timestamp: int, batch_max_timestamp: int,
                  batch_log_append_time: bool, topic_log_append_time: bool, compacted: bool,
                  now_ms: int, before_max_ms: int, after_max_ms: int,
                  topic_partition: tuple[str, int] | str | None) -> None:
    """Kafka's ``validateRecord`` over each record of one batch, then ``processRecordErrors``.

    A record's timestamp is ``baseTimestamp + timestampDelta`` (Java long arithmetic), or the
    batch's maxTimestamp for every record of a batch marked LogAppendTime.  Per record, the
    first failing check is its error: a null key on a compacted topic (INVALID_RECORD), then,
    on a CreateTime topic, a timestamp other than -1 outside [now - before.max.ms,
    now + after.max.ms] (INVALID_TIMESTAMP), or, otherwise, a batch the producer marked
    LogAppendTime (INVALID_TIMESTAMP).  Any INVALID_TIMESTAMP makes the whole batch
    INVALID_TIMESTAMP, else INVALID_RECORD; ``record_errors`` names every failing record.
    """
    if count <= 0:
        return
    suspicious = compacted and scan.keyless > 0
    if not topic_log_append_time:
        if batch_log_append_time:
            lo = hi = batch_max_timestamp
        else:
            lo, hi = base_timestamp + scan.min_ts_delta, base_timestamp + scan.max_ts_delta
        # inside the window and int64 as plain integers: every record passes; otherwise some
        # record may fail (a -1, a wrapped sum) and each one is judged exactly below
        if lo < now_ms - before_max_ms or hi > now_ms + after_max_ms or lo < -_I64_SIGN or hi >= _I64_SIGN:
            suspicious = True
    elif batch_log_append_time:
        suspicious = True
    if not suspicious:
        return
    if not isinstance(topic_partition, str):   # named only in messages: formatted only for them
        topic_partition = f"{topic_partition[0]}-{topic_partition[1]}" if topic_partition else "unknown"
    errors: list[tuple[bool, RecordError]] = []  # (is a timestamp error, the error)
    for index, r in enumerate(iter_record_fields(data, start, end, count)):
        if compacted and r.key_size < 0:
            errors.append((False, RecordError(
                index, f"Compacted topic cannot accept message without key in topic partition {topic_partition}")))
            continue
        timestamp = batch_max_timestamp if batch_log_append_time else _wrap64(base_timestamp + r.timestamp_delta)
        offset = _wrap64(base_offset + r.offset_delta)
        if not topic_log_append_time and timestamp != -1:
            diff = _wrap64(now_ms - timestamp)
            if diff > before_max_ms or _wrap64(-diff) > after_max_ms:
                errors.append((True, RecordError(
                    index, f"Timestamp {timestamp} of message with offset {offset} is out of range. "
                    f"The timestamp should be within [{_wrap64(now_ms - before_max_ms)}, "
                    f"{_wrap64(now_ms + after_max_ms)}]")))
        elif batch_log_append_time:
            record = (f"DefaultRecord(offset={offset}, timestamp={timestamp}, key={max(r.key_size, 0)} bytes, "
                      f"value={max(r.value_size, 0)} bytes)")
            errors.append((True, RecordError(
                index, f"Invalid timestamp type in message {record}. Producer should not set "
                "timestamp type to LogAppendTime.")))
    if not errors:
        return
    record_errors = tuple(e for _, e in errors)
    if any(is_ts for is_ts, _ in errors):
        raise InvalidTimestampError("One or more records have been rejected due to invalid timestamp",
                                    record_errors=record_errors)
    shown = "[" + ", ".join(str(e) for e in record_errors[:3]) + "]"
    raise InvalidRecordError(f"One or more records have been rejected due to {len(record_errors)} record errors "
                             f"in total, and only showing the first three errors at most: {shown}",
                             record_errors=record_errors)
