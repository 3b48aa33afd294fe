"""Magic v2 record batches (KIP-98): a zero-copy header view, lazy record decoding, a builder.

Batch layout (big-endian; offsets are from the start of the batch)::

     0 baseOffset            int64   \\ LOG_OVERHEAD (12 bytes): the log's own framing,
     8 batchLength           int32   /  batchLength = total size - 12
    12 partitionLeaderEpoch  int32   stamped by the leader
    16 magic                 int8    = 2
    17 crc                   uint32  CRC-32C (Castagnoli) of bytes 21 .. end
    21 attributes            int16   bits 0-2 compression, 3 timestamp type (1 = LogAppendTime),
                                     4 transactional, 5 control, 6 has delete horizon
    23 lastOffsetDelta       int32
    27 baseTimestamp         int64   (the delete horizon when bit 6 is set)
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 recordCount           int32
    61 records...                    compressed as a whole when bits 0-2 != 0

Why the CRC starts at byte 21: the broker rewrites ``baseOffset`` and ``partitionLeaderEpoch``
on every append without recomputing it (:func:`set_base_offset`,
:func:`set_partition_leader_epoch`).  Anything from ``attributes`` on (LogAppendTime bit,
maxTimestamp) needs a new CRC (:func:`set_log_append_time`).

Record layout (all lengths are zigzag varints, -1 = null)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value |
    headerCount varint | [headerKeyLength varint | key utf-8 | headerValueLength varint | value]*

:class:`RecordBatch` reads header fields straight from the buffer with ``struct.unpack_from``
(O(1), record bytes untouched, and always current even after an in-place patch).  Decoding
errors raise :class:`~wire.errors.CorruptRecordError`, never IndexError/struct.error.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum

import crc32c as _crc32c

from wire.batch_header import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    HEADER_STRUCT,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
)
from wire.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Compression,
    compress,
    decompress,
)
from wire.errors import CorruptRecordError, DecodeError
from wire.varint import (
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
)

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "ControlRecordType",
    "Record",
    "RecordBatch",
    "TimestampType",
    "build_batch",
    "build_control_batch",
    "decode_control_record",
    "iter_batches",
    "set_base_offset",
    "set_log_append_time",
    "set_max_timestamp",
    "set_partition_leader_epoch",
]

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part not counted by batchLength
MAGIC_V2 = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

# Smallest legal batchLength: a header with zero records.
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

# Field offsets inside the batch.
_BASE_OFFSET = 0
_LENGTH = 8
_PARTITION_LEADER_EPOCH = 12
_MAGIC = 16
_CRC = 17
_ATTRIBUTES = 21
_LAST_OFFSET_DELTA = 23
_BASE_TIMESTAMP = 27
_MAX_TIMESTAMP = 35
_PRODUCER_ID = 43
_PRODUCER_EPOCH = 51
_BASE_SEQUENCE = 53
_RECORD_COUNT = 57
_CRC_START = _ATTRIBUTES

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
# The whole header in one call, for the builder (the layout lives in wire.batch_header).
_HEADER = HEADER_STRUCT


# A record is at least: length, attributes, timestampDelta, offsetDelta, keyLength,
# valueLength, headerCount = 7 bytes.  Used to reject absurd recordCounts before looping.
_MIN_RECORD_SIZE = 7

_I32_MAX = (1 << 31) - 1


class TimestampType(IntEnum):
    """Attribute bit 3: who chose the timestamps."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(IntEnum):
    """Control record key ``type`` (Kafka's ``ControlRecordType``)."""

    ABORT = 0
    COMMIT = 1


