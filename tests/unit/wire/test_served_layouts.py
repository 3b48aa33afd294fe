"""Every version kbroker serves keeps its byte layout when the codec is regenerated.

``served_layouts.json`` holds, for each message and version ApiVersions advertises (client
and inter-broker registries), the headers and the coordinator records kbroker writes, a
fingerprint of the version's layout: each field's type, nullability, taggedness, tag,
default and flexibility, nested structs included, in order.  Field *names* are left out:
Kafka renames fields without changing bytes (TxnOffsetCommit's GenerationId became
GenerationIdOrMemberEpoch in 4.x).  The file was written from the table generated from
the 2024 schemas, before the codec moved to Kafka 4.4.0's; a regeneration that changes a
served version's bytes fails here.  A new served version is added with ``--write``:
``python -m tests.unit.wire.test_served_layouts --write``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from wire._generated.schema_table import FIELD_DEFAULTS, MESSAGES

FILE = Path(__file__).with_name("served_layouts.json")

# what kbroker writes or reads besides the APIs: (message, versions)
_OTHER = [("RequestHeader", range(0, 3)), ("ResponseHeader", range(0, 2)),
          ("OffsetCommitKey", [0]), ("OffsetCommitValue", range(0, 5)),
          ("GroupMetadataKey", [0]), ("GroupMetadataValue", range(0, 5)),
          ("TransactionLogKey", [0]), ("TransactionLogValue", range(0, 2)),
          ("ConsumerProtocolSubscription", range(0, 4)), ("ConsumerProtocolAssignment", range(0, 4))] + [
    # the KIP-848 consumer group records (groups/consumer/records.py), layout 0 only
    (f"ConsumerGroup{name}{part}", [0])
    for name in ("Metadata", "PartitionMetadata", "MemberMetadata", "TargetAssignmentMetadata",
                 "TargetAssignmentMember", "CurrentMemberAssignment", "RegularExpression")
    for part in ("Key", "Value")]


def _in(r: Any, v: int) -> bool:
    if r is None or r == ():
        return False
    lo, hi = r
    return v >= lo and (hi is None or v <= hi)


def _layout(fields: tuple, v: int, flexible: bool, path: str, tags: list[str]) -> list:
    """The untagged fields' rows; the tagged ones go to ``tags`` as "path:tag:type"."""
    out = []
    for f in fields:
        f = {**FIELD_DEFAULTS, **f}
        if not _in(f["versions"], v):
            continue
        nested = (_layout(f["fields"], v, flexible, f"{path}/{f['tag'] if _in(f['tagged'], v) else len(out)}", tags)
                  if "fields" in f else None)
        if _in(f["tagged"], v):
            tags.append(f"{path}:{f['tag']}:{f['type']}:{_in(f['nullable'], v)}:{nested}")
            continue
        flex = flexible if "flexible" not in f else _in(f["flexible"], v)
        out.append([f["type"], _in(f["nullable"], v), repr(f["default"]), flex, nested])
    return out


def fingerprint(messages: dict, name: str, v: int) -> dict[str, Any]:
    """{"fp": hash of the untagged layout, "tags": the tagged fields}."""
    m = messages[name]
    flexible = m["flexible"] is not None and v >= m["flexible"]
    tags: list[str] = []
    text = json.dumps([flexible, _layout(m["fields"], v, flexible, "", tags)])
    return {"fp": hashlib.sha256(text.encode()).hexdigest()[:16], "tags": sorted(tags)}


def _kept(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return old["fp"] == new["fp"] and set(old["tags"]) <= set(new["tags"])


def served() -> list[tuple[str, int]]:
    import kbroker.handlers  # noqa: F401  (the handlers register themselves)
    from kbroker.server.registry import INTER_BROKER, REGISTRY
    from wire.schema import REQUESTS, RESPONSES
    out = []
    for registry in (REGISTRY, INTER_BROKER):
        for e in registry.entries():
            for v in range(e.min_version, e.max_version + 1):
                out += [(REQUESTS[e.api_key].name, v), (RESPONSES[e.api_key].name, v)]
    for name, versions in _OTHER:
        out += [(name, v) for v in versions]
    return sorted(set(out))


def test_every_served_version_has_the_layout_it_had_before_the_regeneration():
    frozen = json.loads(FILE.read_text())
    missing = [f"{n} v{v}" for n, v in served() if f"{n} v{v}" not in frozen]
    assert missing == [], "new served versions: run python -m tests.unit.wire.test_served_layouts --write"
    changed = [key for key, old in frozen.items()
               if not _kept(old, fingerprint(MESSAGES, key.rsplit(" v", 1)[0], int(key.rsplit(" v", 1)[1])))]
    assert changed == []


def test_the_fingerprint_sees_a_changed_field():
    name, v = "FetchResponse", 12
    fp = fingerprint(MESSAGES, name, v)
    altered = json.loads(json.dumps(MESSAGES[name], default=list))
    altered["fields"][0]["type"] = "int64"   # ThrottleTimeMs
    assert not _kept(fp, fingerprint({name: altered}, name, v))
    untagged = json.loads(json.dumps(MESSAGES[name], default=list))
    untagged["fields"][3]["fields"][-1]["fields"] = [   # responses -> partitions: drop a tag
        f for f in untagged["fields"][3]["fields"][-1]["fields"] if f.get("tag") != 2]
    assert not _kept(fp, fingerprint({name: untagged}, name, v))


if __name__ == "__main__" and "--write" in sys.argv:
    frozen = json.loads(FILE.read_text()) if FILE.exists() else {}
    for n, v in served():
        frozen.setdefault(f"{n} v{v}", fingerprint(MESSAGES, n, v))
    FILE.write_text(json.dumps(dict(sorted(frozen.items())), indent=0, separators=(",", ":")) + "\n")
