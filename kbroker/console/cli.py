"""``kbroker console --bootstrap-server host:port [--listen http://127.0.0.1:9080]``."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

import click

from kbroker.console.server import DEFAULT_LISTENER, parse_listener, start_console
from kbroker.runtime.tasks import new_event_loop


@click.command("console", help="Serve the web console for a Kafka-compatible cluster (any broker "
               "list; it reads through the Kafka protocol).")
@click.option("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT...]",
              help="The cluster's brokers to connect to first.")
@click.option("--listen", default=DEFAULT_LISTENER, show_default=True, metavar="http://HOST:PORT",
              help="Where the console answers (port 0: a free one; the log line names it).")
@click.option("--log-level", default="INFO", show_default=True)
def console(bootstrap_server: str, listen: str, log_level: str) -> None:
    try:
        parse_listener(listen)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    stop = asyncio.Event()

    async def main() -> None:
        served = await start_console(listen, bootstrap_server)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await served.stop()

    try:
        loop.run_until_complete(main())
    except OSError as e:
        click.echo(f"cannot start the console: {e}", err=True)
        sys.exit(1)
    finally:
        loop.close()
