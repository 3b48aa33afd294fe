"""Small JSON documents the broker keeps in its first log dir (topic config overrides,
dynamic broker configs): read whole, written whole to a temp file that is fsynced and
renamed over the old one, so a crash leaves the old or the new document, never half."""

from __future__ import annotations

import json
import os
from typing import Any


def read_json(path: str, default: Any) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def write_json_atomically(path: str, data: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
