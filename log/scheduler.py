"""A cooperative task scheduler driven by the injected clock (Kafka's ``Scheduler``).

Kafka runs ``delete-file``, ``flush-log``, ``kafka-log-retention`` and the checkpoint tasks on a
``KafkaScheduler`` thread pool.  log/ owns no threads and no event loop: tasks are queued here
and run when the owner calls :meth:`Scheduler.run_pending` (the broker does so from a timer on
its event loop; tests call it after moving a ``ManualClock``).  A task that raises is logged and,
if periodic, rescheduled, so one failing partition does not stop retention for the others.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from log.clock import Clock

__all__ = ["ScheduledTask", "Scheduler"]

_log = logging.getLogger(__name__)


@dataclass(order=True)
class ScheduledTask:
    due_ms: int
    seq: int
    name: str = field(compare=False)
    fn: Callable[[], object] = field(compare=False)
    period_ms: int = field(compare=False, default=-1)
    cancelled: bool = field(compare=False, default=False)

    def cancel(self) -> None:
        self.cancelled = True


class Scheduler:
    """Queue of (due time, task).  Who may call: the owner of the log/ objects (LogManager, the
    broker's timer, tests).  Not thread-safe; call it from one thread."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[ScheduledTask] = []
        self._seq = itertools.count()

    def schedule_once(self, name: str, fn: Callable[[], object], delay_ms: int = 0) -> ScheduledTask:
        return self.schedule(name, fn, delay_ms, -1)

    def schedule(
        self, name: str, fn: Callable[[], object], delay_ms: int = 0, period_ms: int = -1
    ) -> ScheduledTask:
        """Run ``fn`` after ``delay_ms``, then every ``period_ms`` if that is > 0."""
        task = ScheduledTask(
            self.clock.milliseconds() + max(0, delay_ms), next(self._seq), name, fn, period_ms
        )
        heapq.heappush(self._heap, task)
        return task

    def next_due_ms(self) -> int | None:
        """Due time of the earliest live task (the broker sleeps until then), or None."""
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0].due_ms if self._heap else None

    def run_pending(self) -> int:
        """Run every task due by now; returns how many ran."""
        ran = 0
        now = self.clock.milliseconds()
        while self._heap and self._heap[0].due_ms <= now:
            task = heapq.heappop(self._heap)
            if task.cancelled:
                continue
            try:
                task.fn()
            except Exception:  # noqa: BLE001 - a task failure must not stop the others
                _log.exception("scheduled task %s failed", task.name)
            ran += 1
            if task.period_ms > 0 and not task.cancelled:
                task.due_ms = now + task.period_ms
                task.seq = next(self._seq)
                heapq.heappush(self._heap, task)
        return ran

    def pending_names(self) -> list[str]:
        return [t.name for t in sorted(self._heap) if not t.cancelled]
