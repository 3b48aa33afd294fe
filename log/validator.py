"""LogValidator: check a produced record set and assign its offsets, as a pure function.

``validate_and_assign_offsets(buf, next_offset, now_ms, config, ...)`` is Kafka's
``analyzeAndValidateRecords`` + ``LogValidator.validateMessagesAndAssignOffsets`` for magic 2
without format conversion; recompression to the topic's ``compression.type`` (when it names
a codec the batch does not have) is log/recompression.py.  No I/O, no clock (``now_ms`` is an argument).
``Log.append_as_leader`` calls it under the log lock with ``next_offset = log end offset``; it
can also be called on its own (tests, early rejection).

Checks, each raising the ``log.errors`` exception of the Kafka error a producer expects:

* each batch: magic 2 (0/1: UNSUPPORTED_FOR_MESSAGE_FORMAT, other: CORRUPT_MESSAGE), size <=
  max.message.bytes (MESSAGE_TOO_LARGE), CRC-32C and structure (CORRUPT_MESSAGE);
* from clients (``origin=CLIENT``): baseOffset 0, lastOffsetDelta + 1 == recordCount > 0, no
  control batches, a sequence when there is a producer id (INVALID_RECORD);
* when offsets are assigned (the leader's LogValidator; a follower's append runs none of
  this, as in Kafka): every record is walked in place (log/record_validation.py; compressed
  batches are decompressed first): recordCount equals the records really there, each
  record's length, varints and header count in bounds (INVALID_RECORD with Kafka's
  InvalidRecordException message; a compressed payload that does not decompress is
  CORRUPT_MESSAGE); compacted topics need a key on every record (INVALID_RECORD) and, on
  CreateTime topics, each record's timestamp lies within message.timestamp.before/after.max.ms
  of ``now_ms`` (INVALID_TIMESTAMP); both name each failing record by its index in
  ``exc.record_errors`` (Kafka's ``RecordValidationException``, Produce v8+ ``record_errors``).
  The batch header's own timestamps are not trusted: Kafka checks only the records.

Then, in place: baseOffset := next offset, partitionLeaderEpoch := the leader's epoch (both
outside the CRC), and maxTimestamp := the largest record timestamp (CreateTime) or ``now_ms``
(LogAppendTime, with the timestamp-type bit), with a new CRC only when the header said
otherwise (Kafka's ``setMaxTimestamp``).  ``max_timestamp`` and the offsets of the max come
from the records, so the time index, retention and ListOffsets(-3) follow them.  A
compressed batch whose offset deltas are not 0..n-1 is rebuilt in its codec (Kafka's
``buildRecordsAndAssignOffsets``, "some older clients do not implement the internal offsets
correctly"); an uncompressed one is kept as it is (Kafka does not look).  A partial batch at
the end is dropped, as Kafka's ``trimInvalidBytes`` does.

Cost: for an uncompressed batch the walk is one C pass over the bytes
(``log._record_scan``), with no allocation per record and no copy.
"""

from __future__ import annotations

from dataclasses import dataclass

import crc32c

from log.config import LogConfig
from log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    UnsupportedForMessageFormatError,
)
from log.producer_state import AppendOrigin
from log.recompression import needs_recompression, recompress
from log.record_validation import MalformedRecordError, check_records, scan_records
from wire.batch_header import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_PRODUCER_ID,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    parse_header,
)
from wire.compression import decompress
from wire.errors import CorruptRecordError as WireCorruptRecordError
from wire.errors import DecodeError
from wire.record_batch import (
    RecordBatch,
    TimestampType,
    build_batch,
    set_base_offset,
    set_max_timestamp,
    set_partition_leader_epoch,
)

__all__ = ["ValidationResult", "validate_and_assign_offsets"]

_I64_SIGN = 1 << 63


@dataclass(slots=True)
class ValidationResult:   # not frozen: a frozen init costs ~1 us per append, and no one mutates it
    records: memoryview  # the validated (and patched) bytes, whole batches only
    first_offset: int
    last_offset: int
    max_timestamp: int  # largest record timestamp (now_ms for LogAppendTime), -1 if none
    shallow_offset_of_max_timestamp: int  # last offset of the batch holding it (the time index's)
    log_append_time: int  # now_ms for LogAppendTime topics, else -1
    record_count: int
    source_compression: int
    headers: tuple[BatchHeader, ...]  # per batch, after patching
    last_leader_epoch: int
    offset_of_max_timestamp: int = -1  # the record's own offset (Kafka's offsetOfMaxTimestamp)


def _writable(buf) -> memoryview:
    if type(buf) is memoryview and not buf.readonly and buf.format == "B":
        return buf   # a Produce's records: a view of the request's own frame (a bytearray)
    if isinstance(buf, bytearray):
        return memoryview(buf)
    mv = memoryview(buf)
    if mv.readonly:
        return memoryview(bytearray(mv))
    return mv.cast("B") if mv.format != "B" else mv


