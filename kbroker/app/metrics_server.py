"""The ``/metrics`` endpoint (Prometheus text format) on ``kbroker.metrics.port``.

Off unless ``kbroker.metrics.port`` is set (0 picks a free port; the log line
``metrics endpoint on http://HOST:PORT/metrics`` names it).  It listens on the host of the
broker's first listener, served by aiohttp on the broker's own event loop: no other
process.  A scrape copies the numbers it needs on the loop (kbroker/app/metrics_collector.py's
``snapshot``: a few ms for thousands of partitions), then builds the families and the text
in a worker thread (the costly part, ~0.1 s for 2,000 partitions and 2,000 committed
offsets), so requests keep being served meanwhile.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from kbroker.app.metrics_collector import BrokerCollector, MetricsSource, Snapshot

if TYPE_CHECKING:
    from prometheus_client.core import Metric

log = logging.getLogger("kbroker.metrics")


class _Scrape(Collector):
    """One scrape's families, for prometheus-client's encoder (it asks ``collect()``)."""

    def __init__(self, families: Iterator[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        return self._families


class MetricsServer:
    def __init__(self, broker: MetricsSource) -> None:
        self.collector = BrokerCollector(broker)
        self.process = ProcessCollector(registry=None)   # process_cpu_seconds_total, RSS, fds
        self._runner: web.AppRunner | None = None
        self.port = 0

    def encode(self, snap: Snapshot) -> bytes:
        """The text of one scrape (any thread)."""
        return generate_latest(_Scrape(itertools.chain(self.collector.families(snap),
                                                       self.process.collect())))

    async def _metrics(self, request: web.Request) -> web.Response:
        snap = self.collector.snapshot()
        body = await asyncio.get_running_loop().run_in_executor(None, self.encode, snap)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self, host: str | None, port: int) -> int:
        """Listen on ``host``:``port`` (None: every interface); returns the bound port."""
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await site.start()
        self.port = self._runner.addresses[0][1]   # the bound port (port 0 picks one)
        log.info("metrics endpoint on http://%s:%d/metrics", host or "0.0.0.0", self.port)
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
