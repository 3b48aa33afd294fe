"""Small frozen value types shared by log/ (Kafka's OffsetPosition, TimestampOffset,
LogOffsetMetadata, FetchDataInfo, LogAppendInfo, FileRecords.LogOffsetPosition ...).

:class:`RecordsSlice` is the zero-copy read handle: an open file descriptor, a byte position
and a length.  A server may ``os.sendfile(sock, slice.fileno(), slice.position, len(slice))``
or call :meth:`RecordsSlice.read` for bytes.  The descriptor stays valid even if the segment is
deleted by retention meanwhile, because deletion renames to ``.deleted`` and closes the file only
after ``file.delete.delay.ms``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from log.file_records import FileRecords, PinnedSlice

__all__ = [
    "EMPTY_RECORDS",
    "NO_TIMESTAMP",
    "UNKNOWN_OFFSET",
    "FetchDataInfo",
    "LogAppendInfo",
    "LogOffsetMetadata",
    "LogOffsetPosition",
    "OffsetPosition",
    "RecordsSlice",
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


class RecordsSlice:
    """(file, position, length) of whole stored batches.  Cheap to make; reads nothing."""

    __slots__ = ("_file", "position", "length", "_data")

    def __init__(self, file: FileRecords | None, position: int, length: int, data: bytes | None = None) -> None:
        self._file = file
        self.position = position
        self.length = length
        self._data = data   # the bytes, when the read that made the slice already has them

    def __len__(self) -> int:
        return self.length

    def fileno(self) -> int:
        if self._file is None:
            raise ValueError("empty slice has no file")
        return self._file.fd

    @property
    def path(self) -> str | None:
        return None if self._file is None else self._file.path

    def read(self) -> bytes:
        """The bytes, with one ``pread`` (or an empty bytes object)."""
        if self._data is not None:
            return self._data
        if self.length == 0 or self._file is None:
            return b""
        return os.pread(self._file.fd, self.length, self.position)

    def pin(self) -> PinnedSlice | None:
        """The same bytes on a descriptor of their own (``FileRecords.pin``), for a send that
        may outlive the segment; None for an empty slice or a file closed meanwhile."""
        if self.length == 0 or self._file is None:
            return None
        return self._file.pin(self.position, self.length)

    def __repr__(self) -> str:
        return f"RecordsSlice({self.path}, position={self.position}, length={self.length})"


EMPTY_RECORDS = RecordsSlice(None, 0, 0)


@dataclass(slots=True)
class FetchDataInfo:   # one per read: not frozen (a frozen init costs ~1 us more; no one mutates it)
    """Result of a read: where the fetch started and the records found (maybe empty)."""

    fetch_offset_metadata: LogOffsetMetadata
    records: RecordsSlice
    first_entry_incomplete: bool = False
    # read_committed reads only: the aborted transactions (log.txn_index.AbortedTxn) that
    # overlap the records read (None for other isolation levels)
    aborted_transactions: list | None = None
    # (base offset, file position) of the batch right after the records, when the read
    # stopped at its size limit with more batches below the bound: where the next fetch of
    # this partition starts (LocalLog's read hint)
    next_batch: tuple[int, int] | None = None


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