def _walk_records(mv: memoryview, pos: int, h: BatchHeader, now_ms: int, config: LogConfig,
                  tp: tuple[str, int] | None, log_append: bool, compacted: bool) -> tuple[int, int, bool]:
    """Kafka's LogValidator record loop over the batch at ``pos`` (header already checked).
    Returns (max record timestamp or -1, index of the first record holding it or -1, whether
    a compressed batch must be rebuilt because its offset deltas are not 0..n-1)."""
    count = h.record_count
    if count <= 0:
        return -1, -1, False
    end = pos + h.batch_length + LOG_OVERHEAD
    codec = h.attributes & COMPRESSION_MASK
    if codec:
        try:
            data = decompress(codec, mv[pos + HEADER_SIZE : end])
        except DecodeError as e:
            raise CorruptRecordError(f"Record batch payload cannot be decompressed: {e}") from None
        start, stop = 0, len(data)
    else:
        data, start, stop = mv, pos + HEADER_SIZE, end
    try:
        scan = scan_records(data, start, stop, count)
    except MalformedRecordError as e:
        raise InvalidRecordError(str(e)) from None
    # positional: a call with ten keywords costs ~0.15 us more, per batch
    check_records(scan, data, start, stop, count, h.base_offset, h.base_timestamp, h.max_timestamp,
                  bool(h.attributes & TIMESTAMP_TYPE_BIT), log_append, compacted, now_ms,
                  config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms, tp)
    if h.attributes & TIMESTAMP_TYPE_BIT:  # every record reads as the batch's maxTimestamp
        max_ts, index = h.max_timestamp, 0
    else:
        max_ts, index = h.base_timestamp + scan.max_ts_delta, scan.index_of_max
        if not -_I64_SIGN <= max_ts < _I64_SIGN:  # Java's long sum wraps (only reachable
            max_ts = ((max_ts + _I64_SIGN) & (2 * _I64_SIGN - 1)) - _I64_SIGN  # with no bounds)
    if max_ts <= -1:  # Kafka keeps the max from NO_TIMESTAMP (-1) with a strict '>'
        max_ts, index = -1, -1
    return max_ts, index, bool(codec) and not scan.offsets_in_order


def _rebuild(mv: memoryview, pos: int, h: BatchHeader, log_append_time: int | None) -> bytes:
    """Kafka's buildRecordsAndAssignOffsets in the batch's own codec: the records with offset
    deltas 0..n-1, everything else of the batch kept (timestamps as the records read)."""
    tt = TimestampType.LOG_APPEND_TIME if log_append_time is not None else TimestampType.CREATE_TIME
    try:
        records = list(RecordBatch(mv, pos).records())
    except WireCorruptRecordError as e:  # e.g. a header key that is not UTF-8
        raise CorruptRecordError(f"Record is corrupt: {e}") from None
    out = bytearray(build_batch(
        records, base_offset=h.base_offset, compression=h.compression,
        timestamp_type=tt, producer_id=h.producer_id, producer_epoch=h.producer_epoch,
        base_sequence=h.base_sequence, is_transactional=h.is_transactional,
        partition_leader_epoch=h.partition_leader_epoch))
    if log_append_time is not None:
        set_max_timestamp(out, 0, TimestampType.LOG_APPEND_TIME, log_append_time)
    return bytes(out)


