"""Hypothesis strategies that build a valid message of any (schema, version).

Only fields present in the version get generated values; the rest keep their defaults,
so ``decode(encode(x)) == x`` must hold exactly.  Nullable fields are sometimes None,
arrays sometimes empty, tagged fields sometimes left at their default (not written).
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from wire.primitives import INT_RANGES
from wire.schema import FieldSpec, MessageSpec, StructSpec

_text = st.text(max_size=12)


def _scalar(elem: str) -> st.SearchStrategy[Any]:
    if elem in INT_RANGES:
        lo, hi = INT_RANGES[elem]
        return st.one_of(st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]), st.integers(lo, hi))
    if elem == "bool":
        return st.booleans()
    if elem == "float64":
        return st.floats(allow_nan=False)
    if elem == "string":
        return _text
    if elem in ("bytes", "records"):
        return st.binary(max_size=24)
    if elem == "uuid":
        return st.one_of(st.just(uuid.UUID(int=0)), st.uuids())
    raise AssertionError(elem)


def struct_value(spec: StructSpec, v: int, flexible: bool, depth: int = 0) -> st.SearchStrategy[Any]:
    present = [f for f in spec.fields if f.present(v)]
    return st.fixed_dictionaries(
        {f.py: field_value(f, v, flexible, depth) for f in present}
    ).map(lambda kw: spec.cls(**kw))


def field_value(f: FieldSpec, v: int, flexible: bool, depth: int = 0) -> st.SearchStrategy[Any]:
    if f.struct is not None:
        elem = st.deferred(lambda: struct_value(f.struct, v, flexible, depth + 1))  # type: ignore[arg-type]
    else:
        elem = _scalar(f.elem)
    if f.is_array:
        base: st.SearchStrategy[Any] = st.lists(elem, max_size=3 if depth < 2 else 1)
    else:
        base = elem
    if f.is_nullable(v):
        base = st.one_of(st.none(), base)
    if flexible and f.is_tagged(v):
        base = st.one_of(st.just(None).map(lambda _: f.make_default()), base)
    return base


def message_value(spec: MessageSpec, v: int) -> st.SearchStrategy[Any]:
    return struct_value(spec, v, spec.is_flexible(v))


def all_versions(specs: dict[str, MessageSpec]) -> list[tuple[str, int]]:
    return [(name, v) for name, s in specs.items() for v in s.versions()]
