"""Progress lines for long work (start-up log loading/recovery): done of total, bytes per
second and time left, at most one line per ``interval_ms`` plus a summary at the end.

Time comes from the injected clock (log/clock.py), so tests drive it with a ManualClock.
Line format (INFO)::

    <what>: 120/500 partitions (24%), 1.2 GB of 4.0 GB at 85.3 MB/s, about 33 s left
    <what>: done, 500 partitions (4.0 GB) in 47.1 s (85.0 MB/s)
"""

from __future__ import annotations

import logging

from log.clock import Clock

__all__ = ["Progress", "human_bytes"]


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


class Progress:
    def __init__(self, what: str, total_items: int, total_bytes: int, clock: Clock,
                 logger: logging.Logger, interval_ms: int = 10_000, unit: str = "partitions") -> None:
        self.what, self.unit = what, unit
        self.total_items, self.total_bytes = total_items, total_bytes
        self.clock, self.logger, self.interval_ms = clock, logger, interval_ms
        self.items = 0
        self.bytes = 0
        self.started_ms = clock.milliseconds()
        self._last_line_ms = self.started_ms

    def _rate(self, elapsed_ms: int) -> float:
        return self.bytes * 1000 / elapsed_ms if elapsed_ms > 0 else 0.0

    def line(self) -> str:
        """The progress line as of now (also what ``advance`` logs)."""
        elapsed = self.clock.milliseconds() - self.started_ms
        rate = self._rate(elapsed)
        pct = 100 * self.items // self.total_items if self.total_items else 100
        text = (f"{self.what}: {self.items}/{self.total_items} {self.unit} ({pct}%), "
                f"{human_bytes(self.bytes)} of {human_bytes(self.total_bytes)} at {human_bytes(rate)}/s")
        if rate > 0 and self.total_bytes > self.bytes:
            text += f", about {(self.total_bytes - self.bytes) / rate:.0f} s left"
        return text

    def advance(self, items: int = 1, nbytes: int = 0) -> None:
        self.items += items
        self.bytes += nbytes
        now = self.clock.milliseconds()
        if now - self._last_line_ms >= self.interval_ms and self.items < self.total_items:
            self._last_line_ms = now
            self.logger.info("%s", self.line())

    def done(self) -> str:
        elapsed = self.clock.milliseconds() - self.started_ms
        text = (f"{self.what}: done, {self.items} {self.unit} ({human_bytes(self.bytes)}) in "
                f"{elapsed / 1000:.1f} s ({human_bytes(self._rate(elapsed))}/s)")
        self.logger.info("%s", text)
        return text
