"""Run-time view of the generated schema table, tied to the generated dataclasses.

``wire/_generated/schema_table.py`` holds the facts as plain literals; this module turns
them into ``MessageSpec``/``StructSpec``/``FieldSpec`` objects that both codecs (the
table-driven interpreter and the compiled per-version functions) walk.  A version range
is ``(lo, hi)`` with ``hi = None`` for "lo+".
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from wire._generated import messages as _classes
from wire._generated.schema_table import FIELD_DEFAULTS, MESSAGES

Range = tuple[int, int | None]

FIXED_SIZES = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
    "int64": 8, "float64": 8, "uuid": 16,
}
ZERO_UUID = _classes.ZERO_UUID


def in_range(r: Range | None, v: int) -> bool:
    return r is not None and r[0] <= v and (r[1] is None or v <= r[1])


@dataclass(frozen=True, slots=True, eq=False)
class FieldSpec:
    name: str              # Kafka's name, e.g. "ThrottleTimeMs"
    py: str                # attribute name, e.g. "throttle_time_ms"
    type: str              # as in the schema: "int32", "[]string", "[]PartitionData", ...
    elem: str              # element type: "int32", "string", or a struct name
    is_array: bool
    versions: Range
    nullable: Range | None
    tagged: Range | None
    tag: int | None
    default: Any           # Python value; () for "empty array", "{}" for "new struct"
    ignorable: bool
    map_key: bool
    flexible: Range | tuple[()] | None   # per-field override (RequestHeader.ClientId: "none")
    struct: StructSpec | None

    def present(self, v: int) -> bool:
        return in_range(self.versions, v)

    def is_nullable(self, v: int) -> bool:
        return in_range(self.nullable, v)

    def is_tagged(self, v: int) -> bool:
        return in_range(self.tagged, v)

    def is_compact(self, v: int, message_flexible: bool) -> bool:
        """Compact (varint-length) encoding for strings/bytes/arrays in version v."""
        if self.flexible is None:
            return message_flexible
        return in_range(self.flexible or None, v)  # type: ignore[arg-type]

    def make_default(self) -> Any:
        """A fresh default value (new list / struct instance each time)."""
        d = self.default
        if d is None:
            return None
        if self.is_array:
            return []
        if self.struct is not None:
            return self.struct.cls()
        if self.elem == "uuid":
            return ZERO_UUID
        return d

    def is_default(self, value: Any) -> bool:
        """Kafka writes a tagged field only when its value differs from the default."""
        d = self.default
        if d is None:
            return value is None
        if self.is_array:
            return value is not None and len(value) == 0
        if self.struct is not None:
            return value == self.struct.cls()
        if self.elem == "uuid":
            return value == ZERO_UUID
        return value == d


@dataclass(frozen=True, slots=True, eq=False)
class StructSpec:
    name: str
    cls: type
    fields: tuple[FieldSpec, ...]


@dataclass(frozen=True, slots=True, eq=False)
class MessageSpec(StructSpec):
    api_key: int | None
    kind: str                     # "request", "response", "header" or "data"
    valid: Range
    flexible_from: int | None     # first flexible version, None if never
    deprecated: Range | None

    def is_flexible(self, v: int) -> bool:
        return self.flexible_from is not None and v >= self.flexible_from

    def versions(self) -> range:
        lo, hi = self.valid
        return range(lo, (hi if hi is not None else lo) + 1)


def _build_field(row: dict[str, Any], owner: type) -> FieldSpec:
    row = {**FIELD_DEFAULTS, **row}
    ftype: str = row["type"]
    is_array = ftype.startswith("[]")
    elem = ftype[2:] if is_array else ftype
    struct = None
    if "struct" in row:
        cls = getattr(owner, row["struct"])
        struct = StructSpec(row["struct"], cls, tuple(_build_field(r, owner) for r in row["fields"]))
    return FieldSpec(
        name=row["name"], py=row["py"], type=ftype, elem=elem, is_array=is_array,
        versions=row["versions"], nullable=row["nullable"], tagged=row["tagged"], tag=row["tag"],
        default=row["default"], ignorable=row["ignorable"], map_key=row["map_key"],
        flexible=row.get("flexible"), struct=struct,
    )


def _build_message(row: dict[str, Any]) -> MessageSpec:
    cls = _classes.ALL_MESSAGES[row["name"]]
    return MessageSpec(
        name=row["name"], cls=cls, fields=tuple(_build_field(r, cls) for r in row["fields"]),
        api_key=row["api_key"], kind=row["type"], valid=row["valid"],
        flexible_from=row["flexible"], deprecated=row["deprecated"],
    )


SPECS: dict[str, MessageSpec] = {name: _build_message(row) for name, row in MESSAGES.items()}
SPEC_BY_CLASS: dict[type, MessageSpec] = {s.cls: s for s in SPECS.values()}
REQUESTS: dict[int, MessageSpec] = {s.api_key: s for s in SPECS.values() if s.kind == "request"}  # type: ignore[misc]
RESPONSES: dict[int, MessageSpec] = {s.api_key: s for s in SPECS.values() if s.kind == "response"}  # type: ignore[misc]


def spec_of(msg_or_cls: Any) -> MessageSpec:
    cls = msg_or_cls if isinstance(msg_or_cls, type) else type(msg_or_cls)
    try:
        return SPEC_BY_CLASS[cls]
    except KeyError:
        raise TypeError(f"{cls.__qualname__} is not a top-level Kafka message") from None


def uuid_from_bytes(b: bytes) -> uuid.UUID:
    return ZERO_UUID if b == bytes(16) else uuid.UUID(bytes=b)
