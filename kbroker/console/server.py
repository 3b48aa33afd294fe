"""The console's aiohttp application and how it is run.

* Inside a broker: ``kbroker.console.listener=http://HOST:PORT`` makes kbroker/app/broker.py call
  :func:`start_console` once the broker listens; the console then talks to that broker's
  own listener through the Kafka protocol, on the broker's loop.
* Standalone: ``kbroker console --bootstrap-server host:port [--listen http://127.0.0.1:9080]``
  runs :func:`run_console` against any Kafka-compatible cluster.

The log line ``console on http://HOST:PORT/`` names the bound address (port 0 picks one).
A page whose cluster cannot be reached answers 502 with the reason, and the next request
tries again.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from kbroker.console import pages
from kbroker.console.client import ConsoleClient, KafkaError
from kbroker.console.render import page
from kbroker.console.throughput import ThroughputSampler

log = logging.getLogger("kbroker.console")
STATIC = Path(__file__).with_name("static")
DEFAULT_LISTENER = "http://127.0.0.1:9080"


def parse_listener(listener: str) -> tuple[str, int]:
    """``http://HOST:PORT`` (or ``HOST:PORT``) -> (host, port)."""
    parts = urlsplit(listener if "://" in listener else "http://" + listener)
    if parts.scheme != "http" or parts.port is None:
        raise ValueError(f"console listener {listener!r} is not http://HOST:PORT")
    return parts.hostname or "127.0.0.1", parts.port


@web.middleware
async def _unreachable(request: web.Request, handler):  # type: ignore[no-untyped-def]
    try:
        return await handler(request)
    except (OSError, KafkaError) as e:   # the client's ConnectionError, TimeoutError included
        log.info("console page %s failed: %r", request.path, e)
        body = page("Cluster unreachable", "", error=f"The cluster did not answer: {e}")
        return web.Response(text=body, content_type="text/html", status=502)


def make_app(bootstrap: str, sample_interval_s: float = 2.0) -> web.Application:
    app = web.Application(middlewares=[_unreachable])
    client = ConsoleClient(bootstrap)
    app[pages.CLIENT] = client
    app[pages.SAMPLER] = ThroughputSampler(ConsoleClient(bootstrap), sample_interval_s)
    r = app.router
    r.add_get("/", pages.overview)
    r.add_get("/brokers", pages.brokers)
    r.add_get("/topics", pages.topics)
    r.add_post("/topics", pages.create_topic)
    r.add_get("/topics/{topic}", pages.topic)
    r.add_post("/topics/{topic}/config", pages.alter_config)
    r.add_post("/topics/{topic}/delete", pages.delete_topic)
    r.add_get("/topics/{topic}/messages", pages.messages)
    r.add_get("/groups", pages.groups)
    r.add_get("/groups/{group}", pages.group)
    r.add_get("/api/throughput", pages.throughput)
    r.add_static("/static", STATIC)

    async def on_startup(app: web.Application) -> None:
        app[pages.SAMPLER].start()

    async def on_cleanup(app: web.Application) -> None:
        await app[pages.SAMPLER].stop()
        app[pages.SAMPLER].client.close()
        app[pages.CLIENT].close()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


class Console:
    """A running console; ``url`` is where it answers."""

    def __init__(self, runner: web.AppRunner, url: str) -> None:
        self._runner = runner
        self.url = url

    async def stop(self) -> None:
        await self._runner.cleanup()


async def start_console(listener: str, bootstrap: str, sample_interval_s: float = 2.0) -> Console:
    host, port = parse_listener(listener)
    runner = web.AppRunner(make_app(bootstrap, sample_interval_s), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    bound = runner.addresses[0][1]   # the bound port (port 0 picks one)
    console = Console(runner, f"http://{host}:{bound}/")
    log.info("console on %s (cluster at %s)", console.url, bootstrap)
    return console


async def run_console(bootstrap: str, listener: str = DEFAULT_LISTENER) -> None:
    """Serve until cancelled (Ctrl-C / SIGTERM end the process)."""
    console = await start_console(listener, bootstrap)
    try:
        await asyncio.Event().wait()
    finally:
        await console.stop()