@dataclass(slots=True)
class Record:
    """One decoded record.  ``offset``/``timestamp`` are absolute (base + delta)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    attributes: int = 0
    offset_delta: int = 0
    timestamp_delta: int = 0


def _compute_crc(buf, pos: int, end: int) -> int:
    return _crc32c.crc32c(memoryview(buf)[pos + _CRC_START : end])


class RecordBatch:
    """A zero-copy view of one magic-2 batch at ``buf[pos:]``.

    Constructing one checks only that the 61-byte header is present and magic is 2
    (CorruptRecordError otherwise); :meth:`validate` checks the rest.  Properties read the
    buffer on each access, so they reflect in-place patches made after construction.
    The buffer may be longer than the batch (e.g. a whole fetched segment slice).
    """

    __slots__ = ("_buf", "_pos")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        if pos < 0 or len(buf) - pos < HEADER_SIZE:
            raise CorruptRecordError(
                f"record batch header needs {HEADER_SIZE} bytes, "
                f"{max(0, len(buf) - pos)} available at position {pos}"
            )
        magic = _I8.unpack_from(buf, pos + _MAGIC)[0]
        if magic != MAGIC_V2:
            raise CorruptRecordError(f"unsupported record batch magic {magic} (want 2)")
        self._buf = buf
        self._pos = pos

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset_delta="
            f"{self.last_offset_delta}, record_count={self.record_count}, "
            f"size={self.size_in_bytes}, attributes={self.attributes:#x})"
        )

    # ------------------------------------------------------------------ header fields

    @property
    def position(self) -> int:
        """Where the batch starts in the underlying buffer."""
        return self._pos

    @property
    def base_offset(self) -> int:
        return _I64.unpack_from(self._buf, self._pos)[0]

    @property
    def batch_length(self) -> int:
        return _I32.unpack_from(self._buf, self._pos + _LENGTH)[0]

    @property
    def size_in_bytes(self) -> int:
        """Total bytes of this batch, header included (batchLength + 12)."""
        return _I32.unpack_from(self._buf, self._pos + _LENGTH)[0] + LOG_OVERHEAD

    @property
    def partition_leader_epoch(self) -> int:
        return _I32.unpack_from(self._buf, self._pos + _PARTITION_LEADER_EPOCH)[0]

    @property
    def magic(self) -> int:
        return _I8.unpack_from(self._buf, self._pos + _MAGIC)[0]

    @property
    def crc(self) -> int:
        return _U32.unpack_from(self._buf, self._pos + _CRC)[0]

    @property
    def attributes(self) -> int:
        return _I16.unpack_from(self._buf, self._pos + _ATTRIBUTES)[0]

    @property
    def compression(self) -> Compression:
        """The codec; CorruptRecordError for the unassigned ids 5-7."""
        codec_id = self.attributes & COMPRESSION_MASK
        try:
            return Compression(codec_id)
        except ValueError:
            raise CorruptRecordError(f"unknown compression codec id {codec_id}") from None

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & TIMESTAMP_TYPE_BIT:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        """baseTimestamp doubles as the delete horizon when attribute bit 6 is set (KIP-534)."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_offset_delta(self) -> int:
        return _I32.unpack_from(self._buf, self._pos + _LAST_OFFSET_DELTA)[0]

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def base_timestamp(self) -> int:
        return _I64.unpack_from(self._buf, self._pos + _BASE_TIMESTAMP)[0]

    @property
    def max_timestamp(self) -> int:
        return _I64.unpack_from(self._buf, self._pos + _MAX_TIMESTAMP)[0]

    @property
    def producer_id(self) -> int:
        return _I64.unpack_from(self._buf, self._pos + _PRODUCER_ID)[0]

    @property
    def producer_epoch(self) -> int:
        return _I16.unpack_from(self._buf, self._pos + _PRODUCER_EPOCH)[0]

    @property
    def base_sequence(self) -> int:
        return _I32.unpack_from(self._buf, self._pos + _BASE_SEQUENCE)[0]

    @property
    def last_sequence(self) -> int:
        """baseSequence + lastOffsetDelta, wrapping past int32 max to 0 as Kafka's does."""
        base = self.base_sequence
        if base == NO_SEQUENCE:
            return NO_SEQUENCE
        delta = self.last_offset_delta
        if base > _I32_MAX - delta:
            return delta - (_I32_MAX - base) - 1
        return base + delta

    @property
    def record_count(self) -> int:
        return _I32.unpack_from(self._buf, self._pos + _RECORD_COUNT)[0]

    # ------------------------------------------------------------------ bytes and CRC

    def _end(self) -> int:
        """End position of the batch; CorruptRecordError if it lies outside the buffer."""
        length = self.batch_length
        if length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batchLength {length} is below the minimum {_MIN_BATCH_LENGTH}")
        end = self._pos + LOG_OVERHEAD + length
        if end > len(self._buf):
            raise CorruptRecordError(
                f"batch of {length + LOG_OVERHEAD} bytes at position {self._pos} runs past the "
                f"end of a {len(self._buf)}-byte buffer"
            )
        return end

    def view(self) -> memoryview:
        """The batch's bytes (header included), without copying."""
        return memoryview(self._buf)[self._pos : self._end()]

    def compute_crc(self) -> int:
        """CRC-32C of bytes 21 .. end of the batch."""
        return _compute_crc(self._buf, self._pos, self._end())

    def is_crc_valid(self) -> bool:
        try:
            return self.compute_crc() == self.crc
        except CorruptRecordError:
            return False

    def validate(self) -> None:
        """Structural checks a stored or produced batch must pass; CorruptRecordError if not.

        Checks: batchLength within the buffer and >= the header, the CRC, a known codec,
        recordCount >= 0, lastOffsetDelta >= 0 and recordCount <= lastOffsetDelta + 1
        (records have distinct offset deltas; compaction may leave fewer records than
        deltas, even none).  The produce path's stricter rule (recordCount ==
        lastOffsetDelta + 1 > 0, no control batches from clients) belongs to the log
        validator, which knows where the batch came from.
        """
        end = self._end()
        stored = self.crc
        computed = _compute_crc(self._buf, self._pos, end)
        if stored != computed:
            raise CorruptRecordError(
                f"record batch CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"
            )
        self.compression  # noqa: B018 - raises for codec ids 5-7
        count = self.record_count
        if count < 0:
            raise CorruptRecordError(f"negative record count {count}")
        delta = self.last_offset_delta
        if delta < 0:
            raise CorruptRecordError(f"negative lastOffsetDelta {delta}")
        if count > delta + 1:
            raise CorruptRecordError(
                f"record count {count} exceeds the offset range lastOffsetDelta+1 = {delta + 1}"
            )
        if self.compression is Compression.NONE and count * _MIN_RECORD_SIZE > end - self._pos - HEADER_SIZE:
            raise CorruptRecordError(f"record count {count} cannot fit in {end - self._pos} bytes")

    # ------------------------------------------------------------------ records

    def records(
        self, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> Iterator[Record]:
        """Decode the records lazily (decompressing on the first ``next``).

        Does not check the CRC (call :meth:`validate` for that).  For LogAppendTime batches
        every record's timestamp is ``maxTimestamp``, as Kafka's readers report it.
        CorruptRecordError on any framing problem, including bytes left over after
        ``recordCount`` records or a decompressed size over ``max_decompressed_bytes``.
        """
        return self._iter_records(max_decompressed_bytes)

    def __iter__(self) -> Iterator[Record]:
        return self._iter_records(DEFAULT_MAX_DECOMPRESSED_BYTES)

    def _iter_records(self, max_decompressed_bytes: int) -> Iterator[Record]:
        end = self._end()
        count = self.record_count
        if count < 0:
            raise CorruptRecordError(f"negative record count {count}")
        codec = self.compression
        body = memoryview(self._buf)[self._pos + HEADER_SIZE : end]
        if codec is not Compression.NONE:
            try:
                data = decompress(codec, body, max_decompressed_bytes)
            except DecodeError as e:
                raise CorruptRecordError(f"cannot decompress record batch: {e}") from None
        else:
            # One memcpy of the body makes every later key/value slice a plain bytes slice,
            # which is markedly faster than slicing a memoryview and copying each piece.
            data = bytes(body)
        if count * _MIN_RECORD_SIZE > len(data):
            raise CorruptRecordError(f"record count {count} cannot fit in {len(data)} bytes")
        base_offset = self.base_offset
        base_ts = self.base_timestamp
        append_time = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_BIT else None
        pos = 0
        for _ in range(count):
            rec, pos = _decode_record(data, pos, base_offset, base_ts, append_time)
            yield rec
        if pos != len(data):
            raise CorruptRecordError(
                f"{len(data) - pos} bytes left over after {count} records in the batch"
            )


def _decode_record(
    data, pos: int, base_offset: int, base_ts: int, append_time: int | None
) -> tuple[Record, int]:
    """One record at ``data[pos]`` -> (Record, position after it).  CorruptRecordError."""
    try:
        length, pos = decode_varint(data, pos)
        end = pos + length
        if length < _MIN_RECORD_SIZE - 1 or end > len(data):
            raise CorruptRecordError(f"record length {length} out of bounds")
        attributes = data[pos]
        # Single-byte varints (values -64..63) are the common case for the deltas and short
        # lengths: decode them inline and call the general decoder only when needed.
        b = data[pos + 1]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            ts_delta, pos = decode_varlong(data, pos + 1)
        b = data[pos]
        if b < 0x80:
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            offset_delta, pos = decode_varint(data, pos)
        b = data[pos]
        if b < 0x80:
            key_len = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            key_len, pos = decode_varint(data, pos)
        if key_len < 0:
            key = None
        else:
            if pos + key_len > end:
                raise CorruptRecordError(f"record key length {key_len} out of bounds")
            key = bytes(data[pos : pos + key_len])
            pos += key_len
        value_len, pos = decode_varint(data, pos)
        if value_len < 0:
            value = None
        else:
            if pos + value_len > end:
                raise CorruptRecordError(f"record value length {value_len} out of bounds")
            value = bytes(data[pos : pos + value_len])
            pos += value_len
        header_count, pos = decode_varint(data, pos)
        if header_count < 0:
            raise CorruptRecordError(f"negative header count {header_count}")
        # Each header takes at least 2 bytes (two length varints).
        if header_count * 2 > end - pos:
            raise CorruptRecordError(f"header count {header_count} cannot fit in the record")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(header_count):
            hk_len, pos = decode_varint(data, pos)
            if hk_len < 0 or pos + hk_len > end:
                raise CorruptRecordError(f"header key length {hk_len} out of bounds")
            h_key = str(data[pos : pos + hk_len], "utf-8")
            pos += hk_len
            hv_len, pos = decode_varint(data, pos)
            if hv_len < 0:
                h_value = None
            else:
                if pos + hv_len > end:
                    raise CorruptRecordError(f"header value length {hv_len} out of bounds")
                h_value = bytes(data[pos : pos + hv_len])
                pos += hv_len
            headers.append((h_key, h_value))
    except CorruptRecordError:
        raise
    except (DecodeError, ValueError, IndexError) as e:  # UnicodeDecodeError is a ValueError
        raise CorruptRecordError(f"malformed record: {e}") from None
    if pos != end:
        raise CorruptRecordError(f"record framing mismatch: length says {end}, fields end at {pos}")
    timestamp = append_time if append_time is not None else base_ts + ts_delta
    return (
        Record(
            base_offset + offset_delta,
            timestamp,
            key,
            value,
            headers,
            attributes,
            offset_delta,
            ts_delta,
        ),
        pos,
    )


def decode_control_record(record: Record) -> tuple[ControlRecordType | int, int | None]:
    """(type, coordinator epoch) of a control record; epoch is None if the value is absent.

    Key: version int16 (0) + type int16.  Value (transaction markers): version int16 (0) +
    coordinatorEpoch int32; newer versions append fields, which are ignored.
    """
    key = record.key
    if key is None or len(key) < 4:
        raise CorruptRecordError("control record key shorter than 4 bytes")
    ctype = _I16.unpack_from(key, 2)[0]
    try:
        ctype = ControlRecordType(ctype)
    except ValueError:
        pass  # unknown types (e.g. KRaft's LEADER_CHANGE = 2) are reported as plain ints
    value = record.value
    epoch = _I32.unpack_from(value, 2)[0] if value is not None and len(value) >= 6 else None
    return ctype, epoch


# --------------------------------------------------------------------------- iteration


def iter_batches(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[RecordBatch]:
    """Consecutive batches from ``buf[pos:]``.

    Stops cleanly before a partial trailing batch (fetch responses may end with one, cut at
    the fetch size).  CorruptRecordError for a batchLength below the header size or a magic
    other than 2.  Only headers are read: O(1) per batch.
    """
    n = len(buf)
    while n - pos >= LOG_OVERHEAD:
        length = _I32.unpack_from(buf, pos + _LENGTH)[0]
        if length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"batchLength {length} at position {pos} is below the minimum {_MIN_BATCH_LENGTH}"
            )
        end = pos + LOG_OVERHEAD + length
        if end > n:
            return
        yield RecordBatch(buf, pos)
        pos = end


# --------------------------------------------------------------------------- in-place patches


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Overwrite baseOffset of the batch at ``pos``.  Outside the CRC: no recompute."""
    _I64.pack_into(buf, pos + _BASE_OFFSET, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Overwrite partitionLeaderEpoch of the batch at ``pos``.  Outside the CRC."""
    _I32.pack_into(buf, pos + _PARTITION_LEADER_EPOCH, epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, now_ms: int) -> None:
    """Mark the batch at ``pos`` LogAppendTime with maxTimestamp = ``now_ms``; recompute CRC.

    This is Kafka's ``setMaxTimestamp(LOG_APPEND_TIME, now)``: record timestamps stay as
    written, readers report maxTimestamp for every record of such a batch.
    """
    batch = RecordBatch(buf, pos)
    end = batch._end()
    attributes = batch.attributes | TIMESTAMP_TYPE_BIT
    _I16.pack_into(buf, pos + _ATTRIBUTES, attributes)
    _I64.pack_into(buf, pos + _MAX_TIMESTAMP, now_ms)
    _U32.pack_into(buf, pos + _CRC, _compute_crc(buf, pos, end))


def set_max_timestamp(buf: bytearray | memoryview, pos: int, timestamp_type: TimestampType | int,
                      max_timestamp: int) -> bool:
    """Kafka's ``DefaultRecordBatch.setMaxTimestamp``: give the batch at ``pos`` this timestamp
    type and maxTimestamp, recomputing the CRC; nothing is written (False) when both are
    already so.  As Kafka's ``computeAttributes`` does, the rewritten attributes keep only
    the codec, transactional and control bits plus the timestamp type (a client batch has
    no other bit).  True when the batch was rewritten.
    """
    attributes = _I16.unpack_from(buf, pos + _ATTRIBUTES)[0]
    log_append = TimestampType(timestamp_type) is TimestampType.LOG_APPEND_TIME
    if bool(attributes & TIMESTAMP_TYPE_BIT) == log_append and \
            _I64.unpack_from(buf, pos + _MAX_TIMESTAMP)[0] == max_timestamp:
        return False
    end = pos + LOG_OVERHEAD + _I32.unpack_from(buf, pos + _LENGTH)[0]
    attributes &= COMPRESSION_MASK | TRANSACTIONAL_BIT | CONTROL_BIT
    if log_append:
        attributes |= TIMESTAMP_TYPE_BIT
    _I16.pack_into(buf, pos + _ATTRIBUTES, attributes)
    _I64.pack_into(buf, pos + _MAX_TIMESTAMP, max_timestamp)
    _U32.pack_into(buf, pos + _CRC, _compute_crc(buf, pos, end))
    return True


# --------------------------------------------------------------------------- building


def _encode_record(
    offset_delta: int, timestamp_delta: int, key, value, headers, attributes: int = 0
) -> bytes:
    parts = [
        bytes((attributes & 0xFF,)),
        encode_varlong(timestamp_delta),
        encode_varint(offset_delta),
    ]
    if key is None:
        parts.append(b"\x01")  # zigzag(-1)
    else:
        parts.append(encode_varint(len(key)))
        parts.append(bytes(key))
    if value is None:
        parts.append(b"\x01")
    else:
        parts.append(encode_varint(len(value)))
        parts.append(bytes(value))
    headers = headers or ()
    parts.append(encode_varint(len(headers)))
    for h_key, h_value in headers:
        h_key_bytes = h_key.encode("utf-8") if isinstance(h_key, str) else bytes(h_key)
        parts.append(encode_varint(len(h_key_bytes)))
        parts.append(h_key_bytes)
        if h_value is None:
            parts.append(b"\x01")
        else:
            parts.append(encode_varint(len(h_value)))
            parts.append(bytes(h_value))
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def build_batch(
    records: Iterable[tuple | Record],
    *,
    base_offset: int = 0,
    compression: Compression | int = Compression.NONE,
    timestamp_type: TimestampType | int = TimestampType.CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    base_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Encode one magic-2 batch.

    ``records``: ``(key, value, headers, timestamp)`` tuples (headers: ``[(str, bytes|None)]``
    or None; timestamp None = now) or :class:`Record` objects (their key, value, headers,
    timestamp and attributes are used).  Offset deltas are assigned 0..n-1.  baseTimestamp
    is the first record's timestamp unless given (as Java's builder does; deltas may be
    negative); maxTimestamp is the largest record timestamp (-1 for no records).
    ``last_offset_delta`` overrides n-1, for empty batches compaction keeps.
    """
    items = []
    for r in records:
        if isinstance(r, Record):
            items.append((r.key, r.value, r.headers, r.timestamp, r.attributes))
        else:
            key, value, headers, timestamp = r
            items.append((key, value, headers, timestamp, 0))
    now_ms = None
    timestamps = []
    for item in items:
        ts = item[3]
        if ts is None:
            if now_ms is None:
                now_ms = time.time_ns() // 1_000_000
            ts = now_ms
        timestamps.append(ts)
    if base_timestamp is None:
        base_timestamp = timestamps[0] if timestamps else NO_TIMESTAMP
    max_timestamp = max(timestamps) if timestamps else NO_TIMESTAMP
    body = b"".join(
        _encode_record(i, ts - base_timestamp, key, value, headers, attrs)
        for i, ((key, value, headers, _, attrs), ts) in enumerate(zip(items, timestamps, strict=True))
    )
    codec = Compression(compression)
    if codec is not Compression.NONE:
        body = compress(codec, body, compression_level)
    attributes = int(codec)
    if TimestampType(timestamp_type) is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_BIT
    if is_transactional:
        attributes |= TRANSACTIONAL_BIT
    if is_control:
        attributes |= CONTROL_BIT
    if last_offset_delta is None:
        last_offset_delta = max(len(items) - 1, 0)
    out = bytearray(HEADER_SIZE + len(body))
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        len(out) - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC_V2,
        0,  # CRC, filled in below
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(items),
    )
    out[HEADER_SIZE:] = body
    _U32.pack_into(out, _CRC, _compute_crc(out, 0, len(out)))
    return bytes(out)


def build_control_batch(
    *,
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transaction marker: one control record in a transactional control batch.

    Key = version int16 0 + type int16 (0 abort, 1 commit); value = version int16 0 +
    coordinatorEpoch int32 (Kafka's ``EndTransactionMarker`` v0).
    """
    key = _I16.pack(0) + _I16.pack(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT)
    value = _I16.pack(0) + _I32.pack(coordinator_epoch)
    return build_batch(
        [(key, value, [], timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
