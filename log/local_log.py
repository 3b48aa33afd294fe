"""LocalLog: the segments of one partition on local disk (Kafka's ``LocalLog``).

Owns the segment map, the log end offset (LEO) with its position metadata, the recovery point
(offset below which everything is fsynced) and the mechanics of roll, read, truncation and
segment deletion.  Offsets semantics (log start offset, high watermark, producer state,
retention policy) live one level up in ``Log``.

Deletion as Kafka does it: a segment to delete is first removed from the map (no new reader
finds it), then its files are renamed with a ``.deleted`` suffix, then a ``delete-file`` task
removes them after ``file.delete.delay.ms`` so that reads in flight (which hold the open file
descriptor) finish.  On restart, leftover ``*.deleted`` files are removed by the loader.

Replacement (``replace_segments``, for the log cleaner) as Kafka's ``replaceSegments``: the new
segments, written and fsynced as ``*.cleaned``, are renamed ``*.swap`` (highest base offset
first), the directory is fsynced, they enter the map (a new segment takes the place of the old
one with its base offset), the old segments are deleted as above, and the new files lose the
``.swap`` suffix; the directory is fsynced again.  A crash at any point is resolved by the
loader: with some ``.cleaned`` still there, the swap had not started and is rolled back;
once every new segment is ``.swap``, it is completed (see loader.py).

Who may call: ``Log`` only, under its lock (except ``flush_segments``, ``rename_cleaned_to_swap``
and ``fsync_dir``, which ``Log`` runs without it).
"""

from __future__ import annotations

import logging
import os

from log.clock import Clock
from log.config import LogConfig
from log.durable_files import fsync_path
from log.errors import KafkaStorageError, OffsetOutOfRangeError
from log.file_records import EMPTY_RECORDS, FetchDataInfo
from log.files import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    log_file,
    offset_index_file,
    time_index_file,
    txn_index_file,
)
from log.scheduler import Scheduler
from log.segment import LogSegment
from log.segments import LogSegments
from log.types import LogOffsetMetadata

__all__ = ["LocalLog"]

_log = logging.getLogger(__name__)


