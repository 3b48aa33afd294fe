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
* CreateTime timestamps within message.timestamp.before/after.max.ms of ``now_ms``
  (INVALID_TIMESTAMP).  Checked on the batch header's baseTimestamp and maxTimestamp, not per
  record: the uncompressed path never decodes records;
* compacted topics: every record has a key, else INVALID_RECORD naming each keyless record by
  its index in the batch (``exc.record_errors``, Kafka's ``RecordValidationException``; the
  Produce handler returns them as v8+ ``record_errors``); this is the one case where records
  are decoded (Kafka must too).

Then, in place: baseOffset := next offset, partitionLeaderEpoch := the leader's epoch (both
outside the CRC), and for ``message.timestamp.type=LogAppendTime`` the timestamp-type bit and
maxTimestamp := ``now_ms`` with a new CRC (``wire.record_batch.set_log_append_time``).  A
partial batch at the end is dropped, as Kafka's ``trimInvalidBytes`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import crc32c

from log.config import LogConfig
from log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordError,
    RecordTooLargeError,
    UnsupportedForMessageFormatError,
)
from log.producer_state import AppendOrigin
from log.recompression import needs_recompression, recompress
from wire.batch_header import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, parse_header
from wire.errors import CorruptRecordError as WireCorruptRecordError
from wire.record_batch import (
    RecordBatch,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)

__all__ = ["ValidationResult", "validate_and_assign_offsets"]


@dataclass(frozen=True, slots=True)
class ValidationResult:
    records: memoryview  # the validated (and patched) bytes, whole batches only
    first_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_append_time: int  # now_ms for LogAppendTime topics, else -1
    record_count: int
    source_compression: int
    headers: tuple[BatchHeader, ...]  # per batch, after patching
    last_leader_epoch: int


def _check_keys(mv: memoryview, pos: int, topic_partition: tuple[str, int] | None) -> None:
    """Kafka's LogValidator.validateKey over every record of the batch at ``pos``; all keyless
    records are reported, then processRecordErrors raises one INVALID_RECORD for them."""
    tp = f"{topic_partition[0]}-{topic_partition[1]}" if topic_partition else "unknown"
    errors = []
    try:
        for index, record in enumerate(RecordBatch(mv, pos).records()):
            if record.key is None:
                errors.append(RecordError(index, f"Compacted topic cannot accept message without key in topic partition {tp}"))
    except WireCorruptRecordError as e:
        raise CorruptRecordError(f"Record is corrupt: {e}") from None
    if errors:
        shown = "[" + ", ".join(str(e) for e in errors[:3]) + "]"
        raise InvalidRecordError(f"One or more records have been rejected due to {len(errors)} record errors in total, "
                                 f"and only showing the first three errors at most: {shown}",
                                 record_errors=tuple(errors))


def _writable(buf) -> memoryview:
    if isinstance(buf, bytearray):
        return memoryview(buf)
    mv = memoryview(buf)
    if mv.readonly:
        return memoryview(bytearray(mv))
    return mv.cast("B") if mv.format != "B" else mv


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
    max_timestamp, shallow_offset_of_max = -1, -1
    record_count = 0
    source_compression = 0
    log_append = config.log_append_time
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
        if size > config.max_message_bytes:
            raise RecordTooLargeError(
                f"The record batch size in the append is {size} bytes which exceeds the maximum configured value of {config.max_message_bytes}.")
        # Kafka's ensureValid, on the decoded header (the same checks as wire's
        # RecordBatch.validate, without a property call per field: this is the hot path)
        if crc32c.crc32c(mv[pos + 21 : pos + size]) != h.crc:
            raise CorruptRecordError(f"Record is corrupt (stored crc = {h.crc})")
        if h.compression > 4 or h.record_count < 0 or h.last_offset_delta < 0 \
                or h.record_count > h.last_offset_delta + 1:
            raise CorruptRecordError("Record batch header is inconsistent (codec, count or offset delta)")
        if origin is AppendOrigin.CLIENT:
            if h.base_offset != 0:
                raise InvalidRecordError(f"The baseOffset of the record batch in the append should be 0, but it is {h.base_offset}")
            if h.last_offset_delta + 1 <= 0:
                raise InvalidRecordError("Batch has an invalid offset range")
            if h.record_count <= 0:
                raise InvalidRecordError("Invalid reported count for record batch")
            if h.last_offset_delta + 1 != h.record_count:
                raise InvalidRecordError("Inconsistent batch offset range and record count")
            if h.is_control:
                raise InvalidRecordError("Clients are not allowed to write control records")
            if h.has_producer_id and h.base_sequence < 0:
                raise InvalidRecordError("Invalid sequence number")
        if not log_append and not h.is_log_append_time:
            for ts in (h.base_timestamp, h.max_timestamp):
                if ts != -1 and (now_ms - ts > config.message_timestamp_before_max_ms
                                 or ts - now_ms > config.message_timestamp_after_max_ms):
                    raise InvalidTimestampError(
                        f"Timestamp {ts} of message is out of range. The timestamp should be within "
                        f"[{now_ms - config.message_timestamp_before_max_ms}, {now_ms + config.message_timestamp_after_max_ms}]")
        if config.compact and not h.is_control:
            _check_keys(mv, pos, topic_partition)
        if assign_offsets:
            set_base_offset(mv, pos, offset)
            if partition_leader_epoch >= 0:
                set_partition_leader_epoch(mv, pos, partition_leader_epoch)
            if log_append:
                set_log_append_time(mv, pos, now_ms)
                h = parse_header(mv, pos)
            else:
                h = h._replace(base_offset=offset, partition_leader_epoch=partition_leader_epoch
                               if partition_leader_epoch >= 0 else h.partition_leader_epoch)
        elif h.base_offset < offset:
            raise InvalidRecordError(f"Out of order offsets: batch at {h.base_offset} below {offset}")
        offset = h.base_offset + h.last_offset_delta + 1
        if h.max_timestamp > max_timestamp:
            max_timestamp, shallow_offset_of_max = h.max_timestamp, offset - 1
        record_count += h.record_count
        if h.compression:
            source_compression = h.compression
        headers.append(h)
        pos += size
    if not headers:
        raise CorruptRecordError("The record set holds no complete record batch")
    records = mv[:pos]
    if assign_offsets and needs_recompression(config, headers):
        out, headers = recompress(records, headers, config, now_ms if log_append else None)
        records = memoryview(out)
        for h in headers:  # Kafka checks the rewritten batches' sizes again
            if h.batch_length + LOG_OVERHEAD > config.max_message_bytes:
                raise RecordTooLargeError(
                    f"The record batch size in the append is {h.batch_length + LOG_OVERHEAD} bytes which "
                    f"exceeds the maximum configured value of {config.max_message_bytes}.")
        max_timestamp, shallow_offset_of_max = -1, -1
        for h in headers:
            if h.max_timestamp > max_timestamp:
                max_timestamp, shallow_offset_of_max = h.max_timestamp, h.base_offset + h.last_offset_delta
    return ValidationResult(
        records=records,
        first_offset=headers[0].base_offset,
        last_offset=offset - 1,
        max_timestamp=max_timestamp,
        shallow_offset_of_max_timestamp=shallow_offset_of_max,
        log_append_time=now_ms if log_append else -1,
        record_count=record_count,
        source_compression=source_compression,
        headers=tuple(headers),
        last_leader_epoch=headers[-1].partition_leader_epoch,
    )
