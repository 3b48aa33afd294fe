"""Time for log/: an injected clock, never ``time.time()`` in the engine itself.

Kafka passes a ``Time`` to every storage class; we pass a :class:`Clock`.  Everything that
depends on wall-clock time (segment.ms rolls, retention.ms, file.delete.delay.ms, producer-id
expiry, LogAppendTime) reads ``clock.milliseconds()``, so tests drive it with
:class:`ManualClock` and never sleep.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "ManualClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Anything with ``milliseconds()`` (epoch ms, like Java's ``Time.milliseconds()``)."""

    def milliseconds(self) -> int: ...


class SystemClock:
    """Wall-clock epoch milliseconds.  The broker's default."""

    def milliseconds(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when told to (tests).  ``sleep`` is Kafka's ``MockTime.sleep``."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = start_ms

    def milliseconds(self) -> int:
        return self._now_ms

    def sleep(self, ms: int) -> None:
        """Advance the clock by ``ms`` milliseconds."""
        if ms < 0:
            raise ValueError("cannot move a clock backwards")
        self._now_ms += ms

    advance = sleep

    def set(self, now_ms: int) -> None:
        self._now_ms = now_ms
