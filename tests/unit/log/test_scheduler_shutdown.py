"""Scheduler.shutdown (Kafka's KafkaScheduler.shutdown): the task under way finishes, the
queued ones are dropped, nothing runs afterwards."""

from __future__ import annotations

from log.clock import ManualClock
from log.scheduler import Scheduler


def test_a_shutdown_during_a_pass_ends_it_after_the_task_under_way_and_nothing_runs_afterwards():
    scheduler = Scheduler(ManualClock())
    ran: list[int] = []
    for i in range(5):
        scheduler.schedule_once(f"task-{i}", lambda i=i: (ran.append(i), i == 1 and scheduler.shutdown()))
    scheduler.schedule("periodic", lambda: ran.append(99), 0, 10)
    assert scheduler.run_pending() == 2
    assert ran == [0, 1]
    scheduler.schedule_once("late", lambda: ran.append(100))
    assert scheduler.run_pending() == 0
    assert ran == [0, 1]
