"""``python -m kbroker serve [server.properties] [--override key=value ...]``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kbroker")
    sub = ap.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start a broker")
    serve.add_argument("properties", nargs="?", help="a server.properties file")
    serve.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    if args.command == "serve":
        print(
            "kbroker: the network server lands with issue 4 "
            "(the codec and the storage engine come first); nothing to serve yet.",
            file=sys.stderr,
        )
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
