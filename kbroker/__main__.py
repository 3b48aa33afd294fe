"""``kbroker serve [server.properties] [--override key=value ...]``, like kafka-server-start.sh."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import signal
import sys
from typing import Any

import click


def _serve(args: argparse.Namespace) -> int:
    # the broker is imported here, not at module level: the tools need none of it
    from cluster.coordination import CoordinationError
    from kbroker.app import stack_dump
    from kbroker.app.broker import Broker, new_event_loop
    from kbroker.app.gc_freeze import GcFreeze
    from kbroker.configs.config import ConfigError, load_config
    from kbroker.runtime.tasks import finish_loop
    from log.log_dir_checks import LogDirError

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
        # full collections that skip the long-lived state (kbroker/app/gc_freeze.py)
        freeze = GcFreeze(loop).install() if config["kbroker.gc.freeze.enable"] else None
        await stop.wait()
        logging.getLogger("kbroker").info("shutting down")
        if freeze is not None:
            freeze.uninstall()
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
        # every task ended and the executor's threads joined before the loop closes (a
        # failed start-up too): nothing is destroyed pending nor completes into a closed loop
        loop.run_until_complete(finish_loop())
        loop.close()
    return 0


def _serve_main(argv: list[str]) -> int:
    """``kbroker serve ...``: parsed by argparse exactly as before the tools existed (the
    Makefile, tests/support/broker_process.py and the cluster harness start brokers so)."""
    ap = argparse.ArgumentParser(prog="kbroker serve", description="start a broker (like kafka-server-start.sh)")
    ap.add_argument("properties", nargs="?", help="a server.properties file")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="set a property, overriding the file")
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    return _serve(args)


class _LazyGroup(click.Group):
    """Subcommands imported only when run (or listed by --help): ``kbroker topics`` loads
    neither the broker nor the web console."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy  # name -> "module:attribute" of a click command

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module, _, attr = self.lazy[name].partition(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)


def _lazy_commands() -> dict[str, str]:
    from kbroker.tools import COMMANDS
    return {**COMMANDS,
            "console": "kbroker.console.cli:console"}  # the web console (kbroker/console/, issue 18)


@click.group(name="kbroker", cls=_LazyGroup, lazy=_lazy_commands(),
             help="A Kafka broker in Python, and Kafka's command-line tools.")
def cli() -> None:
    pass


@cli.command("serve", help="Start a broker (like kafka-server-start.sh): "
             "serve [server.properties] [--override key=value ...] [--log-level LEVEL].",
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                               "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def serve(args: tuple[str, ...]) -> None:
    sys.exit(_serve_main(list(args)))


def main(argv: list[str] | None = None) -> int:
    """The console script ``kbroker``: returns the exit status."""
    try:
        cli.main(args=argv, prog_name="kbroker", standalone_mode=True)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
