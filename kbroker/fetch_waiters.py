"""Parked fetches: a Fetch that found fewer than min_bytes waits here until an append to one
of its partitions (or its max_wait_ms) wakes it (Kafka's DelayedFetch purgatory).

Per partition a set of futures; ``notify(tp)`` completes and clears that partition's set.
Wake-ups are edge-triggered and cheap: the woken fetch re-reads and decides for itself
whether it now has enough.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

TopicPartition = tuple[str, int]


class FetchWaiters:
    def __init__(self) -> None:
        self._waiting: dict[TopicPartition, set[asyncio.Future[None]]] = defaultdict(set)

    def notify(self, tp: TopicPartition) -> None:
        waiters = self._waiting.pop(tp, None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    async def wait(self, tps: list[TopicPartition], timeout_s: float) -> None:
        """Return at the first append to any of ``tps``, or after ``timeout_s``."""
        if timeout_s <= 0:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for tp in tps:
            self._waiting[tp].add(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout_s)
        except TimeoutError:
            pass
        finally:
            for tp in tps:
                s = self._waiting.get(tp)
                if s is not None:
                    s.discard(fut)
                    if not s:
                        del self._waiting[tp]
            if not fut.done():
                fut.cancel()
