"""Filter the records of one stored batch and re-build it (Kafka's ``MemoryRecords.filterTo``).

The cleaner decides per batch (:class:`BatchRetention`) and per record (a predicate); this
module turns those decisions into the bytes to write, exactly as Kafka's filterTo does for
magic v2:

* some record kept, all of them, and no delete horizon to set: the original batch bytes;
* some record kept otherwise: a new batch with the original baseOffset, lastOffsetDelta (so
  the producer's last sequence survives), partitionLeaderEpoch, producer id/epoch, base
  sequence, compression codec, timestamp type and transactional/control bits, holding the
  kept records.  Its baseTimestamp is the *delete horizon* when one is set (attribute bit 6,
  KIP-534), else the first kept record's timestamp; record timestamp deltas are re-computed
  against it.  maxTimestamp is the largest kept timestamp, or for LogAppendTime batches the
  original maxTimestamp (every record of such a batch reports it);
* nothing kept and ``RETAIN_EMPTY``: a header-only batch (recordCount 0, no compression,
  baseTimestamp -1, the original maxTimestamp, lastOffsetDelta and producer fields), which
  keeps the producer's sequence and the offset range known (Kafka's ``writeEmptyHeader``);
* nothing kept otherwise: nothing.

The delete horizon is set (to ``now + delete.retention.ms``, computed by the caller) the first
time a batch holding a tombstone is recopied; later cleanings drop its tombstones once the
clock passes it.  A batch that already has a horizon keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import NamedTuple

import crc32c

from log.raw_records import batch_records, scan
from wire.batch_header import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
)
from wire.compression import compress
from wire.varint import encode_varint, encode_varlong

__all__ = ["BatchRetention", "FilteredBatch", "filter_batch"]

NO_TIMESTAMP = -1
_CRC_START = 21  # the CRC covers bytes [21, end): attributes onwards
_CRC_OFFSET = 17


class BatchRetention(Enum):
    DELETE = "delete"  # drop the batch without looking at its records
    RETAIN_EMPTY = "retain_empty"  # keep at least the header, even if no record is kept
    DELETE_EMPTY = "delete_empty"  # drop the batch if no record is kept


class FilteredBatch(NamedTuple):
    """What to write for one source batch: ``data`` (None = nothing), with the batch's last
    offset and max timestamp for the destination segment's indexes."""

    data: bytes | None
    last_offset: int
    max_timestamp: int
    records_read: int
    records_retained: int


# retain(offset, key, has_value) -> keep the record?
RecordPredicate = Callable[[int, "bytes | None", bool], bool]


def filter_batch(buf, pos: int, h: BatchHeader, retention: BatchRetention, retain: RecordPredicate,
                 new_delete_horizon_ms: int, set_horizon: bool = False) -> FilteredBatch:
    """Apply ``retention`` and ``retain`` to the batch at ``buf[pos:]`` (header ``h``).
    ``new_delete_horizon_ms`` is used if the batch holds a tombstone and has no horizon yet,
    or if ``set_horizon`` (a transaction marker that no longer guards any data, Kafka's
    ``containsMarkerForEmptyTxn``)."""
    size = h.batch_length + LOG_OVERHEAD
    if retention is BatchRetention.DELETE:
        return FilteredBatch(None, h.last_offset, h.max_timestamp, 0, 0)
    data, start, end = batch_records(buf, pos, h)
    base_offset = h.base_offset
    kept = []
    all_kept = True
    tombstones = False
    read = 0
    for r in scan(data, h.record_count, start, end):
        read += 1
        if retain(base_offset + r.offset_delta, r.key, r.has_value):
            kept.append(r)
            if not r.has_value:
                tombstones = True
        else:
            all_kept = False
    has_horizon = bool(h.attributes & DELETE_HORIZON_BIT)
    if kept:
        need_horizon = (tombstones or set_horizon) and not has_horizon
        if all_kept and not need_horizon:
            return FilteredBatch(bytes(memoryview(buf)[pos : pos + size]), h.last_offset, h.max_timestamp, read, len(kept))
        horizon = new_delete_horizon_ms if need_horizon else (h.base_timestamp if has_horizon else NO_TIMESTAMP)
        out, max_ts = _rebuild(h, data, kept, horizon)
        return FilteredBatch(out, h.last_offset, max_ts, read, len(kept))
    if retention is BatchRetention.RETAIN_EMPTY:
        return FilteredBatch(_empty_header(h), h.last_offset, h.max_timestamp, read, 0)
    return FilteredBatch(None, h.last_offset, h.max_timestamp, read, 0)


def _rebuild(h: BatchHeader, data: bytes, kept: list, horizon: int) -> tuple[bytes, int]:
    log_append_time = bool(h.attributes & TIMESTAMP_TYPE_BIT)

    def timestamp(r) -> int:  # what a reader reports for the record (DefaultRecordBatch)
        return h.max_timestamp if log_append_time else h.base_timestamp + r.timestamp_delta

    base_ts = horizon if horizon != NO_TIMESTAMP else timestamp(kept[0])
    parts = []
    max_ts = NO_TIMESTAMP
    for r in kept:
        ts = timestamp(r)
        if ts > max_ts:
            max_ts = ts
        delta = ts - base_ts
        if delta == r.timestamp_delta:
            parts.append(data[r.start : r.end])  # same delta: the record's bytes are unchanged
        else:
            body = bytes((r.attributes,)) + encode_varlong(delta) + data[r.rest : r.end]
            parts.append(encode_varint(len(body)))
            parts.append(body)
    if log_append_time:
        max_ts = h.max_timestamp
    records = b"".join(parts)
    codec = h.attributes & COMPRESSION_MASK
    if codec:
        records = compress(codec, records)
    attributes = h.attributes & (COMPRESSION_MASK | TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT)
    if horizon != NO_TIMESTAMP:
        attributes |= DELETE_HORIZON_BIT
    return _batch(h, attributes, base_ts, max_ts, len(kept), records), max_ts


def _empty_header(h: BatchHeader) -> bytes:
    attributes = h.attributes & (TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT)
    return _batch(h, attributes, NO_TIMESTAMP, h.max_timestamp, 0, b"")


def _batch(h: BatchHeader, attributes: int, base_ts: int, max_ts: int, count: int, records: bytes) -> bytes:
    out = bytearray(HEADER_SIZE + len(records))
    HEADER_STRUCT.pack_into(out, 0, h.base_offset, len(out) - LOG_OVERHEAD, h.partition_leader_epoch, 2, 0,
                            attributes, h.last_offset_delta, base_ts, max_ts, h.producer_id, h.producer_epoch,
                            h.base_sequence, count)
    out[HEADER_SIZE:] = records
    out[_CRC_OFFSET:_CRC_START] = crc32c.crc32c(memoryview(out)[_CRC_START:]).to_bytes(4, "big")
    return bytes(out)
