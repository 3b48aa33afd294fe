"""Small frozen value types shared by log/ (Kafka's OffsetPosition, TimestampOffset,
LogOffsetMetadata, LogAppendInfo, FileRecords.LogOffsetPosition ...).

A leaf of log/: it imports nothing of log/.  The read handle ``RecordsSlice`` and a read's
answer ``FetchDataInfo`` hold file records, so they live in file_records.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "NO_TIMESTAMP",
    "UNKNOWN_OFFSET",
    "LogAppendInfo",
    "LogOffsetMetadata",
    "LogOffsetPosition",
    "OffsetPosition",
    "TimestampAndOffset",
    "TimestampOffset",
]

NO_TIMESTAMP = -1
UNKNOWN_OFFSET = -1


class OffsetPosition(NamedTuple):
    """An offset-index entry: absolute offset and byte position in the ``.log`` file."""

    offset: int
    position: int


class TimestampOffset(NamedTuple):
    """A time-index entry: max timestamp seen so far and the offset where it was seen."""

    timestamp: int
    offset: int


TimestampOffset.UNKNOWN = TimestampOffset(-1, -1)  # type: ignore[attr-defined]


class LogOffsetPosition(NamedTuple):
    """FileRecords.LogOffsetPosition: a batch's last offset, start position and size in bytes."""

    offset: int
    position: int
    size: int


class TimestampAndOffset(NamedTuple):
    """Answer to a by-timestamp lookup (ListOffsets)."""

    timestamp: int
    offset: int
    leader_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class LogOffsetMetadata:
    """An offset plus, when known, the base offset of its segment and its byte position there."""

    message_offset: int
    segment_base_offset: int = UNKNOWN_OFFSET
    relative_position_in_segment: int = -1

    def message_offset_only(self) -> bool:
        return self.segment_base_offset == UNKNOWN_OFFSET and self.relative_position_in_segment == -1

    def on_older_segment(self, that: LogOffsetMetadata) -> bool:
        return self.segment_base_offset < that.segment_base_offset

    def on_same_segment(self, that: LogOffsetMetadata) -> bool:
        return self.segment_base_offset == that.segment_base_offset


@dataclass(slots=True)
class LogAppendInfo:   # one per append: not frozen (a frozen init costs ~1 us more; no one mutates it)
    """What an append did: offsets assigned, max timestamp, LogAppendTime (or -1), log start
    offset, record count and bytes.  ``duplicate`` is true when an idempotent producer's batch
    was recognised as already written; then nothing was appended and the offsets are those of
    the earlier copy (Kafka answers the produce with them)."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    valid_bytes: int
    last_leader_epoch: int = -1
    source_compression: int = 0
    duplicate: bool = False
