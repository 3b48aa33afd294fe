"""Live throughput for the console's charts: the sum of each topic's log end offsets,
sampled through ListOffsets every ``interval_s``; a rate is the difference of two samples.

It costs the cluster one ListOffsets per leader per interval, whatever the traffic, and
counts records appended (offsets), including those of producers the console never sees.
The last ``keep`` samples are kept (150 x 2 s = 5 minutes).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque

from kbroker.console.client import LATEST, ConsoleClient
from kbroker.runtime.tasks import cancel_and_wait, task_name

log = logging.getLogger("kbroker.console")


class ThroughputSampler:
    def __init__(self, client: ConsoleClient, interval_s: float = 2.0, keep: int = 150) -> None:
        self.client = client
        self.interval_s = interval_s
        self.samples: deque[tuple[float, dict[str, int]]] = deque(maxlen=keep)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            # cancelled until it has ended: one cancellation can be lost in the client's
            # 3.11 wait_for, and a plain ``await`` of the task would then wait for ever
            for task in await cancel_and_wait([self._task]):
                log.warning("throughput sampler did not stop: %s", task_name(task))
            self._task = None

    async def sample_once(self) -> None:
        cluster = await self.client.metadata()
        tps = [(t, p.partition) for t, parts in cluster.topics.items() if t not in cluster.internal
               for p in parts]
        ends = await self.client.list_offsets(tps, LATEST)
        totals: dict[str, int] = {}
        for (topic, _), end in ends.items():
            totals[topic] = totals.get(topic, 0) + end
        self.samples.append((time.time(), totals))

    async def _run(self) -> None:
        while True:
            try:
                await self.sample_once()
            except Exception as e:  # noqa: BLE001 - a cluster that is down must not end sampling
                log.debug("throughput sample failed: %r", e)
            await asyncio.sleep(self.interval_s)

    def rates(self, topic: str | None = None) -> dict[str, object]:
        """{"t": [epoch s...], "series": {topic: [records/s...]}}: one point per pair of
        samples; ``topic`` limits the series to that topic."""
        pts = list(self.samples)
        times: list[float] = []
        series: dict[str, list[float]] = {}
        for (t0, a), (t1, b) in zip(pts, pts[1:], strict=False):
            dt = max(t1 - t0, 1e-6)
            times.append(round(t1, 3))
            names = set(a) | set(b)
            if topic is not None:
                names &= {topic}
            for name in names:
                s = series.setdefault(name, [0.0] * (len(times) - 1))
                # a topic new since the last sample has no rate yet (its offsets are not new)
                delta = b[name] - a[name] if name in a and name in b else 0
                s.append(round(max(0, delta) / dt, 2))
            for s in series.values():
                if len(s) < len(times):
                    s.append(0.0)
        return {"t": times, "series": series}
