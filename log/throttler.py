"""Throttler: keep the cleaners' I/O under ``log.cleaner.io.max.bytes.per.second`` (Kafka's
``Throttler``).

Callers report bytes read or written with :meth:`maybe_throttle`; every ``check_interval_ms``
(300 ms, as Kafka) the observed rate is compared with the desired one and, if above, the
calling thread sleeps just long enough to bring the average back down.  Shared by all cleaners
(a lock guards the counters); the sleep happens outside the lock, in the cleaner's own (worker)
thread, never on the broker's event loop.  Time here is real elapsed time (``monotonic`` and
``sleep`` are injectable for tests): the throttle paces I/O, it schedules nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["Throttler"]


class Throttler:
    def __init__(self, desired_rate_per_sec: float, check_interval_ms: int = 300,
                 monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.desired_rate_per_sec = desired_rate_per_sec
        self.check_interval_s = check_interval_ms / 1000
        self._monotonic = monotonic
        self._sleep = sleep
        self._lock = threading.Lock()
        self._period_start = monotonic()
        self._observed = 0.0

    def maybe_throttle(self, observed: float) -> None:
        pause = 0.0
        with self._lock:
            self._observed += observed
            now = self._monotonic()
            elapsed = now - self._period_start
            if elapsed > self.check_interval_s:
                rate = self._observed / elapsed
                if rate > self.desired_rate_per_sec:
                    pause = self._observed / self.desired_rate_per_sec - elapsed
                self._period_start = now + max(pause, 0.0)
                self._observed = 0.0
        if pause > 0:
            self._sleep(pause)