class LocalLog:
    def __init__(self, dir_: str, config: LogConfig, segments: LogSegments, recovery_point: int,
                 next_offset_metadata: LogOffsetMetadata, scheduler: Scheduler, clock: Clock,
                 topic_partition: tuple[str, int]) -> None:
        self.dir = dir_
        self.config = config
        self.segments = segments
        self.recovery_point = recovery_point
        self.next_offset_metadata = next_offset_metadata
        self.scheduler = scheduler
        self.clock = clock
        self.topic_partition = topic_partition
        self.last_flushed_time = clock.milliseconds()
        self.closed = False
        # Read-position hint: (offset, segment, position) where the last read that reached
        # its bound (HW / LEO) ended, i.e. where the batch holding ``offset`` starts.  A
        # consumer waiting at the log end fetches exactly there when woken, so its read
        # parses one header at ``position`` instead of searching the offset index and
        # scanning headers from the index entry.  Valid while ``segment`` is still the one
        # at its base offset (deletion and the cleaner's swap replace it) and bytes before
        # ``position`` are unchanged (truncation clears it).
        self._read_hint: tuple[int, LogSegment, int] | None = None

    # -- offsets
    def log_end_offset(self) -> int:
        return self.next_offset_metadata.message_offset

    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return self.next_offset_metadata

    def check_if_memory_mapped_buffer_closed(self) -> None:
        if self.closed:
            raise KafkaStorageError(f"The memory mapped buffer for log of {self.topic_partition} is already closed")

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    def update_recovery_point(self, offset: int) -> None:
        self.recovery_point = offset

    def mark_flushed(self, offset: int) -> None:
        if offset > self.recovery_point:
            self.update_recovery_point(offset)
            self.last_flushed_time = self.clock.milliseconds()

    def unflushed_messages(self) -> int:
        return self.log_end_offset() - self.recovery_point

    def flush(self, offset: int) -> None:
        """fsync segments holding offsets in [recovery point, offset), and the directory if
        a segment created since then is among them (its directory entry must be durable)."""
        self.flush_segments(self.segments_to_flush(offset))

    def segments_to_flush(self, offset: int) -> tuple[list[LogSegment], bool]:
        """What ``flush(offset)`` fsyncs: the segments holding offsets in [recovery point,
        offset) and whether the directory needs it too.  Called under the log's lock."""
        current = self.recovery_point
        if current > offset:
            return [], False
        to_flush = self.segments.values(current, offset)
        return to_flush, any(seg.base_offset >= current for seg in to_flush)

    def flush_segments(self, plan: tuple[list[LogSegment], bool]) -> None:
        """fsync a ``segments_to_flush`` plan; may run without the log's lock.  A segment
        that left the map meanwhile (retention, truncation, compaction: its files are
        renamed, closed later) is skipped if its fsync fails: nothing of it is kept."""
        segments, with_dir = plan
        for seg in segments:
            try:
                seg.flush()
            except (OSError, ValueError):
                if self.segments.get(seg.base_offset) is seg and not self.closed:
                    raise
        if with_dir:
            fsync_path(self.dir)

    def update_log_end_offset(self, end_offset: int, active: LogSegment | None = None) -> None:
        """``active``: the active segment when the caller has it at hand (the append)."""
        if active is None:
            active = self.segments.active_segment()
        self.next_offset_metadata = LogOffsetMetadata(end_offset, active.base_offset, active.size())
        if self.recovery_point > end_offset:
            self.update_recovery_point(end_offset)

    # -- append / roll
    def append(self, last_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int, records) -> None:
        active = self.segments.active_segment()
        active.append(last_offset, largest_timestamp, shallow_offset_of_max_timestamp, records)
        self.update_log_end_offset(last_offset + 1, active)

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at max(expected_next_offset, LEO); the old active one
        gets its final time-index entry and its indexes trimmed."""
        self.check_if_memory_mapped_buffer_closed()
        new_offset = max(expected_next_offset or 0, self.log_end_offset())
        active = self.segments.last_segment()
        if self.segments.contains(new_offset):
            if active is not None and active.base_offset == new_offset and active.size() == 0:
                # KAFKA-6388: an empty active segment "rolls" onto itself: recreate it
                _log.warning("Trying to roll a new log segment with start offset %d =max(provided offset = %s, LEO = %d) while it already exists and is active with size 0. Size of time index: %d, size of offset index: %d.",
                             new_offset, expected_next_offset, self.log_end_offset(), active.time_index.entries, active.offset_index.entries)
                self.remove_and_delete_segments([active], async_delete=True)
            else:
                raise KafkaStorageError(f"Trying to roll a new log segment for topic partition {self.topic_partition} with start offset {new_offset} while it already exists.")
        elif active is not None and new_offset < active.base_offset:
            raise KafkaStorageError(f"Trying to roll a new log segment for topic partition {self.topic_partition} with start offset {new_offset} lower than start offset of the active segment {active}")
        else:
            for path in (log_file(self.dir, new_offset), offset_index_file(self.dir, new_offset),
                         time_index_file(self.dir, new_offset), txn_index_file(self.dir, new_offset)):
                if os.path.exists(path):
                    _log.warning("Newly rolled segment file %s already exists; deleting it first", path)
                    os.remove(path)
            if active is not None:
                active.on_become_inactive_segment()
        new_segment = LogSegment.open(self.dir, new_offset, self.config, self.clock)
        new_segment.offset_index  # noqa: B018 - create the preallocated index files now, as
        new_segment.time_index  # noqa: B018 - Kafka's shouldRoll on the next append would
        self.segments.add(new_segment)
        self.update_log_end_offset(self.next_offset_metadata.message_offset)
        return new_segment

    # -- read
    def read(self, start_offset: int, max_length: int, min_one_message: bool,
             max_offset_metadata: LogOffsetMetadata) -> FetchDataInfo:
        """Batches from the one containing ``start_offset``, bounded by ``max_offset_metadata``
        (the high watermark or LEO).  OffsetOutOfRangeError past the LEO."""
        end_offset = self.next_offset_metadata.message_offset
        hint = self._read_hint
        start_position: int | None = None
        if hint is not None and hint[0] == start_offset and self.segments.get(hint[1].base_offset) is hint[1]:
            segment, start_position = hint[1], hint[2]
        else:
            segment = self.segments.floor_segment(start_offset)
        if start_offset > end_offset or segment is None:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start_offset} for partition {self.topic_partition}, but we only have log segments upto {end_offset}.")
        if start_offset == max_offset_metadata.message_offset:
            return FetchDataInfo(max_offset_metadata, EMPTY_RECORDS)
        if start_offset > max_offset_metadata.message_offset:
            return FetchDataInfo(self.convert_to_offset_metadata_or_throw(start_offset), EMPTY_RECORDS)
        while segment is not None:
            if segment.base_offset < max_offset_metadata.segment_base_offset:
                max_position: int | None = segment.size()
            elif segment.base_offset == max_offset_metadata.segment_base_offset and not max_offset_metadata.message_offset_only():
                max_position = max_offset_metadata.relative_position_in_segment
            else:
                max_position = None
                if not max_offset_metadata.message_offset_only():
                    max_position = 0  # the bound lies in an earlier segment: nothing here
            if max_position is None:
                # bound known by offset only: read up to the segment end but not past the bound
                pos = segment.translate_offset(max_offset_metadata.message_offset)
                max_position = pos.position if pos is not None else segment.size()
            info = segment.read(start_offset, max_length, max_position, min_one_message, start_position)
            if info is not None:
                if info.next_batch is not None:
                    # cut by the size limit: the partition's next fetch starts at the batch after
                    self._read_hint = (info.next_batch[0], segment, info.next_batch[1])
                records = info.records
                if (records.length and records.position + records.length == max_position
                        and segment.base_offset == max_offset_metadata.segment_base_offset
                        and not max_offset_metadata.message_offset_only()):
                    self._read_hint = (max_offset_metadata.message_offset, segment, max_position)
                return info
            start_position = None
            segment = self.segments.higher_segment(segment.base_offset)
        # past the end of the last segment: all data >= start_offset was deleted
        return FetchDataInfo(self.next_offset_metadata, EMPTY_RECORDS)

    def convert_to_offset_metadata_or_throw(self, offset: int) -> LogOffsetMetadata:
        return self.read(offset, 1, False, self.next_offset_metadata).fetch_offset_metadata

    # -- truncation and deletion
    def truncate_to(self, target_offset: int) -> list[LogSegment]:
        self._read_hint = None
        deletable = [s for s in self.segments.values() if s.base_offset > target_offset]
        self.remove_and_delete_segments(deletable, async_delete=True)
        active = self.segments.active_segment()
        active.truncate_to(target_offset)
        # Kafka sets the LEO to target_offset; when the target falls inside a batch (never the
        # case for replication, which truncates at batch boundaries) that would leave a gap, so
        # we use the offset after the last batch kept, which equals the target otherwise.
        self.update_log_end_offset(min(target_offset, active.read_next_offset()))
        return deletable

    def truncate_fully_and_start_at(self, new_offset: int) -> list[LogSegment]:
        self._read_hint = None
        to_delete = self.segments.values()
        self.remove_and_delete_segments(to_delete, async_delete=True)
        self.segments.add(LogSegment.open(self.dir, new_offset, self.config, self.clock))
        self.update_log_end_offset(new_offset)
        self.recovery_point = min(self.recovery_point, new_offset)
        return to_delete

    def remove_and_delete_segments(self, segments_to_delete: list[LogSegment], async_delete: bool) -> None:
        to_delete = list(segments_to_delete)
        for seg in to_delete:
            self.segments.remove(seg.base_offset)
        self.delete_segment_files(to_delete, async_delete)

    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> list[LogSegment]:
        """Swap ``new_segments`` (files ``*.cleaned``) in for ``old_segments``, crash-safely (see
        the module docstring), in one call: ``Log.replace_segments`` runs the same three steps
        with its lock held only around the second."""
        self.rename_cleaned_to_swap(new_segments)
        deleted_not_replaced = self.swap_in(new_segments, old_segments)
        self.fsync_dir()
        return deleted_not_replaced

    def rename_cleaned_to_swap(self, new_segments: list[LogSegment]) -> None:
        """Step 1 of a replacement: ``*.cleaned`` -> ``*.swap`` (highest base offset first: the
        loader treats ``.swap`` files at or above the lowest ``.cleaned`` one as unfinished),
        then fsync the directory so that the swap files are durable before any old segment
        is renamed ``.deleted``.  Touches no segment of the map: may run without the log's
        lock, provided nothing can truncate or delete segments meanwhile (``Log`` holds its
        ``replace_lock``)."""
        for seg in sorted(new_segments, key=lambda s: s.base_offset, reverse=True):
            seg.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
        fsync_path(self.dir)

    def swap_in(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> list[LogSegment]:
        """Step 2, under the log's lock (renames of segments in the map, no fsync): the new
        segments enter the map, the old ones leave it and are renamed ``.deleted`` (deleted
        after file.delete.delay.ms), the new files lose ``.swap``.  Old segments no longer in
        the map are skipped.  Returns the old segments not replaced by a new one with the same
        base offset.  Step 3 is ``fsync_dir`` (idempotent on recovery: the loader finishes a
        swap whose last renames were lost)."""
        new_sorted = sorted(new_segments, key=lambda s: s.base_offset)
        old_sorted = sorted((s for s in old_segments if self.segments.get(s.base_offset) is s),
                            key=lambda s: s.base_offset)
        for seg in reversed(new_sorted):
            self.segments.add(seg)
        new_bases = {s.base_offset for s in new_sorted}
        deleted_not_replaced = []
        for seg in old_sorted:
            if seg.base_offset not in new_bases:
                self.segments.remove(seg.base_offset)
                deleted_not_replaced.append(seg)
            self.delete_segment_files([seg], async_delete=True)
        for seg in new_sorted:
            seg.change_file_suffixes(SWAP_FILE_SUFFIX, "")
        return deleted_not_replaced

    def fsync_dir(self) -> None:
        """fsync the log's directory (its entries: creations, renames, deletions)."""
        fsync_path(self.dir)

    def delete_segment_files(self, to_delete: list[LogSegment], async_delete: bool) -> None:
        for seg in to_delete:
            if not seg.has_suffix(DELETED_FILE_SUFFIX):
                seg.change_file_suffixes("", DELETED_FILE_SUFFIX)

        def delete_segments() -> None:
            for seg in to_delete:
                seg.delete_if_exists()

        if async_delete:
            self.scheduler.schedule_once("delete-file", delete_segments, self.config.file_delete_delay_ms)
        else:
            delete_segments()

    def delete_all_segments(self) -> list[LogSegment]:
        deleted = self.segments.values()
        for seg in deleted:
            seg.delete_if_exists()
        self.segments.clear()
        return deleted

    def delete_empty_dir(self) -> None:
        if self.segments.number_of_segments() != 0:
            raise RuntimeError(f"Can not delete directory when {self.segments.number_of_segments()} segments are still present")
        for name in os.listdir(self.dir):
            os.remove(os.path.join(self.dir, name))
        os.rmdir(self.dir)

    def close(self) -> None:
        self.check_if_memory_mapped_buffer_closed()
        self.segments.close()
        self.closed = True

    def close_handlers(self) -> None:
        for seg in self.segments.values():
            seg.close_handlers()
        self.closed = True
