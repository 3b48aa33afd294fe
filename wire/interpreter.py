"""Table-driven encoder and decoder: the reference implementation of the codec.

It walks ``wire.schema`` specs field by field with the sticky-error ``Reader`` and the
``Writer``.  It is simple and slow on purpose; ``wire.compiler`` generates fast
per-(message, version) functions and a parity test holds the two byte-for-byte equal.

Rules (Kafka's generator, clients/.../message/MessageDataGenerator.java):
* a field is on the wire in version v iff v is in its ``versions``; absent fields decode
  to their default;
* in flexible versions, strings/bytes/arrays are compact and every struct ends with a
  tagged-field section: count, then (tag, size, value) sorted by tag; a tagged field is
  written only when it differs from its default, unknown tags are skipped on read;
* a non-array struct field that is nullable carries an int8 marker (-1 null, 1 present),
  but inside a tagged field an unsigned varint (0 null, 1 present: Kafka's generated code
  writes ``writeUnsignedVarint(0)`` / ``(1)`` there and reads ``readUnsignedVarint() <= 0``);
* ``records`` are bytes whose value stays a zero-copy memoryview on decode.
"""

from __future__ import annotations

from typing import Any

from wire.errors import DecodeError, EncodeError
from wire.primitives import Reader, Writer
from wire.schema import FIXED_SIZES, FieldSpec, MessageSpec, StructSpec


def min_wire_size(spec: StructSpec, v: int, flexible: bool) -> int:
    """Fewest bytes one instance of ``spec`` can take in version v (for count checks)."""
    n = 1 if flexible else 0  # the tagged-field count
    for f in spec.fields:
        if not f.present(v) or (flexible and f.is_tagged(v)):
            continue
        if f.is_array or f.elem in ("string", "bytes", "records"):
            n += 1 if f.is_compact(v, flexible) else (4 if f.is_array or f.elem != "string" else 2)
        elif f.struct is not None:
            n += 1 if f.is_nullable(v) else min_wire_size(f.struct, v, flexible)
        else:
            n += FIXED_SIZES[f.elem]
    return n


# ---------------------------------------------------------------- decoding


def _read_value(r: Reader, f: FieldSpec, v: int, flexible: bool) -> Any:
    t = f.elem
    if f.struct is not None:
        if f.is_nullable(v) and not f.is_array:
            marker = r.int8()
            if marker < 0 or (marker == 0 and flexible and f.is_tagged(v)):
                return None
        return _read_struct(r, f.struct, v, flexible)
    compact = f.is_compact(v, flexible)
    if t == "string":
        s = r.string(compact)
        if s is None and not f.is_nullable(v):
            r.fail(f"null {f.name} is not nullable in v{v}")
        return s
    if t in ("bytes", "records"):
        b = r.bytes_(compact)
        if b is None:
            if not f.is_nullable(v):
                r.fail(f"null {f.name} is not nullable in v{v}")
            return None
        return b if t == "records" else bytes(b)
    if t == "uuid":
        return r.uuid()
    return getattr(r, t)()


def _read_field(r: Reader, f: FieldSpec, v: int, flexible: bool) -> Any:
    if not f.is_array:
        return _read_value(r, f, v, flexible)
    elem_size = (
        min_wire_size(f.struct, v, flexible) if f.struct is not None else FIXED_SIZES.get(f.elem, 1)
    )
    n = r.array_count(f.is_compact(v, flexible), elem_size)
    if n < 0:
        if not r.failed and not f.is_nullable(v):
            r.fail(f"null {f.name} is not nullable in v{v}")
        return None
    out = []
    # Elements of a primitive array are never null; strings inside are not nullable.
    elem = f if f.struct is not None else _ElementField(f)
    for _ in range(n):
        if r.failed:
            break
        out.append(_read_value(r, elem, v, flexible))  # type: ignore[arg-type]
    return out


class _ElementField:
    """The element of a primitive array: same type and compactness, never nullable."""

    __slots__ = ("f", "elem", "struct", "name")

    def __init__(self, f: FieldSpec):
        self.f, self.elem, self.struct, self.name = f, f.elem, None, f.name

    def is_compact(self, v: int, flexible: bool) -> bool:
        return self.f.is_compact(v, flexible)

    def is_nullable(self, v: int) -> bool:
        return False


