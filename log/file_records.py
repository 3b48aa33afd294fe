"""FileRecords: a segment's ``.log`` file of record batches (Kafka's ``FileRecords``).

Byte layout: record batches back to back, exactly as received on the wire after offset
assignment (magic 2, see ``wire/batch_header.py``); no header, no padding.  Invariant: the
bytes in ``[0, size)`` are whole batches, except transiently after a crash, which recovery
repairs by truncating at the first invalid or partial batch.

I/O model: one ``O_RDWR`` descriptor per file; appends are ``os.pwrite`` at the current size
(no seek state), reads are ``os.pread`` (thread-safe), reads for a client are
:class:`RecordsSlice` handles over the descriptor; :meth:`FileRecords.pin` turns one
into a :class:`PinnedSlice` that owns a ``dup`` of the descriptor, for a ``sendfile`` that may
run after retention or the cleaner closed and deleted the file (the dup keeps the inode and its
bytes alive until the slice is closed).  Header scans
read 8 KiB windows so that a run of small batches costs one syscall per window, and a large
batch costs one small ``pread``.  Who may call: ``LogSegment`` (writes), readers via it.

:class:`RecordsSlice` is the zero-copy read handle: an open file descriptor, a byte position
and a length.  A server may ``os.sendfile(sock, slice.fileno(), slice.position, len(slice))``
or call :meth:`RecordsSlice.read` for bytes.  The descriptor stays valid even if the segment is
deleted by retention meanwhile, because deletion renames to ``.deleted`` and closes the file only
after ``file.delete.delay.ms``.  A read answers a :class:`FetchDataInfo` holding one.  Both live
here, next to the ``FileRecords`` they point into, so that log/types.py stays a leaf.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from log.errors import CorruptRecordError
from log.types import LogOffsetMetadata, LogOffsetPosition, TimestampAndOffset
from wire.batch_header import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, parse_header
from wire.errors import CorruptRecordError as WireCorruptRecordError
from wire.record_batch import RecordBatch

__all__ = ["EMPTY_RECORDS", "FetchDataInfo", "FileRecords", "PinnedSlice", "RecordsSlice"]

_SCAN_WINDOW = 8192
_INT32_MAX = (1 << 31) - 1


class PinnedSlice:
    """``length`` bytes at ``position`` of a file, through a descriptor of its own.

    What a Fetch response carries for records sent with ``sendfile``: ``len()`` is exact
    without reading anything (the encoder sizes the frame from it), ``fd`` is this slice's
    own ``dup`` (valid whatever happens to the segment meanwhile; closed by :meth:`close`,
    or when the object is collected), and ``bytes(s)`` reads it (one ``pread``, for tests
    and for a path that needs a copy, e.g. TLS).  Owned by one response: whoever sends it
    closes it."""

    __slots__ = ("fd", "position", "length", "path")

    open_count = 0   # slices of this process holding a descriptor (a budget for the pinning side)

    def __init__(self, fd: int, position: int, length: int, path: str) -> None:
        self.fd = fd
        self.position = position
        self.length = length
        self.path = path
        PinnedSlice.open_count += 1

    def __len__(self) -> int:
        return self.length

    def __bytes__(self) -> bytes:
        if self.fd < 0:
            raise ValueError(f"read of a closed slice of {self.path}")
        data = os.pread(self.fd, self.length, self.position)
        if len(data) != self.length:
            raise OSError(f"{self.path} ends before position {self.position + self.length}")
        return data

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            PinnedSlice.open_count -= 1
            os.close(fd)

    def __del__(self) -> None:   # a response dropped unsent (connection closed, fetch re-read)
        self.close()

    def __repr__(self) -> str:
        return f"PinnedSlice({self.path}, position={self.position}, length={self.length}, fd={self.fd})"


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


class FileRecords:
    def __init__(self, path: str, fd: int, size: int) -> None:
        self.path = path
        self.fd = fd
        self._size = size
        # close() and pin() exclude each other: a pin never dups a descriptor number that a
        # concurrent close (retention, the cleaner: other threads) released for reuse.
        self._fd_lock = threading.Lock()

    @classmethod
    def open(cls, path: str, file_already_exists: bool = False, init_file_size: int = 0,
             preallocate: bool = False) -> FileRecords:
        """Open (creating if needed).  ``preallocate`` is accepted for config parity; a
        preallocated file would need its logical end tracked separately, so we do not
        preallocate (Kafka's default too)."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        size = os.fstat(fd).st_size
        return cls(path, fd, size)

    # -- size / write
    def size_in_bytes(self) -> int:
        return self._size

    def append(self, data) -> int:
        """Write ``data`` (bytes-like, whole batches) at the end; returns bytes written."""
        n = len(data)
        position = self._size
        if position + n > _INT32_MAX:
            raise ValueError(f"Append of size {n} bytes is too large for segment with current file position at {position}")
        written = os.pwrite(self.fd, data, position)   # a regular file takes it all at once
        if written < n:   # ... except on a signal or a full disk: write the rest
            mv = memoryview(data).cast("B")
            while written < n:
                written += os.pwrite(self.fd, mv[written:], position + written)
        self._size = position + n
        return n

    def flush(self) -> None:
        os.fsync(self.fd)

    def truncate_to(self, target_size: int) -> int:
        """Shrink the file to ``target_size``; returns the bytes removed."""
        original = self._size
        if target_size > original or target_size < 0:
            raise ValueError(f"Attempt to truncate log segment {self.path} to {target_size} bytes failed, size of this log segment is {original} bytes.")
        if target_size < os.fstat(self.fd).st_size:
            os.ftruncate(self.fd, target_size)
        self._size = target_size
        return original - target_size

    def trim(self) -> None:
        self.truncate_to(self._size)

    def close(self) -> None:
        with self._fd_lock:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1

    close_handlers = close

    def delete_if_exists(self) -> bool:
        self.close()
        try:
            os.remove(self.path)
            return True
        except FileNotFoundError:
            return False

    def rename_to(self, new_path: str) -> None:
        try:
            os.replace(self.path, new_path)
        finally:
            self.path = new_path

    # -- read
    def read(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, size, position)

    def pin(self, position: int, size: int) -> PinnedSlice | None:
        """A :class:`PinnedSlice` of ``[position, position + size)`` on a ``dup`` of the
        descriptor; None once the file is closed (the segment went: the caller reads again)."""
        with self._fd_lock:
            if self.fd < 0:
                return None
            fd = os.dup(self.fd)
        return PinnedSlice(fd, position, size, self.path)

    def slice(self, position: int, size: int) -> RecordsSlice:
        size = max(0, min(size, self._size - position))
        return RecordsSlice(self, position, size)

    def batch_headers_from(self, start: int, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each whole batch in ``[start, end)``, header only, no CRC check.

        Stops at a partial trailing batch (like Kafka's ``FileLogInputStream``); raises
        :class:`CorruptRecordError` for a batch length that cannot be right."""
        end = self._size if end is None else min(end, self._size)
        pos = start
        win_start, win = 0, b""
        while pos + LOG_OVERHEAD <= end:
            if pos < win_start or pos + HEADER_SIZE > win_start + len(win):
                win_start = pos
                win = os.pread(self.fd, min(_SCAN_WINDOW, max(HEADER_SIZE, end - pos)), pos)
                if len(win) < LOG_OVERHEAD:
                    return
            rel = pos - win_start
            if rel + HEADER_SIZE > len(win):
                # a batch shorter than a header at the file end: partial (or corrupt) tail
                return
            header = parse_header(win, rel)
            size = header.batch_length + LOG_OVERHEAD
            if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
                raise CorruptRecordError(f"Record batch size {size} is smaller than the minimum allowed overhead {HEADER_SIZE} at position {pos} in {self.path}")
            if pos + size > end:
                return
            yield pos, header
            pos += size

    def search_for_offset_with_size(self, target_offset: int, starting_position: int) -> LogOffsetPosition | None:
        """First batch whose last offset >= target (the batch containing it, or the next)."""
        for pos, h in self.batch_headers_from(starting_position):
            last = h.base_offset + h.last_offset_delta
            if last >= target_offset:
                return LogOffsetPosition(last, pos, h.batch_length + LOG_OVERHEAD)
        return None

    def search_for_timestamp(self, target_timestamp: int, starting_position: int,
                             starting_offset: int) -> TimestampAndOffset | None:
        """First record with timestamp >= target and offset >= starting_offset.

        Only the batch whose maxTimestamp reaches the target is decoded (including
        decompression); for LogAppendTime batches every record's timestamp is the batch's
        maxTimestamp, as in Kafka's ``DefaultRecordBatch``."""
        for pos, h in self.batch_headers_from(starting_position):
            if h.max_timestamp >= target_timestamp:
                epoch = h.partition_leader_epoch if h.partition_leader_epoch >= 0 else None
                if h.is_log_append_time:
                    # every record carries the batch's maxTimestamp
                    offset = max(h.base_offset, starting_offset)
                    if offset <= h.base_offset + h.last_offset_delta:
                        return TimestampAndOffset(h.max_timestamp, offset, epoch)
                    continue
                for offset, timestamp in self._record_timestamps(pos, h):
                    if timestamp >= target_timestamp and offset >= starting_offset:
                        return TimestampAndOffset(timestamp, offset, epoch)
        return None

    def _record_timestamps(self, pos: int, h: BatchHeader) -> Iterator[tuple[int, int]]:
        data = os.pread(self.fd, h.batch_length + LOG_OVERHEAD, pos)
        try:
            for record in RecordBatch(data).records():
                yield record.offset, record.timestamp
        except WireCorruptRecordError as e:
            raise CorruptRecordError(str(e)) from None

    def largest_timestamp_after(self, starting_position: int) -> TimestampAndOffset:
        max_ts, offset_of_max, epoch = -1, -1, -1
        for _, h in self.batch_headers_from(starting_position):
            if h.max_timestamp > max_ts:
                max_ts, offset_of_max, epoch = h.max_timestamp, h.base_offset + h.last_offset_delta, h.partition_leader_epoch
        return TimestampAndOffset(max_ts, offset_of_max, epoch if epoch >= 0 else None)

    def __repr__(self) -> str:
        return f"FileRecords({self.path}, size={self._size})"
