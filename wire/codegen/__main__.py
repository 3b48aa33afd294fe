"""``python -m wire.codegen [--schemas DIR] [--check]``: (re)generate wire/_generated."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wire.codegen.emit import render_messages, render_table
from wire.codegen.schema_json import load_schemas

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "_generated"
SCHEMAS = HERE / "schemas"          # Kafka 4.4.0's schema files, unmodified
OLDER_SCHEMAS = HERE / "schemas-3.9"  # the APIs Kafka 4 removed whole that kbroker serves


def generate(schemas: Path = SCHEMAS, older: Path | None = OLDER_SCHEMAS) -> dict[str, str]:
    msgs = load_schemas(schemas, older)
    return {"schema_table.py": render_table(msgs), "messages.py": render_messages(msgs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wire.codegen")
    ap.add_argument("--schemas", type=Path, default=SCHEMAS)
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
