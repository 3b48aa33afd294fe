"""LogSegments: the ordered map base offset -> LogSegment of one log (Kafka's ``LogSegments``).

Invariant: keys are the segments' base offsets, strictly increasing; the last segment is the
active one (appends go there).  Lookups are ``bisect`` over a sorted list of base offsets, so
``floor_segment`` (which segment holds offset o) is O(log n).

Concurrency: the map is copy-on-write.  ``_state`` holds one ``(sorted base offsets, base
offset -> segment)`` pair that is never changed in place; a mutation builds a new pair and
replaces ``_state`` with one assignment (atomic in CPython).  Each lookup reads ``_state`` once,
so it sees the map before or after a concurrent mutation, never half of one.  That matters
because reads do not take the log's lock while retention (a background thread) or the log
cleaner's commit removes and replaces segments.  A mutation costs O(number of segments);
they are rare (roll, deletion, compaction).  Who may call: ``LocalLog`` mutates it under the
log's lock; readers call the lookups from any thread.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from log.segment import LogSegment

__all__ = ["LogSegments"]

_EMPTY: tuple[list[int], dict[int, LogSegment]] = ([], {})


class LogSegments:
    def __init__(self) -> None:
        self._state: tuple[list[int], dict[int, LogSegment]] = _EMPTY

    def add(self, segment: LogSegment) -> LogSegment:
        offsets, segments = self._state
        base = segment.base_offset
        new_segments = dict(segments)
        new_segments[base] = segment
        if base in segments:
            new_offsets = offsets
        else:
            new_offsets = list(offsets)
            bisect.insort(new_offsets, base)
        self._state = (new_offsets, new_segments)
        return segment

    def remove(self, offset: int) -> None:
        offsets, segments = self._state
        if offset in segments:
            new_segments = dict(segments)
            del new_segments[offset]
            new_offsets = list(offsets)
            new_offsets.pop(bisect.bisect_left(new_offsets, offset))
            self._state = (new_offsets, new_segments)

    def clear(self) -> None:
        self._state = _EMPTY

    def close(self) -> None:
        for s in self.values():
            s.close()

    def flush(self) -> None:
        for s in self.values():
            s.flush()

    def get(self, offset: int) -> LogSegment | None:
        return self._state[1].get(offset)

    def contains(self, offset: int) -> bool:
        return offset in self._state[1]

    __contains__ = contains

    def is_empty(self) -> bool:
        return not self._state[0]

    def number_of_segments(self) -> int:
        return len(self._state[0])

    __len__ = number_of_segments

    def base_offsets(self) -> list[int]:
        return list(self._state[0])

    def values(self, from_offset: int | None = None, to_offset: int | None = None) -> list[LogSegment]:
        """All segments, or those overlapping [from, to): from the one containing ``from``
        (its floor) up to but excluding the one whose base offset is >= ``to``."""
        offsets, segments = self._state
        if from_offset is None:
            return [segments[o] for o in offsets]
        if to_offset is not None and from_offset == to_offset:
            return []
        if to_offset is not None and to_offset < from_offset:
            raise ValueError(f"Invalid log segment range: requested segments from offset {from_offset} mapping to {to_offset}")
        i = bisect.bisect_right(offsets, from_offset) - 1
        i = max(i, 0)
        j = len(offsets) if to_offset is None else bisect.bisect_left(offsets, to_offset)
        return [segments[o] for o in offsets[i:j]]

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self.values())

    def non_active_log_segments_from(self, from_offset: int) -> list[LogSegment]:
        offsets, segments = self._state
        active = segments[offsets[-1]]
        if from_offset > active.base_offset:
            return []
        i = max(bisect.bisect_right(offsets, from_offset) - 1, 0)
        j = bisect.bisect_left(offsets, active.base_offset)
        return [segments[o] for o in offsets[i:j]] if from_offset != active.base_offset else []

    def active_segment(self) -> LogSegment:
        offsets, segments = self._state
        return segments[offsets[-1]]

    def last_segment(self) -> LogSegment | None:
        offsets, segments = self._state
        return segments[offsets[-1]] if offsets else None

    def first_segment_base_offset(self) -> int | None:
        offsets = self._state[0]
        return offsets[0] if offsets else None

    def floor_segment(self, offset: int) -> LogSegment | None:
        offsets, segments = self._state
        i = bisect.bisect_right(offsets, offset) - 1
        return segments[offsets[i]] if i >= 0 else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        offsets, segments = self._state
        i = bisect.bisect_right(offsets, offset)
        return segments[offsets[i]] if i < len(offsets) else None

    def higher_segments(self, offset: int) -> list[LogSegment]:
        offsets, segments = self._state
        i = bisect.bisect_right(offsets, offset)
        return [segments[o] for o in offsets[i:]]

    def size_in_bytes(self) -> int:
        return sum(s.size() for s in self._state[1].values())
