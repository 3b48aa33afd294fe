"""LogSegments: the ordered map base offset -> LogSegment of one log (Kafka's ``LogSegments``).

Invariant: keys are the segments' base offsets, strictly increasing; the last segment is the
active one (appends go there).  Lookups are ``bisect`` over a sorted list of base offsets, so
``floor_segment`` (which segment holds offset o) is O(log n).  Who may call: ``LocalLog``
mutates it under the log's lock; readers call the lookups.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from log.segment import LogSegment

__all__ = ["LogSegments"]


class LogSegments:
    def __init__(self) -> None:
        self._offsets: list[int] = []
        self._segments: dict[int, LogSegment] = {}

    def add(self, segment: LogSegment) -> LogSegment:
        base = segment.base_offset
        if base not in self._segments:
            bisect.insort(self._offsets, base)
        self._segments[base] = segment
        return segment

    def remove(self, offset: int) -> None:
        if offset in self._segments:
            del self._segments[offset]
            self._offsets.pop(bisect.bisect_left(self._offsets, offset))

    def clear(self) -> None:
        self._offsets.clear()
        self._segments.clear()

    def close(self) -> None:
        for s in self.values():
            s.close()

    def flush(self) -> None:
        for s in self.values():
            s.flush()

    def get(self, offset: int) -> LogSegment | None:
        return self._segments.get(offset)

    def contains(self, offset: int) -> bool:
        return offset in self._segments

    __contains__ = contains

    def is_empty(self) -> bool:
        return not self._offsets

    def number_of_segments(self) -> int:
        return len(self._offsets)

    __len__ = number_of_segments

    def base_offsets(self) -> list[int]:
        return list(self._offsets)

    def values(self, from_offset: int | None = None, to_offset: int | None = None) -> list[LogSegment]:
        """All segments, or those overlapping [from, to): from the one containing ``from``
        (its floor) up to but excluding the one whose base offset is >= ``to``."""
        if from_offset is None:
            return [self._segments[o] for o in self._offsets]
        if to_offset is not None and from_offset == to_offset:
            return []
        if to_offset is not None and to_offset < from_offset:
            raise ValueError(f"Invalid log segment range: requested segments from offset {from_offset} mapping to {to_offset}")
        i = bisect.bisect_right(self._offsets, from_offset) - 1
        i = max(i, 0)
        j = len(self._offsets) if to_offset is None else bisect.bisect_left(self._offsets, to_offset)
        return [self._segments[o] for o in self._offsets[i:j]]

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self.values())

    def non_active_log_segments_from(self, from_offset: int) -> list[LogSegment]:
        active = self.active_segment()
        if from_offset > active.base_offset:
            return []
        return self.values(from_offset, active.base_offset)

    def active_segment(self) -> LogSegment:
        return self._segments[self._offsets[-1]]

    def last_segment(self) -> LogSegment | None:
        return self._segments[self._offsets[-1]] if self._offsets else None

    def first_segment(self) -> LogSegment | None:
        return self._segments[self._offsets[0]] if self._offsets else None

    def first_segment_base_offset(self) -> int | None:
        return self._offsets[0] if self._offsets else None

    def floor_segment(self, offset: int) -> LogSegment | None:
        i = bisect.bisect_right(self._offsets, offset) - 1
        return self._segments[self._offsets[i]] if i >= 0 else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        i = bisect.bisect_right(self._offsets, offset)
        return self._segments[self._offsets[i]] if i < len(self._offsets) else None

    def lower_segment(self, offset: int) -> LogSegment | None:
        i = bisect.bisect_left(self._offsets, offset) - 1
        return self._segments[self._offsets[i]] if i >= 0 else None

    def higher_segments(self, offset: int) -> list[LogSegment]:
        i = bisect.bisect_right(self._offsets, offset)
        return [self._segments[o] for o in self._offsets[i:]]

    def size_in_bytes(self) -> int:
        return sum(s.size() for s in self._segments.values())
