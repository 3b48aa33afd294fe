"""Keyed one-shot timers driven by the caller's clock (Kafka's ``CoordinatorTimer``).

Scheduling a key that is already scheduled replaces it, as in Kafka: each member has one
heartbeat (session) timer, each group one join timer and one sync timer.  Nothing here
sleeps or runs by itself: :meth:`Timers.due` hands back the expired callbacks in deadline
order and the coordinator runs them.  Ties run in scheduling order.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

__all__ = ["Timers"]


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str]] = []
        self._entries: dict[str, tuple[int, int, Callable[[], None]]] = {}
        self._seq = itertools.count()

    def schedule(self, key: str, deadline_ms: int, callback: Callable[[], None]) -> None:
        seq = next(self._seq)
        self._entries[key] = (deadline_ms, seq, callback)
        heapq.heappush(self._heap, (deadline_ms, seq, key))

    def cancel(self, key: str) -> None:
        self._entries.pop(key, None)

    def is_scheduled(self, key: str) -> bool:
        return key in self._entries

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            entry = self._entries.get(key)
            if entry is not None and entry[1] == seq:
                return
            heapq.heappop(heap)

    def next_deadline_ms(self) -> int | None:
        """The earliest live deadline, or None when nothing is scheduled."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> Callable[[], None] | None:
        """Remove and return the earliest callback whose deadline is <= now_ms, if any."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        _, _, callback = self._entries.pop(key)
        return callback

    def __len__(self) -> int:
        return len(self._entries)
