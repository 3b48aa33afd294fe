"""LogSegment: one ``.log`` file plus its ``.index``, ``.timeindex`` and ``.txnindex`` (Kafka's
``LogSegment``).

A segment with base offset B holds batches whose offsets are all >= B and < the next segment's
base offset; every offset in it fits in an int32 relative to B.  Files:
``<B:020d>.log``, ``<B:020d>.index``, ``<B:020d>.timeindex`` (layouts in ``file_records`` and
``index``) and, once a transaction aborted in it, ``<B:020d>.txnindex`` (``txn_index``).  Indexes are opened lazily (Kafka's ``LazyIndex``) so that opening a log with many
segments after a clean shutdown touches only file names, not index contents.

Index density: an offset-index entry (and a time-index entry for the max timestamp so far) is
added when more than ``index.interval.bytes`` have been appended since the previous entry; the
entry holds the *last* offset of the appended batches and the position of the first.

Who may call: ``LocalLog``/``Log`` under the log's lock (appends, truncation, recovery);
``read``/``translate_offset``/``find_offset_by_timestamp`` from readers.  Not thread-safe.
"""

from __future__ import annotations

import os
import struct

import crc32c

from log.clock import Clock
from log.config import LogConfig
from log.control_batch import control_record_type
from log.errors import CorruptRecordError, LogSegmentOffsetOverflowError
from log.file_records import EMPTY_RECORDS, FetchDataInfo, FileRecords, RecordsSlice
from log.files import log_file, offset_index_file, time_index_file, txn_index_file
from log.index import OffsetIndex, TimeIndex
from log.txn_index import AbortedTxn, TransactionIndex, TxnIndexSearchResult
from log.types import (
    LogOffsetMetadata,
    LogOffsetPosition,
    OffsetPosition,
    TimestampAndOffset,
    TimestampOffset,
)
from wire.batch_header import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, parse_header
from wire.errors import CorruptRecordError as WireCorruptRecordError
from wire.record_batch import RecordBatch

__all__ = ["LogSegment"]

_UNKNOWN = TimestampOffset(-1, -1)
_RECOVERY_CHUNK = 4 * 1024 * 1024
_INT32_MAX = (1 << 31) - 1
# A read whose whole range, from its starting point (a read hint, LocalLog: where the
# previous read of the partition ended; else the offset index's entry at or below the
# offset) to the bound, fits in this many bytes is made with one pread, the headers checked
# in memory, instead of a header search and then the read (two preads).  Below kbroker's
# sendfile threshold (32 KiB, kbroker/replica/record_sending.py), so the bytes are the ones the
# response copies anyway: a woken fetch of a few new batches, or a consumer starting on a
# small partition (a fetch naming thousands of them).
_WHOLE_RANGE_READ_MAX = 16 * 1024
_I32_AT = struct.Struct(">i")
_I64_AT = struct.Struct(">q")