def _read_struct(r: Reader, spec: StructSpec, v: int, flexible: bool) -> Any:
    values: dict[str, Any] = {}
    tagged: dict[int, FieldSpec] = {}
    for f in spec.fields:
        if not f.present(v):
            continue
        if flexible and f.is_tagged(v):
            tagged[f.tag] = f  # type: ignore[index]
            continue
        values[f.py] = _read_field(r, f, v, flexible)
    if flexible:
        for _ in range(r.uvarint()):
            tag = r.uvarint()
            size = r.uvarint()
            if r.failed or size > r.remaining():
                r.fail("tagged field past the end")
                break
            f = tagged.get(tag)
            if f is None:
                r.pos += size  # unknown tagged field: skip, as Kafka does
                continue
            sub = Reader(r.buf, r.pos, r.pos + size)
            values[f.py] = _read_field(sub, f, v, flexible)
            if sub.failed:
                r.fail(f"tagged field {f.name}: {sub.why}")
            r.pos += size
    for f in spec.fields:
        if f.py not in values:
            values[f.py] = f.make_default()
    return spec.cls(**values)


def decode(spec: MessageSpec, buf: bytes | bytearray | memoryview, version: int) -> tuple[Any, int]:
    """Decode one message; returns (message, bytes consumed).  Raises DecodeError only."""
    r = Reader(buf)
    try:
        msg = _read_struct(r, spec, version, spec.is_flexible(version))
    except RecursionError:  # pragma: no cover - the schemas nest a few levels only
        raise DecodeError("structure nested too deeply") from None
    r.finish()
    return msg, r.pos


# ---------------------------------------------------------------- encoding


def _write_value(w: Writer, f: Any, val: Any, v: int, flexible: bool) -> None:
    t = f.elem
    if f.struct is not None:
        if not f.is_array and f.is_nullable(v):
            if val is None:
                w.int8(0 if flexible and f.is_tagged(v) else -1)
                return
            w.int8(1)
        elif val is None:
            raise EncodeError(f"{f.name} is not nullable in v{v}")
        _write_struct(w, f.struct, val, v, flexible)
        return
    if val is None and t not in ("uuid",) and not f.is_nullable(v):
        raise EncodeError(f"{f.name} is not nullable in v{v}")
    compact = f.is_compact(v, flexible)
    if t == "string":
        w.string(val, compact)
    elif t in ("bytes", "records"):
        w.bytes_(val, compact)
    else:
        getattr(w, t)(val)


def _write_field(w: Writer, f: FieldSpec, val: Any, v: int, flexible: bool) -> None:
    if not f.is_array:
        _write_value(w, f, val, v, flexible)
        return
    compact = f.is_compact(v, flexible)
    if val is None:
        if not f.is_nullable(v):
            raise EncodeError(f"{f.name} is not nullable in v{v}")
        w.length(-1, compact, wide=True)
        return
    w.length(len(val), compact, wide=True)
    elem = f if f.struct is not None else _ElementField(f)
    for item in val:
        _write_value(w, elem, item, v, flexible)


def _write_struct(w: Writer, spec: StructSpec, obj: Any, v: int, flexible: bool) -> None:
    tagged: list[tuple[int, FieldSpec, Any]] = []
    for f in spec.fields:
        if not f.present(v):
            continue
        val = getattr(obj, f.py)
        if flexible and f.is_tagged(v):
            if not f.is_default(val):
                tagged.append((f.tag, f, val))  # type: ignore[arg-type]
            continue
        _write_field(w, f, val, v, flexible)
    if flexible:
        tagged.sort(key=lambda t: t[0])
        w.uvarint(len(tagged))
        for tag, f, val in tagged:
            sub = Writer()
            _write_field(sub, f, val, v, flexible)
            body = sub.getvalue()
            w.uvarint(tag)
            w.uvarint(len(body))
            w.raw(body)


def encode(spec: MessageSpec, msg: Any, version: int) -> bytes:
    w = Writer()
    _write_struct(w, spec, msg, version, spec.is_flexible(version))
    return w.getvalue()
