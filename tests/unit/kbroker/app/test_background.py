"""The broker's background thread runs disk work off the event loop."""

from __future__ import annotations

import threading
import time

from kbroker.app.background import BackgroundWorker


def test_the_background_worker_keeps_running_after_a_pass_raises_and_stops_when_asked() -> None:
    calls: list[str] = []
    threads: set[str] = set()

    def work() -> None:
        threads.add(threading.current_thread().name)
        calls.append("pass")
        if len(calls) == 1:
            raise RuntimeError("one bad pass")

    w = BackgroundWorker(work, 0.01, name="bg-test").start()
    deadline = time.time() + 60  # generous for a busy machine; returns after the third pass
    while len(calls) < 3 and time.time() < deadline:
        time.sleep(0.01)
    w.stop()  # joins the thread: no pass can run after it returns
    assert len(calls) >= 3
    assert "bg-test" not in {t.name for t in threading.enumerate()}
    assert threads == {"bg-test"}


def test_the_scheduler_takes_tasks_from_other_threads_while_it_runs() -> None:
    from log.clock import SystemClock
    from log.scheduler import Scheduler

    s = Scheduler(SystemClock())
    ran: list[int] = []

    def add(i: int) -> None:
        s.schedule_once(f"t{i}", lambda: ran.append(i))

    adders = [threading.Thread(target=lambda k=k: [add(k * 1000 + j) for j in range(500)]) for k in range(4)]
    for t in adders:
        t.start()
    while any(t.is_alive() for t in adders):
        s.run_pending()
    for t in adders:
        t.join()
    s.run_pending()
    assert sorted(ran) == sorted(k * 1000 + j for k in range(4) for j in range(500))
