"""Parked fetches: a Fetch that found fewer than min_bytes waits here until an append to one
of its partitions (or its max_wait_ms) wakes it (Kafka's DelayedFetch purgatory).

Per partition a set of futures; ``notify(tp)`` completes and clears that partition's set.
Wake-ups are edge-triggered and cheap: the woken fetch re-reads and decides for itself
whether it now has enough.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, defaultdict
from collections.abc import Collection

TopicPartition = tuple[str, int]

# ``changed`` keeps at most this many partitions (one entry per partition ever notified, so
# it grows only with topic churn); the oldest entries go first and a session that last
# looked before them reads all of its partitions once (changed_since answers None).
MAX_CHANGED = 100_000


class FetchWaiters:
    def __init__(self) -> None:
        self._waiting: dict[TopicPartition, set[asyncio.Future[None]]] = defaultdict(set)
        # For KIP-227 sessions (kbroker/handlers/fetch_session_reads.py: which of a session's
        # partitions may have changed since it last looked): every notify is numbered;
        # ``changed`` holds each notified partition's latest number, oldest first.
        self.seq = 0
        self.changed: OrderedDict[TopicPartition, int] = OrderedDict()
        self.dropped_upto = 0   # the latest notify number ``changed`` no longer holds
        # parked fetches waiting on a container of partitions tested at each notify (a
        # fetch session's 10,000 partitions, not registered one by one per wait)
        self._among: dict[asyncio.Future[None], Collection[TopicPartition]] = {}

    def changed_since(self, seq: int) -> list[TopicPartition] | None:
        """The partitions notified after notify number ``seq``, latest first; None when
        some of them may have been dropped (MAX_CHANGED): the caller looks at everything."""
        if seq < self.dropped_upto:
            return None
        out = []
        for tp, n in reversed(self.changed.items()):
            if n <= seq:
                break
            out.append(tp)
        return out

    def notify(self, tp: TopicPartition) -> None:
        self.seq += 1
        self.changed[tp] = self.seq
        self.changed.move_to_end(tp)
        if len(self.changed) > MAX_CHANGED:
            self.dropped_upto = self.changed.popitem(last=False)[1]
        waiters = self._waiting.pop(tp, None)
        if waiters:
            for fut in waiters:
                _wake(fut)
        if self._among:
            for fut, among in self._among.items():
                if tp in among:
                    _wake(fut)

    async def wait(self, tps: list[TopicPartition] | Collection[TopicPartition], timeout_s: float,
                   also: asyncio.Future[None] | None = None) -> None:
        """Return at the first append to any of ``tps``, after ``timeout_s``, or once
        ``also`` is done.  ``tps``: a list (each partition registered) or another
        collection, kept as is and asked ``tp in tps`` at each notify (cheap for a large
        set that changes rarely; costs one test per notify while parked)."""
        if timeout_s <= 0 or (also is not None and also.done()):
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        among = type(tps) is not list
        if among:
            self._among[fut] = tps
            tps = []
        for tp in tps:
            self._waiting[tp].add(fut)

        def woken_by_also(_: asyncio.Future[None]) -> None:
            _wake(fut)

        if also is not None:
            also.add_done_callback(woken_by_also)
        # A timer that completes the future, not asyncio.wait_for(shield(fut)): that wraps
        # every parked fetch in two more futures and a task, per wake-up.
        timer = loop.call_later(timeout_s, _wake, fut)
        try:
            await fut
        finally:
            timer.cancel()
            if among:
                del self._among[fut]
            if also is not None:
                also.remove_done_callback(woken_by_also)
            for tp in tps:
                s = self._waiting.get(tp)
                if s is not None:
                    s.discard(fut)
                    if not s:
                        del self._waiting[tp]
            if not fut.done():
                fut.cancel()


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