class LogSegment:
    def __init__(self, log: FileRecords, offset_index_path: str, time_index_path: str,
                 base_offset: int, index_interval_bytes: int, roll_jitter_ms: int,
                 clock: Clock, max_index_size: int, txn_index: TransactionIndex | None = None) -> None:
        self.log = log
        self.txn_index = txn_index if txn_index is not None else TransactionIndex(
            base_offset, txn_index_file(os.path.dirname(log.path), base_offset))
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.clock = clock
        self.max_index_size = max_index_size
        self._offset_index_path = offset_index_path
        self._time_index_path = time_index_path
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self.created = clock.milliseconds()
        self.rolling_based_timestamp: int | None = None
        self._max_ts_and_offset = _UNKNOWN
        self.bytes_since_last_index_entry = 0

    @classmethod
    def open(cls, dir_: str, base_offset: int, config: LogConfig, clock: Clock,
             file_already_exists: bool = False, suffix: str = "") -> LogSegment:
        return cls(
            FileRecords.open(log_file(dir_, base_offset, suffix), file_already_exists),
            offset_index_file(dir_, base_offset, suffix),
            time_index_file(dir_, base_offset, suffix),
            base_offset,
            config.index_interval_bytes,
            config.random_segment_jitter(),
            clock,
            config.max_index_size,
            TransactionIndex(base_offset, txn_index_file(dir_, base_offset, suffix)),
        )

    # -- lazily opened indexes
    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            self._offset_index = OffsetIndex(self._offset_index_path, self.base_offset, self.max_index_size)
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            self._time_index = TimeIndex(self._time_index_path, self.base_offset, self.max_index_size)
        return self._time_index

    @property
    def offset_index_path(self) -> str:
        return self._offset_index.path if self._offset_index else self._offset_index_path

    @property
    def time_index_path(self) -> str:
        return self._time_index.path if self._time_index else self._time_index_path

    def size(self) -> int:
        return self.log.size_in_bytes()

    # -- rolling
    def should_roll(self, max_segment_ms: int, max_segment_bytes: int, max_timestamp_in_messages: int,
                    max_offset_in_messages: int, messages_size: int, now: int) -> bool:
        """Kafka's LogSegment.shouldRoll (its RollParams as arguments: this runs per append):
        the segment cannot take ``messages_size`` more bytes, segment.ms (less the jitter) has
        passed since its first batch's timestamp (or its creation), an index is full, or the
        last offset would not fit a relative offset.  Times in ms."""
        size = self.log.size_in_bytes()
        return (
            size > max_segment_bytes - messages_size
            or (size > 0 and self.time_waited_for_roll(now, max_timestamp_in_messages)
                > max_segment_ms - self.roll_jitter_ms)
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.can_convert_to_relative_offset(max_offset_in_messages)
        )

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def sanity_check(self) -> None:
        """Raise CorruptIndexError / FileNotFoundError if an index cannot be trusted."""
        if not os.path.exists(self.offset_index_path) or not os.path.exists(self.time_index_path):
            raise FileNotFoundError(f"Index file for segment {self.base_offset} does not exist")
        size = self.size()
        self.offset_index.sanity_check(size)
        self.time_index.sanity_check(size)
        self.txn_index.sanity_check()

    # -- max timestamp bookkeeping
    def read_max_timestamp_and_offset_so_far(self) -> TimestampOffset:
        if self._max_ts_and_offset is _UNKNOWN:
            self._max_ts_and_offset = self.time_index.last_entry()
        return self._max_ts_and_offset

    def max_timestamp_so_far(self) -> int:
        return self.read_max_timestamp_and_offset_so_far().timestamp

    def _offset_of_max_timestamp_so_far(self) -> int:
        return self.read_max_timestamp_and_offset_so_far().offset

    # -- append
    def append(self, largest_offset: int, largest_timestamp_ms: int,
               shallow_offset_of_max_timestamp: int, records) -> None:
        """Append whole batches (bytes-like, offsets already assigned)."""
        n = len(records)
        if n == 0:
            return
        file = self.log
        physical_position = file.size_in_bytes()
        if physical_position == 0:
            self.rolling_based_timestamp = largest_timestamp_ms
        if not self.can_convert_to_relative_offset(largest_offset):
            raise LogSegmentOffsetOverflowError(
                f"Detected offset overflow at offset {largest_offset} in segment {self.base_offset}")
        file.append(records)
        so_far = self._max_ts_and_offset
        if so_far is _UNKNOWN:
            so_far = self.read_max_timestamp_and_offset_so_far()
        if largest_timestamp_ms > so_far.timestamp:
            self._max_ts_and_offset = TimestampOffset(largest_timestamp_ms, shallow_offset_of_max_timestamp)
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(largest_offset, physical_position)
            self.time_index.maybe_append(self.max_timestamp_so_far(), self._offset_of_max_timestamp_so_far())
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += n

    # -- read
    def _read_whole_range(self, start_offset: int, start: int, end: int) -> FetchDataInfo | None:
        """``read`` when the range ``[start, end)`` is known to begin at a batch start at or
        before the batch holding ``start_offset`` (a read hint, or the offset index's entry)
        and everything from there to ``end`` is within the size limit: the bytes with one
        ``pread``, the headers checked and the first batch found in memory.  The answer is
        what the general path gives: the batches tile the range exactly, the records start at
        the first batch whose last offset is at or past ``start_offset`` and run to ``end``.
        Anything else (a short read, a length that does not tile, no such batch in the
        range): None, and the general path reads (and raises) as always."""
        data = os.pread(self.log.fd, end - start, start)
        n = len(data)
        if n != end - start or n < HEADER_SIZE:
            return None
        pos = 0
        first = -1   # where the answer starts: the first batch that ends at or past start_offset
        while pos + HEADER_SIZE <= n:
            length = _I32_AT.unpack_from(data, pos + 8)[0]
            if length < HEADER_SIZE - LOG_OVERHEAD:
                return None
            # baseOffset (bytes 0-7) + lastOffsetDelta (23-26): the batch's last offset
            if first < 0 and _I64_AT.unpack_from(data, pos)[0] + _I32_AT.unpack_from(data, pos + 23)[0] >= start_offset:
                first = pos
            pos += length + LOG_OVERHEAD
        if pos != n or first < 0:
            return None
        if first:
            data = data[first:]
        return FetchDataInfo(LogOffsetMetadata(start_offset, self.base_offset, start + first),
                             RecordsSlice(self.log, start + first, n - first, data))

    def index_position(self, offset: int) -> int:
        """Where a search for ``offset`` starts without a hint: the position of the offset
        index's entry at or below it (0 below the first entry)."""
        return self.offset_index.lookup(offset).position

    def translate_offset(self, offset: int, starting_file_position: int = 0) -> LogOffsetPosition | None:
        return self.log.search_for_offset_with_size(offset, max(self.index_position(offset), starting_file_position))

    def read(self, start_offset: int, max_size: int, max_position: int | None = None,
             min_one_message: bool = False, start_position: int | None = None) -> FetchDataInfo | None:
        """Whole batches from the one containing ``start_offset``, at most ``max_size`` bytes
        (but the first batch whole if ``min_one_message``, KIP-74), never past
        ``max_position``.  None if ``start_offset`` is past the end of this segment.
        ``start_position``: a batch start known to be at or before that batch (a read hint,
        see ``LocalLog``): the scan starts there instead of at the offset index's entry.

        Unlike Kafka, which may cut the last batch at ``max_size`` (clients drop the partial
        tail), this returns whole batches only."""
        if max_size < 0:
            raise ValueError(f"Invalid max size {max_size} for log read from segment {self.log}")
        if max_position is None:
            max_position = self.size()
        if start_position is None:
            # no hint: the offset index's entry at or below the offset (Kafka's translateOffset);
            # at or below the base offset that is the file's start (an entry names a batch
            # after the first, so its offset is above the base: a partition read from its
            # beginning skips the index)
            start_position = 0 if start_offset <= self.base_offset else self.index_position(start_offset)
        if 0 < max_position - start_position <= min(max_size, _WHOLE_RANGE_READ_MAX):
            # everything to the bound fits (a woken fetch at its read hint, or a small
            # partition read from its start): one pread, no header search first
            info = self._read_whole_range(start_offset, start_position, max_position)
            if info is not None:
                return info
        start = self.log.search_for_offset_with_size(start_offset, start_position)
        if start is None:
            return None
        metadata = LogOffsetMetadata(start_offset, self.base_offset, start.position)
        adjusted = max(max_size, start.size) if min_one_message else max_size
        if adjusted == 0 or start.position >= max_position:
            return FetchDataInfo(metadata, EMPTY_RECORDS)
        if adjusted < start.size:
            # KIP-74 off: the first batch does not fit; Kafka returns its truncated bytes
            return FetchDataInfo(metadata, EMPTY_RECORDS, first_entry_incomplete=True)
        fetch_size = min(max_position - start.position, adjusted)
        if fetch_size < max_position - start.position and fetch_size > start.size:
            # the limit falls inside the range: end at the last whole batch before it
            end = start.position + start.size
            limit = start.position + fetch_size
            # offset-index entries sit at batch starts: jump to the last one <= limit, then
            # scan the few headers after it
            slot = self.offset_index._largest_lower_bound_slot(limit, by_value=True)
            if slot >= 0:
                end = max(end, self.offset_index._value(slot))
            next_batch = None
            for pos, h in self.log.batch_headers_from(end, max_position):
                nxt = pos + h.batch_length + LOG_OVERHEAD
                if nxt > limit:
                    next_batch = (h.base_offset, pos)   # pos == end: the first batch left out
                    break
                end = nxt
            fetch_size = end - start.position
            if next_batch is not None and fetch_size > 0:
                return FetchDataInfo(metadata, self.log.slice(start.position, fetch_size), next_batch=next_batch)
        elif fetch_size < max_position - start.position:
            fetch_size = start.size
        return FetchDataInfo(metadata, self.log.slice(start.position, fetch_size))

    def fetch_upper_bound_offset(self, start: OffsetPosition, fetch_size: int) -> int | None:
        pos = self.offset_index.fetch_upper_bound_offset(start, fetch_size)
        return None if pos is None else pos.offset

    # -- recovery
    def recover(self, producer_state_manager=None, leader_epoch_cache=None) -> int:
        """Rebuild both indexes from the ``.log``, validating each batch (length, magic,
        CRC, counts); truncate at the first invalid or partial batch.  Feeds each batch to
        ``producer_state_manager.load_batch`` if given, and a batch whose
        ``partitionLeaderEpoch`` is newer than ``leader_epoch_cache``'s latest epoch to its
        ``assign`` (Kafka's ``LogSegment.recover``); with producer state, the ``.txnindex`` is
        rebuilt from the markers found (``producer_state_manager`` must hold the state as of
        this segment's base offset).  Returns the bytes truncated."""
        self.offset_index.reset()
        self.time_index.reset()
        if producer_state_manager is not None:
            # rebuilt from the batches below; without producer state (a swap segment's
            # check) the entries the cleaner wrote are kept
            self.txn_index.reset()
        valid_bytes = 0
        last_index_entry = 0
        self._max_ts_and_offset = _UNKNOWN
        size = self.log.size_in_bytes()
        buf = b""
        buf_start = 0
        try:
            while valid_bytes + LOG_OVERHEAD <= size:
                pos = valid_bytes
                if pos + HEADER_SIZE > buf_start + len(buf):
                    buf_start = pos
                    buf = self.log.read(pos, min(_RECOVERY_CHUNK, size - pos))
                    if len(buf) < HEADER_SIZE:
                        break
                header = parse_header(buf, pos - buf_start)
                batch_size = header.batch_length + LOG_OVERHEAD
                if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
                    raise CorruptRecordError(f"batch length {header.batch_length} below the minimum")
                if header.magic != 2:
                    raise CorruptRecordError(f"unsupported magic {header.magic}")
                if pos + batch_size > size:
                    break  # partial trailing batch
                if pos + batch_size > buf_start + len(buf):
                    buf_start = pos
                    buf = self.log.read(pos, max(batch_size, min(_RECOVERY_CHUNK, size - pos)))
                rel = pos - buf_start
                self._ensure_valid(buf, rel, header)
                last_offset = header.base_offset + header.last_offset_delta
                if not self.can_convert_to_relative_offset(last_offset):
                    raise LogSegmentOffsetOverflowError(
                        f"Detected offset overflow at offset {last_offset} in segment {self.base_offset}")
                if header.max_timestamp > self.max_timestamp_so_far():
                    self._max_ts_and_offset = TimestampOffset(header.max_timestamp, last_offset)
                if valid_bytes - last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(last_offset, valid_bytes)
                    self.time_index.maybe_append(self.max_timestamp_so_far(), self._offset_of_max_timestamp_so_far())
                    last_index_entry = valid_bytes
                valid_bytes += batch_size
                if producer_state_manager is not None:
                    self._update_producer_state(producer_state_manager, header, buf, rel)
                if leader_epoch_cache is not None and header.partition_leader_epoch >= 0:
                    latest = leader_epoch_cache.latest_epoch()
                    if latest is None or header.partition_leader_epoch > latest:
                        leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        except CorruptRecordError:
            pass  # Kafka logs "Found invalid messages in log segment ..." and truncates here
        truncated = size - valid_bytes
        self.log.truncate_to(valid_bytes)
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(self.max_timestamp_so_far(), self._offset_of_max_timestamp_so_far(), True)
        self.time_index.trim_to_valid_size()
        self.bytes_since_last_index_entry = valid_bytes - last_index_entry
        return truncated

    def _update_producer_state(self, psm, header: BatchHeader, buf, rel: int) -> None:
        """Replay one batch into ``psm``; a transaction marker completes its transaction and
        an ABORT adds its entry to the txn index (Kafka's ``LogSegment.updateProducerState``)."""
        marker = control_record_type(buf, rel, header) if header.is_control and header.record_count else None
        completed = psm.load_batch(header, marker)
        if completed is not None:
            self.update_txn_index(completed, psm.last_stable_offset(completed))
            psm.complete_txn(completed)

    def update_txn_index(self, completed, last_stable_offset: int) -> None:
        """Index an aborted transaction (``completed``: a ``CompletedTxn``)."""
        if completed.is_aborted:
            self.txn_index.append(AbortedTxn(completed.producer_id, completed.first_offset,
                                             completed.last_offset, last_stable_offset))

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        return self.txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset)

    @staticmethod
    def _ensure_valid(buf, rel: int, header: BatchHeader) -> None:
        end = rel + header.batch_length + LOG_OVERHEAD
        if crc32c.crc32c(memoryview(buf)[rel + 21 : end]) != header.crc:
            raise CorruptRecordError("Record is corrupt (CRC mismatch)")
        try:
            RecordBatch(buf, rel).validate()
        except WireCorruptRecordError as e:
            raise CorruptRecordError(str(e)) from None

    # -- truncation
    def truncate_to(self, offset: int) -> int:
        """Remove batches and index entries with offsets >= ``offset`` (whole batches: the
        batch containing ``offset`` goes too).  Returns the bytes removed."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)
        truncated = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if self.log.size_in_bytes() == 0:
            self.created = self.clock.milliseconds()
            self.rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        if self.max_timestamp_so_far() >= 0:
            self._max_ts_and_offset = self._read_largest_timestamp()
        return truncated

    def _read_largest_timestamp(self) -> TimestampOffset:
        last = self.time_index.last_entry()
        position = self.offset_index.lookup(last.offset).position
        after = self.log.largest_timestamp_after(position)
        if after.timestamp > last.timestamp:
            return TimestampOffset(after.timestamp, after.offset)
        return last

    def read_next_offset(self) -> int:
        """The offset after the last batch: scans headers from the last index entry only."""
        last = None
        start = self.offset_index.lookup(self.offset_index.last_offset).position
        for _, h in self.log.batch_headers_from(start):
            last = h
        return self.base_offset if last is None else last.next_offset

    def flush(self) -> None:
        """fsync the ``.log`` and msync both indexes.  May run without the log's lock (see
        ``Log._flush``): a roll or truncation may remap an index meanwhile (its old map is
        closed, a new one made over the same file), so a flush that meets a closed map
        flushes the new one."""
        self.log.flush()
        self.txn_index.flush()
        for idx in (self._offset_index, self._time_index):
            if idx is None:
                continue
            try:
                idx.flush()
            except (ValueError, AttributeError):  # remapped under us: flush the new map
                idx.flush()

    # -- files
    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        def swap(path: str) -> str:
            base = path[: len(path) - len(old_suffix)] if old_suffix and path.endswith(old_suffix) else path
            return base + new_suffix

        self.log.rename_to(swap(self.log.path))
        for attr, path_attr in (("_offset_index", "_offset_index_path"), ("_time_index", "_time_index_path")):
            idx = getattr(self, attr)
            old = idx.path if idx is not None else getattr(self, path_attr)
            new = swap(old)
            if os.path.exists(old):
                os.replace(old, new)
            if idx is not None:
                idx.path = new
            setattr(self, path_attr, new)
        self.txn_index.rename_to(swap(self.txn_index.path))

    def has_suffix(self, suffix: str) -> bool:
        return self.log.path.endswith(suffix)

    def on_become_inactive_segment(self) -> None:
        self.time_index.maybe_append(self.max_timestamp_so_far(), self._offset_of_max_timestamp_so_far(), True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    def _load_first_batch_timestamp(self) -> None:
        if self.rolling_based_timestamp is None and self.size() >= HEADER_SIZE:
            self.rolling_based_timestamp = parse_header(self.log.read(0, HEADER_SIZE)).max_timestamp

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """segment.ms counts from the first batch's timestamp if it has one (then the new
        batch's timestamp is the clock), else from the segment's creation time."""
        self._load_first_batch_timestamp()
        ts = self.rolling_based_timestamp if self.rolling_based_timestamp is not None else -1
        if ts >= 0:
            return message_timestamp - ts
        return now - self.created

    def get_first_batch_timestamp(self) -> int:
        self._load_first_batch_timestamp()
        ts = self.rolling_based_timestamp
        return ts if ts is not None and ts >= 0 else (1 << 63) - 1

    def find_offset_by_timestamp(self, timestamp_ms: int, starting_offset: int) -> TimestampAndOffset | None:
        """First record with timestamp >= ``timestamp_ms`` and offset >= ``starting_offset``."""
        ts_offset = self.time_index.lookup(timestamp_ms)
        position = self.offset_index.lookup(max(ts_offset.offset, starting_offset)).position
        return self.log.search_for_timestamp(timestamp_ms, position, starting_offset)

    def close(self) -> None:
        # materialise never-used indexes so a clean reopen finds them (trimmed to 0 below)
        self.offset_index  # noqa: B018
        self.time_index  # noqa: B018
        if self._max_ts_and_offset is not _UNKNOWN:
            try:
                self.time_index.maybe_append(self.max_timestamp_so_far(), self._offset_of_max_timestamp_so_far(), True)
            except (ValueError, IndexError):
                pass
        if self._offset_index is not None:
            self._offset_index.close()
        if self._time_index is not None:
            self._time_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        if self._offset_index is not None:
            self._offset_index.close_handler()
        if self._time_index is not None:
            self._time_index.close_handler()
        self.log.close_handlers()

    def delete_if_exists(self) -> None:
        self.log.delete_if_exists()
        self.txn_index.delete_if_exists()
        for idx, path in ((self._offset_index, self._offset_index_path), (self._time_index, self._time_index_path)):
            if idx is not None:
                idx.delete_if_exists()
            else:
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass

    def deleted(self) -> bool:
        return not any(os.path.exists(p) for p in (self.log.path, self.offset_index_path, self.time_index_path))

    def last_modified(self) -> int:
        return os.stat(self.log.path).st_mtime_ns // 1_000_000

    def largest_timestamp(self) -> int:
        ts = self.max_timestamp_so_far()
        return ts if ts >= 0 else self.last_modified()

    def set_last_modified(self, ms: int) -> None:
        for p in (self.log.path, self.offset_index_path, self.time_index_path):
            if os.path.exists(p):
                os.utime(p, ns=(ms * 1_000_000, ms * 1_000_000))

    def __repr__(self) -> str:
        return (f"LogSegment(baseOffset={self.base_offset}, size={self.size()}, "
                f"largestRecordTimestamp={self._max_ts_and_offset.timestamp})")

