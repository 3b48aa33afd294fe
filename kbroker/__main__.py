"""``kbroker serve [server.properties] [--override key=value ...]``, like kafka-server-start.sh."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

import click

from cluster.coordination import CoordinationError
from kbroker import stack_dump
from kbroker.broker import Broker, new_event_loop
from kbroker.config import ConfigError, load_config
from log.log_dir_checks import LogDirError


def _serve(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.properties, args.override)
    except ConfigError as e:
        logging.getLogger("kbroker").error("%s", e)
        return 1
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    broker = Broker(config)
    stop = asyncio.Event()

    async def main() -> None:
        await broker.start_async()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        stack_dump.install(loop)
        await stop.wait()
        logging.getLogger("kbroker").info("shutting down")
        await broker.stop_async()

    try:
        loop.run_until_complete(main())
    except LogDirError as e:  # storage refused at start-up: the message says which dir and why
        logging.getLogger("kbroker").error("cannot start: %s", e)
        return 1
    except OSError as e:
        logging.getLogger("kbroker").error("cannot start: %s", e)
        return 1
    except CoordinationError as e:  # cluster mode: ZooKeeper unreachable, broker.id taken
        logging.getLogger("kbroker").error("cannot start: %s", e)
        return 1
    finally:
        loop.close()
    return 0


def _serve_main(argv: list[str]) -> int:
    """``kbroker serve ...``: parsed by argparse exactly as before the tools existed (the
    Makefile, tests/compat/broker_process.py and the cluster harness start brokers so)."""
    ap = argparse.ArgumentParser(prog="kbroker serve", description="start a broker (like kafka-server-start.sh)")
    ap.add_argument("properties", nargs="?", help="a server.properties file")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="set a property, overriding the file")
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    return _serve(args)


@click.group(name="kbroker", help="A Kafka broker in Python, and Kafka's command-line tools.")
def cli() -> None:
    pass


@cli.command("serve", help="Start a broker (like kafka-server-start.sh): "
             "serve [server.properties] [--override key=value ...] [--log-level LEVEL].",
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                               "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def serve(args: tuple[str, ...]) -> None:
    sys.exit(_serve_main(list(args)))


def _add_tools() -> None:
    from kbroker.tools import commands
    for command in commands():
        cli.add_command(command)
    from kbroker.console.cli import console  # the web console (kbroker/console/, issue 18)
    cli.add_command(console)


_add_tools()


def main(argv: list[str] | None = None) -> int:
    """The console script ``kbroker``: returns the exit status."""
    try:
        cli.main(args=argv, prog_name="kbroker", standalone_mode=True)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