def validate_and_assign_offsets(buf, next_offset: int, now_ms: int, config: LogConfig,
                                partition_leader_epoch: int = -1,
                                origin: AppendOrigin = AppendOrigin.CLIENT,
                                assign_offsets: bool = True,
                                topic_partition: tuple[str, int] | None = None) -> ValidationResult:
    mv = _writable(buf)
    n = len(mv)
    pos = 0
    offset = next_offset
    headers: list[BatchHeader] = []
    max_timestamp, shallow_offset_of_max, offset_of_max = -1, -1, -1
    record_count = 0
    source_compression = 0
    log_append = config.log_append_time
    compacted = config.compact
    max_message_bytes = config.max_message_bytes
    client = origin is AppendOrigin.CLIENT
    rebuilt: dict[int, bytes] = {}  # batch index -> its rebuilt bytes (compressed, deltas out of order)
    sizes: list[int] = []  # each batch's size as sent
    while n - pos >= LOG_OVERHEAD:
        if n - pos < HEADER_SIZE:
            break
        h = parse_header(mv, pos)
        size = h.batch_length + LOG_OVERHEAD
        if h.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptRecordError(f"Record batch size {size} is smaller than the minimum allowed overhead {HEADER_SIZE}")
        if h.magic != 2:
            if h.magic in (0, 1):
                raise UnsupportedForMessageFormatError(f"Record batch magic {h.magic} is not supported; only magic 2")
            raise CorruptRecordError(f"Unknown record batch magic {h.magic}")
        if pos + size > n:
            break  # partial trailing batch: trimmed (Kafka's trimInvalidBytes)
        if size > max_message_bytes:
            raise RecordTooLargeError(
                f"The record batch size in the append is {size} bytes which exceeds the maximum configured value of {max_message_bytes}.")
        # Kafka's ensureValid, on the decoded header (the same checks as wire's
        # RecordBatch.validate, without a property call per field: this is the hot path)
        if crc32c.crc32c(mv[pos + 21 : pos + size]) != h.crc:
            raise CorruptRecordError(f"Record is corrupt (stored crc = {h.crc})")
        attributes = h.attributes
        if attributes & COMPRESSION_MASK > 4 or h.record_count < 0 or h.last_offset_delta < 0 \
                or h.record_count > h.last_offset_delta + 1:
            raise CorruptRecordError("Record batch header is inconsistent (codec, count or offset delta)")
        if client:
            if h.base_offset != 0:
                raise InvalidRecordError(f"The baseOffset of the record batch in the append should be 0, but it is {h.base_offset}")
            if h.last_offset_delta + 1 <= 0:
                raise InvalidRecordError("Batch has an invalid offset range")
            if h.record_count <= 0:
                raise InvalidRecordError("Invalid reported count for record batch")
            if h.last_offset_delta + 1 != h.record_count:
                raise InvalidRecordError("Inconsistent batch offset range and record count")
            if attributes & CONTROL_BIT:
                raise InvalidRecordError("Clients are not allowed to write control records")
            if h.producer_id > NO_PRODUCER_ID and h.base_sequence < 0:
                raise InvalidRecordError("Invalid sequence number")
        if assign_offsets:
            batch_max, index_of_max, rebuild = _walk_records(mv, pos, h, now_ms, config, topic_partition,
                                                             log_append, compacted)
            set_base_offset(mv, pos, offset)
            if partition_leader_epoch >= 0:
                set_partition_leader_epoch(mv, pos, partition_leader_epoch)
            if log_append:
                batch_max, index_of_max = now_ms, 0
                set_max_timestamp(mv, pos, TimestampType.LOG_APPEND_TIME, now_ms)
            elif attributes & TIMESTAMP_TYPE_BIT or h.max_timestamp != batch_max:
                # (a CreateTime batch whose header already holds its records' max, the
                # common case, is left as it is: set_max_timestamp would write nothing)
                set_max_timestamp(mv, pos, TimestampType.CREATE_TIME, batch_max)
            h = parse_header(mv, pos)
            if rebuild:
                data = _rebuild(mv, pos, h, now_ms if log_append else None)
                rebuilt[len(headers)] = data
                h = parse_header(data, 0)
            if batch_max > max_timestamp:
                max_timestamp, shallow_offset_of_max = batch_max, h.base_offset + h.last_offset_delta
                offset_of_max = h.base_offset + index_of_max
        else:
            if h.base_offset < offset:
                raise InvalidRecordError(f"Out of order offsets: batch at {h.base_offset} below {offset}")
            if h.max_timestamp > max_timestamp:  # a follower keeps the leader's header
                max_timestamp = h.max_timestamp
                shallow_offset_of_max = offset_of_max = h.base_offset + h.last_offset_delta
        offset = h.base_offset + h.last_offset_delta + 1
        record_count += h.record_count
        if attributes & COMPRESSION_MASK:
            source_compression = attributes & COMPRESSION_MASK
        headers.append(h)
        sizes.append(size)
        pos += size
    if not headers:
        raise CorruptRecordError("The record set holds no complete record batch")
    records = mv[:pos]
    if rebuilt:
        records = _splice(records, sizes, rebuilt)
        _check_sizes(headers, config)
    # ("producer", the default, keeps every batch's codec: nothing to ask per batch)
    if assign_offsets and config.compression_type != "producer" and needs_recompression(config, headers):
        out, headers = recompress(records, headers, config, now_ms if log_append else None)
        records = memoryview(out)
        _check_sizes(headers, config)
        max_timestamp, shallow_offset_of_max = -1, -1
        for h in headers:
            if h.max_timestamp > max_timestamp:
                max_timestamp, shallow_offset_of_max = h.max_timestamp, h.base_offset + h.last_offset_delta
    # positional, in the field order (keywords cost ~0.5 us more per append): records,
    # first_offset, last_offset, max_timestamp, shallow_offset_of_max_timestamp,
    # log_append_time, record_count, source_compression, headers, last_leader_epoch,
    # offset_of_max_timestamp
    return ValidationResult(records, headers[0].base_offset, offset - 1, max_timestamp, shallow_offset_of_max,
                            now_ms if log_append else -1, record_count, source_compression, tuple(headers),
                            headers[-1].partition_leader_epoch, offset_of_max)


def _check_sizes(headers: list[BatchHeader], config: LogConfig) -> None:
    """Kafka checks rewritten batches' sizes against max.message.bytes again."""
    for h in headers:
        if h.batch_length + LOG_OVERHEAD > config.max_message_bytes:
            raise RecordTooLargeError(
                f"The record batch size in the append is {h.batch_length + LOG_OVERHEAD} bytes which "
                f"exceeds the maximum configured value of {config.max_message_bytes}.")


def _splice(records: memoryview, sizes: list[int], rebuilt: dict[int, bytes]) -> memoryview:
    """The record set with the rebuilt batches in place of the originals (``sizes``: each
    original batch's size in bytes)."""
    out = bytearray()
    pos = 0
    for i, size in enumerate(sizes):
        out += rebuilt[i] if i in rebuilt else records[pos : pos + size]
        pos += size
    return memoryview(out)
