"""``python -m wire.codegen [--schemas DIR] [--check]``: (re)generate wire/_generated."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wire.codegen.emit import render_messages, render_table
from wire.codegen.schema_json import load_schemas

OUT = Path(__file__).resolve().parent.parent / "_generated"


def generate(schemas: Path) -> dict[str, str]:
    msgs = load_schemas(schemas)
    return {"schema_table.py": render_table(msgs), "messages.py": render_messages(msgs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wire.codegen")
    ap.add_argument("--schemas", type=Path, default=Path("../shared/kafka-protocol"))
    ap.add_argument("--check", action="store_true", help="compare with the committed files")
    args = ap.parse_args(argv)
    if not args.schemas.is_dir():
        print(f"no schema folder at {args.schemas}", file=sys.stderr)
        return 2
    files = generate(args.schemas)
    stale = []
    for name, text in files.items():
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"stale generated files: {', '.join(stale)}; run `make gen`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
