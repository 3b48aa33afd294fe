"""Retention: which whole segments a log deletes, and deleting them (Kafka's
``UnifiedLog.deleteOldSegments`` and its three breach rules).

A segment is deletable from the front of the log while the rule holds for it and its whole
range lies below the high watermark (the log start offset never passes the HW), and never
when it is the last segment and empty.  Deleting every segment rolls first, so there is
always an active segment.  Deletion moves the log start offset to the first kept segment's
base offset and removes the files later (``file.delete.delay.ms``), as do the segments'
producer snapshots.

``SegmentRetention`` is a part of ``Log`` (log.py), split out by job; it uses the log's
``segments``, ``config``, ``clock``, ``lock``/``replace_lock``, ``roll``,
``maybe_increment_log_start_offset`` and ``_delete_producer_snapshots``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from log.segment import LogSegment

__all__ = ["SegmentRetention"]


class SegmentRetention:
    def delete_old_segments(self) -> int:
        """Kafka's ``deleteOldSegments``: log-start-offset breach always; with
        cleanup.policy=delete also retention.bytes then retention.ms.  Returns segments deleted."""
        if self.config.delete:
            return (self._delete_log_start_offset_breached_segments()
                    + self._delete_retention_size_breached_segments()
                    + self._delete_retention_ms_breached_segments())
        return self._delete_log_start_offset_breached_segments()

    def _deletable_segments(self, predicate) -> list[LogSegment]:
        segs = self.segments.values()
        deletable = []
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            is_last_and_empty = nxt is None and seg.size() == 0
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            # never delete data at or above the high watermark: the log start offset must not pass it
            if self.high_watermark >= upper and predicate(seg, nxt) and not is_last_and_empty:
                deletable.append(seg)
            else:
                break
        return deletable

    def _delete_old_segments(self, predicate) -> int:
        with self.replace_lock, self.lock:
            deletable = self._deletable_segments(predicate)
            return self._delete_segments(deletable) if deletable else 0

    def _delete_segments(self, deletable: list[LogSegment]) -> int:
        num = len(deletable)
        to_delete = deletable
        if self.segments.number_of_segments() == num:
            # "we must always have at least one segment": the active segment is rolled first,
            # so what gets deleted is no longer the segment appends go to
            new_segment = self.roll()
            if deletable[-1].base_offset == new_segment.base_offset:
                to_delete = deletable[:-1]
        self.local_log.check_if_memory_mapped_buffer_closed()
        if to_delete:
            higher = self.segments.higher_segment(to_delete[-1].base_offset)
            assert higher is not None
            self.maybe_increment_log_start_offset(higher.base_offset, "SegmentDeletion")
            self.local_log.remove_and_delete_segments(to_delete, async_delete=True)
        self._delete_producer_snapshots(deletable, async_delete=True)
        return num

    def _delete_retention_ms_breached_segments(self) -> int:
        retention_ms = self.config.retention_ms
        if retention_ms < 0:
            return 0
        start_ms = self.clock.milliseconds()
        return self._delete_old_segments(lambda seg, nxt: start_ms - seg.largest_timestamp() > retention_ms)

    def _delete_retention_size_breached_segments(self) -> int:
        retention_size = self.config.retention_bytes
        log_size = self.size()
        if retention_size < 0 or log_size < retention_size:
            return 0
        diff = [log_size - retention_size]

        def should_delete(seg: LogSegment, nxt: LogSegment | None) -> bool:
            if diff[0] - seg.size() >= 0:
                diff[0] -= seg.size()
                return True
            return False

        return self._delete_old_segments(should_delete)

    def _delete_log_start_offset_breached_segments(self) -> int:
        lso = self.log_start_offset
        return self._delete_old_segments(lambda seg, nxt: nxt is not None and nxt.base_offset <= lso)
