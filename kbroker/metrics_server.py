"""The ``/metrics`` endpoint (Prometheus text format) on ``kbroker.metrics.port``.

Off unless ``kbroker.metrics.port`` is set (0 picks a free port; the log line
``metrics endpoint on http://HOST:PORT/metrics`` names it).  It listens on the host of the
broker's first listener, served by aiohttp on the broker's own event loop: no thread, no
other process.  A scrape runs the collector (kbroker/metrics_collector.py), which reads
in-memory state only, then prometheus-client's text encoder.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from kbroker.metrics_collector import BrokerCollector

if TYPE_CHECKING:
    from kbroker.broker import Broker

log = logging.getLogger("kbroker.metrics")


class MetricsServer:
    def __init__(self, broker: Broker) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(broker))
        self.registry.register(ProcessCollector(registry=None))  # process_cpu_seconds_total, RSS, fds
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self, host: str | None, port: int) -> int:
        """Listen on ``host``:``port`` (None: every interface); returns the bound port."""
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await site.start()
        server = site._server   # aiohttp keeps the asyncio Server here; the bound port is on it
        self.port = server.sockets[0].getsockname()[1] if server is not None else port
        log.info("metrics endpoint on http://%s:%d/metrics", host or "0.0.0.0", self.port)
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
