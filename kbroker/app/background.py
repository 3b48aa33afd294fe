"""The broker's one background thread: disk work that must never stall request handling.

Kafka runs retention, segment deletion, flushes and checkpoints on its KafkaScheduler's
threads.  kbroker does the same on one daemon thread that wakes every ``tick_s`` and runs
what log/'s Scheduler has due (the log cleaner has threads and worker processes of its own: cleaner_processes.py).  This is safe because
``log.Log`` takes its own lock for every mutation (appends from the event loop and
retention from here serialize there), ``Scheduler`` queues under a lock, and a segment
deleted here stays readable by an in-flight fetch (renamed ``.deleted``, removed after
``file.delete.delay.ms``).  Group timers stay on the event loop: groups/ is not shared.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("kbroker.background")


class BackgroundWorker:
    def __init__(self, work: Callable[[], object], tick_s: float, name: str = "kbroker-background"):
        self._work = work
        self._tick_s = tick_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> BackgroundWorker:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self._tick_s):
            try:
                self._work()
            except Exception:  # noqa: BLE001 - the worker must outlive one bad pass
                log.exception("background work failed")

    def stop(self, timeout_s: float = 30.0) -> None:
        """Finish the pass under way (if any) and end the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
