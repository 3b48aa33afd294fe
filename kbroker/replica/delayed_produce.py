"""The produce purgatory: acks=all produces parked until their records are replicated
(Kafka's ``DelayedProduce`` in ``ReplicaManager``'s produce purgatory, keyed by partition).

A parked produce names, per partition it appended to, the offset the HW must reach (last
offset + 1) and starts every partition at REQUEST_TIMED_OUT, as Kafka does.  Whenever
something may have completed it (the partition's HW moved, its ISR changed, its leadership
moved), :meth:`DelayedProduces.try_complete` asks ``check(tp, required_offset)`` — Kafka's
``Partition.checkEnoughReplicasReachOffset`` — for each parked produce watching that
partition: ``(True, error)`` settles that partition with ``error`` (NONE,
NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER).  The produce answers once every
partition is settled, or at its ``timeout_ms`` with the rest still REQUEST_TIMED_OUT.

:meth:`DelayedProduces.close` (the replica manager stops: nothing will move a HW any more)
answers every parked produce at once with what it has, the rest REQUEST_TIMED_OUT (the
outcome unknown, as at the timeout), and a produce parked afterwards answers at once too:
no handler, group-commit or transaction-log task stays parked until its timeout, past the
broker's shutdown.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable

from wire.error_codes import ErrorCode

__all__ = ["DelayedProduces"]

TopicPartition = tuple[str, int]
Check = Callable[[TopicPartition, int], tuple[bool, ErrorCode]]


class _Parked:
    __slots__ = ("pending", "results", "future")

    def __init__(self, pending: dict[TopicPartition, int], future: asyncio.Future[None]) -> None:
        self.pending = pending                              # tp -> required offset
        self.results = dict.fromkeys(pending, ErrorCode.REQUEST_TIMED_OUT)
        self.future = future


class DelayedProduces:
    def __init__(self, check: Check) -> None:
        self._check = check
        self._watching: dict[TopicPartition, set[_Parked]] = defaultdict(set)
        self._closed = False

    def __len__(self) -> int:
        return len({p for s in self._watching.values() for p in s})

    async def wait(self, required: dict[TopicPartition, int], timeout_ms: int) -> dict[TopicPartition, ErrorCode]:
        """Park until every partition in ``required`` (tp -> offset the HW must reach) is
        settled or ``timeout_ms`` passes; returns each partition's error code."""
        loop = asyncio.get_running_loop()
        parked = _Parked(dict(required), loop.create_future())
        for tp in list(parked.pending):   # maybe done already (tryCompleteElseWatch)
            self._settle(parked, tp)
        if not parked.pending or self._closed:
            return parked.results
        for tp in parked.pending:
            self._watching[tp].add(parked)
        timer = loop.call_later(max(0, timeout_ms) / 1000.0, _wake, parked.future)
        try:
            await parked.future
        finally:
            timer.cancel()
            for tp in required:
                s = self._watching.get(tp)
                if s is not None:
                    s.discard(parked)
                    if not s:
                        del self._watching[tp]
        return parked.results

    def try_complete(self, tp: TopicPartition) -> None:
        """Something that may settle ``tp`` happened: re-check the produces watching it."""
        watching = self._watching.get(tp)
        if not watching:
            return
        for parked in list(watching):
            if tp in parked.pending:
                self._settle(parked, tp)
            if not parked.pending:
                watching.discard(parked)
                _wake(parked.future)
        if not watching:
            self._watching.pop(tp, None)

    def close(self) -> None:
        """Answer every parked produce now (see the module docstring)."""
        self._closed = True
        for parked in {p for s in self._watching.values() for p in s}:
            _wake(parked.future)

    def watched(self) -> list[TopicPartition]:
        return list(self._watching)

    def _settle(self, parked: _Parked, tp: TopicPartition) -> None:
        done, error = self._check(tp, parked.pending[tp])
        if done:
            parked.results[tp] = error
            del parked.pending[tp]


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
