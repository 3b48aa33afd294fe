"""Read Kafka's message schema JSON files into the normalized table rows.

Kafka's files are JSON with ``//`` line comments (licence headers and notes).  A
normalized message is a dict::

    {"name", "type", "api_key", "valid": (lo, hi), "flexible": lo | None,
     "deprecated": (lo, hi) | None, "listeners": (...), "unstable": bool,
     "fields": (field, ...)}

and a field is::

    {"name", "py", "type", "versions": (lo, hi|None), "nullable": (lo, hi|None)|None,
     "tagged": (lo, hi|None)|None, "tag": int|None, "default": value, "ignorable": bool,
     "map_key": bool, "flexible": (lo, hi|None)|None   # only when overridden ("none" -> ())
     "struct": name|None, "fields": (field, ...)       # for struct and []struct types
    }

``hi`` is None for an open range ("3+").  Common structs are resolved into the fields
that use them, so every struct is self-contained.
"""

from __future__ import annotations

import json
import keyword
import re
from pathlib import Path
from typing import Any

from wire.codegen.kept import apply_kept

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
     "string", "bytes", "records", "uuid"}
)
_COMMENT = re.compile(r"^\s*//.*$", re.M)


def load_json(path: Path) -> dict[str, Any]:
    return json.loads(_COMMENT.sub("", path.read_text()))


def parse_versions(text: str | None) -> tuple[int, int | None] | None:
    """'3+' -> (3, None); '1-4' -> (1, 4); '2' -> (2, 2); 'none'/None -> None."""
    if text is None:
        return None
    text = str(text).strip()
    if text == "none" or text == "":
        return None
    if text.endswith("+"):
        return (int(text[:-1]), None)
    if "-" in text:
        lo, hi = text.split("-")
        return (int(lo), int(hi))
    return (int(text), int(text))


def snake_case(name: str) -> str:
    """Kafka field names (PascalCase or camelCase) -> Python attribute names.

    'ThrottleTimeMs' -> 'throttle_time_ms', 'leaderEpoch' -> 'leader_epoch',
    'IsrNodes' -> 'isr_nodes', 'ProducerIdBlock' -> 'producer_id_block'.
    """
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()
    if keyword.iskeyword(s):
        s += "_"
    return s


def _element_type(t: str) -> str:
    return t[2:] if t.startswith("[]") else t


def _parse_default(ftype: str, raw: Any) -> Any:
    """The field's default as a Python value, following Kafka's generator rules."""
    elem = _element_type(ftype)
    is_array = ftype.startswith("[]")
    if raw is None:
        if is_array:
            return ()  # empty array
        if elem in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            return 0
        if elem == "float64":
            return 0.0
        if elem == "bool":
            return False
        if elem == "string":
            return ""
        if elem == "bytes":
            return b""
        if elem == "records":
            return None
        if elem == "uuid":
            return "00000000-0000-0000-0000-000000000000"
        return "{}"  # a struct: a new instance with its own defaults
    text = str(raw)
    if text.lower() == "null" or text == "None":
        return None
    if is_array:
        raise ValueError(f"array default must be null, got {raw!r}")
    if elem in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(text, 0)
    if elem == "float64":
        return float(text)
    if elem == "bool":
        return text.lower() == "true"
    if elem == "string":
        return text
    raise ValueError(f"unsupported default {raw!r} for type {ftype}")


def _normalize_field(f: dict[str, Any], common: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ftype = f["type"]
    elem = _element_type(ftype)
    versions = parse_versions(f.get("versions")) or parse_versions(f.get("taggedVersions"))
    if versions is None:
        raise ValueError(f"field {f['name']} has no versions")
    out: dict[str, Any] = {
        "name": f["name"],
        "py": snake_case(f["name"]),
        "type": ftype,
        "versions": versions,
        "nullable": parse_versions(f.get("nullableVersions")),
        "tagged": parse_versions(f.get("taggedVersions")),
        "tag": None if f.get("tag") is None else int(f["tag"]),
        "default": _parse_default(ftype, f.get("default")),
        "ignorable": bool(f.get("ignorable", False)),
        "map_key": bool(f.get("mapKey", False)),
    }
    if "flexibleVersions" in f:
        out["flexible"] = parse_versions(f["flexibleVersions"]) or ()
    if elem not in PRIMITIVES:
        sub = f.get("fields")
        if sub is None:
            if elem not in common:
                raise ValueError(f"unknown struct type {elem} for field {f['name']}")
            sub = common[elem]["fields"]
        out["struct"] = elem
        out["fields"] = tuple(_normalize_field(x, common) for x in sub)
    return out


def normalize_message(doc: dict[str, Any]) -> dict[str, Any]:
    common = {c["name"]: c for c in doc.get("commonStructs", [])}
    valid = parse_versions(doc["validVersions"])
    flexible = parse_versions(doc.get("flexibleVersions"))
    return {
        "name": doc["name"],
        "type": doc["type"],
        "api_key": doc.get("apiKey"),
        "valid": valid,
        "flexible": None if flexible is None else flexible[0],
        "deprecated": parse_versions(doc.get("deprecatedVersions")),
        "listeners": tuple(doc.get("listeners", ())),
        "unstable": bool(doc.get("latestVersionUnstable", False)),
        "fields": tuple(_normalize_field(f, common) for f in doc["fields"]),
    }


def load_schemas(root: Path, older: Path | None = None) -> list[dict[str, Any]]:
    """Every message of ``root/*.json`` and ``root/coordinator-records/*.json``, sorted: the
    APIs by key, then the data types and the coordinators' records.

    A file whose ``validVersions`` is "none" (an API Kafka removed) is left out; ``older``
    holds the earlier schema files kbroker keeps serving in its place.  The versions and
    fields of kept.py are put back into the files that dropped them.
    """
    paths = sorted(root.glob("*.json")) + sorted((root / "coordinator-records").glob("*.json"))
    if older is not None:
        paths += sorted(older.glob("*.json"))
    docs = [load_json(p) for p in paths]
    msgs = [normalize_message(apply_kept(d)) for d in docs
            if parse_versions(d["validVersions"]) is not None]
    names = [m["name"] for m in msgs]
    if len(set(names)) != len(names):
        raise ValueError(f"a message is defined twice: {sorted(n for n in set(names) if names.count(n) > 1)}")
    msgs.sort(key=lambda m: (m["type"] not in ("request", "response"), m["api_key"] is None,
                             m["api_key"] or 0, m["type"], m["name"]))
    return msgs
