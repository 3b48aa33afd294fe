"""A cooperative task scheduler driven by the injected clock (Kafka's ``Scheduler``).

Kafka runs ``delete-file``, ``flush-log``, ``kafka-log-retention`` and the checkpoint tasks on a
``KafkaScheduler`` thread pool.  log/ owns no threads and no event loop: tasks are queued here
and run when the owner calls :meth:`Scheduler.run_pending` (the broker does so from its one
background thread, so disk work never stalls request handling; tests call it after moving a
``ManualClock``).  Tasks may be queued from any thread (the queue has a lock); they run on
whichever thread calls ``run_pending``, one at a time.  A task that raises is logged and,
if periodic, rescheduled, so one failing partition does not stop retention for the others.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
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
    """Queue of (due time, task).  ``schedule*`` from any thread; ``run_pending`` from one
    thread at a time (the broker's background thread, or a test)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[ScheduledTask] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()  # guards _heap and _seq; never held while a task runs
        self._shut_down = False

    def schedule_once(self, name: str, fn: Callable[[], object], delay_ms: int = 0) -> ScheduledTask:
        return self.schedule(name, fn, delay_ms, -1)

    def schedule(
        self, name: str, fn: Callable[[], object], delay_ms: int = 0, period_ms: int = -1
    ) -> ScheduledTask:
        """Run ``fn`` after ``delay_ms``, then every ``period_ms`` if that is > 0."""
        with self._lock:
            task = ScheduledTask(
                self.clock.milliseconds() + max(0, delay_ms), next(self._seq), name, fn, period_ms
            )
            heapq.heappush(self._heap, task)
        return task

    def next_due_ms(self) -> int | None:
        """Due time of the earliest live task (the broker sleeps until then), or None."""
        with self._lock:
            while self._heap and self._heap[0].cancelled:
                heapq.heappop(self._heap)
            return self._heap[0].due_ms if self._heap else None

    def shutdown(self) -> None:
        """No task runs any more (Kafka's KafkaScheduler.shutdown: queued and delayed tasks
        are dropped, the one under way finishes): a ``run_pending`` under way returns after
        its current task.  At broker shutdown the backlog (e.g. one leader-epoch flush per
        partition after a big creation: thousands of fsyncs) is not worked off first: the
        logs' close writes and syncs what those tasks would have."""
        self._shut_down = True

    def run_pending(self) -> int:
        """Run every task due by now (none after ``shutdown``); returns how many ran."""
        ran = 0
        now = self.clock.milliseconds()
        while True:
            with self._lock:
                if self._shut_down or not self._heap or self._heap[0].due_ms > now:
                    return ran
                task = heapq.heappop(self._heap)
            if task.cancelled:
                continue
            try:
                task.fn()
            except Exception:  # noqa: BLE001 - a task failure must not stop the others
                _log.exception("scheduled task %s failed", task.name)
            ran += 1
            if task.period_ms > 0 and not task.cancelled:
                with self._lock:
                    task.due_ms = now + task.period_ms
                    task.seq = next(self._seq)
                    heapq.heappush(self._heap, task)

    def pending_names(self) -> list[str]:
        with self._lock:
            return [t.name for t in sorted(self._heap) if not t.cancelled]
