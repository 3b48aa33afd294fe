"""Compiled codec: per-(message, version) Python functions generated from the schema.

For each message version the compiler writes the source of one encode and one decode
function per struct, with the version's decisions (present fields, compact or not,
nullable or not, tagged or not) made at compile time, consecutive fixed-width fields
packed with one ``struct`` call, and constructors called positionally.  The source is
compiled with ``exec`` on first use and cached; ``source(spec, version)`` shows it.
``wire.interpreter`` is the reference: tests hold the two byte-for-byte equal.

Generated decoders work on a memoryview ``d`` with a position ``p`` and a bound ``end``
and return ``(obj, p)``; a short buffer surfaces as struct.error/IndexError, which
``wire.codec`` turns into DecodeError.  Every length is checked against ``end`` before
slicing (a memoryview slice would silently stop short), and array counts against the
bytes left before anything is allocated.  Encoders append bytes-like parts to a list
``out``; record bytes are appended as they are (no copy).
"""

from __future__ import annotations

import struct
from typing import Any

from wire.errors import DecodeError, EncodeError
from wire.interpreter import min_wire_size
from wire.primitives import ZERO_UUID
from wire.schema import FieldSpec, MessageSpec, StructSpec, uuid_from_bytes
from wire.varint import decode_unsigned_varint, encode_unsigned_varint

_FMT = {
    "bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
    "int64": "q", "float64": "d",
}
_SIZE = {"?": 1, "b": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "d": 8}
# One-byte unsigned varints, indexed by value: compact lengths are almost always < 128,
# and a tuple lookup is several times cheaper than a call to encode_unsigned_varint.
_UV1 = tuple(bytes((i,)) for i in range(128))


def _uv_long(n: int) -> bytes:
    """Unsigned varint of n >= 128 (record buffers, long strings) in one call, no loop."""
    if n < 0x4000:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    if n < 0x200000:
        return bytes(((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, n >> 14))
    if n < 0x10000000:
        return bytes(((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, ((n >> 14) & 0x7F) | 0x80,
                      n >> 21))
    return encode_unsigned_varint(n)  # 5 bytes, with the 32-bit range check

class _Src:
    """Source text with indentation and fresh local names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0

    def var(self, base: str = "v") -> str:
        self.n += 1
        return f"{base}{self.n}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


class _Unit:
    """One (message, version) compilation: functions plus their shared constants."""

    def __init__(self, spec: MessageSpec, version: int):
        self.spec = spec
        self.v = version
        self.flex = spec.is_flexible(version)
        self.src = _Src()
        self.consts: dict[str, Any] = {
            "DecodeError": DecodeError, "EncodeError": EncodeError, "uv": decode_unsigned_varint,
            "UV": encode_unsigned_varint, "UUID": uuid_from_bytes, "ZERO_UUID": ZERO_UUID, "S": struct.Struct,
            "pack": struct.pack, "unpack_from": struct.unpack_from, "I32": struct.Struct(">i"),
            "I16": struct.Struct(">h"), "I8": struct.Struct(">b"), "UV1": _UV1, "UVL": _uv_long,
        }
        self.funcs: dict[int, str] = {}   # id(StructSpec) -> function suffix
        self.pending: list[StructSpec] = []

    # -------------------------------------------------------------- helpers
    def const(self, value: Any, base: str = "K") -> str:
        name = f"{base}{len(self.consts)}"
        self.consts[name] = value
        return name

    def enc_len_plus_one(self, x: str, ind: int) -> None:
        """Append the compact length of ``x`` (len + 1) as an unsigned varint."""
        n = self.src.var("n")
        self.src.emit(ind, f"{n} = len({x}) + 1")
        self.src.emit(ind, f"A(UV1[{n}] if {n} < 128 else UVL({n}))")

    def struct_fn(self, s: StructSpec) -> str:
        key = id(s)
        if key not in self.funcs:
            self.funcs[key] = f"{s.name}_{len(self.funcs)}"
            self.pending.append(s)
        return self.funcs[key]

    def compact(self, f: FieldSpec) -> bool:
        return f.is_compact(self.v, self.flex)

    def default_expr(self, f: FieldSpec) -> str:
        d = f.default
        if d is None:
            return "None"
        if f.is_array:
            return "[]"
        if f.struct is not None:
            return self.const(f.struct.cls, "C") + "()"
        if f.elem == "uuid":
            return "ZERO_UUID"
        return repr(d)

    def regular_fields(self, s: StructSpec) -> list[FieldSpec]:
        return [f for f in s.fields if f.present(self.v) and not (self.flex and f.is_tagged(self.v))]

    def tagged_fields(self, s: StructSpec) -> list[FieldSpec]:
        if not self.flex:
            return []
        return sorted((f for f in s.fields if f.present(self.v) and f.is_tagged(self.v)),
                      key=lambda f: f.tag)  # type: ignore[arg-type, return-value]

    @staticmethod
    def _groups(fields: list[FieldSpec]) -> list[list[FieldSpec]]:
        """Runs of consecutive fixed-width scalars share one struct call."""
        out: list[list[FieldSpec]] = []
        for f in fields:
            fixed = not f.is_array and f.elem in _FMT
            if fixed and out and len(out[-1]) and not out[-1][0].is_array and out[-1][0].elem in _FMT:
                out[-1].append(f)
            else:
                out.append([f])
        return out

    # -------------------------------------------------------------- encode
    def enc_value(self, f: FieldSpec, x: str, ind: int, in_array: bool = False) -> None:
        e = self.src.emit
        t = f.elem
        nullable = f.is_nullable(self.v) and not in_array
        if f.struct is not None:
            fn = self.struct_fn(f.struct)
            if nullable and not f.is_array:
                # the null marker: int8 -1, but an unsigned varint 0 inside a tagged field
                # (Kafka's generated writers; ConsumerGroupMemberMetadataValue's
                # ClassicMemberMetadata is the one such field)
                e(ind, f"if {x} is None:")
                e(ind + 1, "A(b'\\x00')" if f.is_tagged(self.v) and self.flex else "A(b'\\xff')")
                e(ind, "else:")
                e(ind + 1, "A(b'\\x01')")
                e(ind + 1, f"e_{fn}({x}, out)")
            else:
                e(ind, f"e_{fn}({x}, out)")
            return
        if t in _FMT:
            e(ind, f"A(pack('>{_FMT[t]}', {x}))")
            return
        if t == "uuid":
            e(ind, f"A({x}.bytes)")
            return
        compact = self.compact(f)
        if t == "string":
            self._enc_null_guard(f, x, ind, nullable, compact, wide=False)
            e(ind + 1, f"{x} = {x}.encode('utf-8')")
            if compact:
                self.enc_len_plus_one(x, ind + 1)
            else:
                e(ind + 1, f"if len({x}) > 32767: raise EncodeError('string too long for int16 length')")
                e(ind + 1, f"A(I16.pack(len({x})))")
            e(ind + 1, f"A({x})")
            return
        # bytes / records: appended as they are (records may be a large memoryview)
        self._enc_null_guard(f, x, ind, nullable, compact, wide=True)
        if compact:
            self.enc_len_plus_one(x, ind + 1)
        else:
            e(ind + 1, f"A(I32.pack(len({x})))")
        e(ind + 1, f"A({x})")

    def _enc_null_guard(self, f: FieldSpec, x: str, ind: int, nullable: bool, compact: bool,
                        wide: bool) -> None:
        e = self.src.emit
        e(ind, f"if {x} is None:")
        if nullable:
            e(ind + 1, "A(b'\\x00')" if compact else ("A(b'\\xff\\xff\\xff\\xff')" if wide else "A(b'\\xff\\xff')"))
        else:
            e(ind + 1, f"raise EncodeError('{f.name} is not nullable in v{self.v}')")
        e(ind, "else:")

    def enc_field(self, f: FieldSpec, x: str, ind: int) -> None:
        e = self.src.emit
        if not f.is_array:
            self.enc_value(f, x, ind)
            return
        compact = self.compact(f)
        self._enc_null_guard(f, x, ind, f.is_nullable(self.v), compact, wide=True)
        if compact:
            self.enc_len_plus_one(x, ind + 1)
        else:
            e(ind + 1, f"A(I32.pack(len({x})))")
        if f.struct is None and f.elem in _FMT:
            e(ind + 1, f"A(pack('>%d{_FMT[f.elem]}' % len({x}), *{x}))")
            return
        it = self.src.var("it")
        e(ind + 1, f"for {it} in {x}:")
        self.enc_value(f, it, ind + 2, in_array=True)

    def enc_not_default(self, f: FieldSpec, x: str) -> str:
        d = f.default
        if d is None:
            return f"{x} is not None"
        if f.is_array:
            return f"({x} is None or len({x}) != 0)"
        if f.struct is not None:
            inner = f.struct.fields
            if all(not g.is_array and g.struct is None for g in inner):
                # Field by field: much cheaper than the dataclass __eq__ (two tuples).
                return "(" + " or ".join(self.enc_not_default(g, f"{x}.{g.py}") for g in inner) + ")"
            return f"{x} != {self.const(f.struct.cls(), 'D')}"
        if f.elem == "uuid":
            return f"{x} != ZERO_UUID"
        return f"{x} != {d!r}"

    def gen_encoder(self, s: StructSpec, fn: str) -> None:
        e = self.src.emit
        e(0, f"def e_{fn}(m, out):")
        e(1, "A = out.append")
        for group in self._groups(self.regular_fields(s)):
            f = group[0]
            if not f.is_array and f.elem in _FMT:
                fmt = ">" + "".join(_FMT[g.elem] for g in group)
                packer = self.const(struct.Struct(fmt).pack, "P")
                e(1, f"A({packer}({', '.join('m.' + g.py for g in group)}))")
            else:
                x = self.src.var("x")
                e(1, f"{x} = m.{f.py}")
                self.enc_field(f, x, 1)
        if self.flex:
            tagged = self.tagged_fields(s)
            if not tagged:
                e(1, "A(b'\\x00')")
            else:
                e(1, "tags = []")
                for f in tagged:
                    x = self.src.var("x")
                    e(1, f"{x} = m.{f.py}")
                    e(1, f"if {self.enc_not_default(f, x)}:")
                    e(2, "sub = []")
                    e(2, "A, A0 = sub.append, A")
                    e(2, "out, out0 = sub, out")
                    self.enc_field(f, x, 2)
                    e(2, "A, out = A0, out0")
                    e(2, "body = b''.join(sub)")
                    e(2, f"tags.append({encode_unsigned_varint(f.tag)!r} + UV(len(body)) + body)")  # type: ignore[arg-type]
                e(1, "if tags:")
                e(2, "A(UV1[len(tags)])")  # a struct has far fewer than 128 tagged fields
                e(2, "out.extend(tags)")
                e(1, "else:")
                e(2, "A(b'\\x00')")
        e(1, "return None")
        e(0, "")

    # -------------------------------------------------------------- decode
    def dec_len(self, compact: bool, wide: bool, n: str, ind: int) -> None:
        e = self.src.emit
        if compact:
            e(ind, f"{n}, p = uv(d, p)")
            e(ind, f"{n} -= 1")
        elif wide:
            e(ind, f"{n}, = I32.unpack_from(d, p)")
            e(ind, "p += 4")
        else:
            e(ind, f"{n}, = I16.unpack_from(d, p)")
            e(ind, "p += 2")

    def dec_value(self, f: FieldSpec, out: str, ind: int, end: str, in_array: bool = False) -> None:
        e = self.src.emit
        t = f.elem
        nullable = f.is_nullable(self.v) and not in_array
        if f.struct is not None:
            fn = self.struct_fn(f.struct)
            if nullable and not f.is_array:
                mk = self.src.var("mk")
                e(ind, f"{mk}, = I8.unpack_from(d, p)")
                e(ind, "p += 1")
                # inside a tagged field the marker is an unsigned varint: 0 null, 1 present
                e(ind, f"if {mk} {'<= 0' if f.is_tagged(self.v) and self.flex else '< 0'}:")
                e(ind + 1, f"{out} = None")
                e(ind, "else:")
                e(ind + 1, f"{out}, p = d_{fn}(d, p, {end})")
            else:
                e(ind, f"{out}, p = d_{fn}(d, p, {end})")
            return
        if t in _FMT:
            e(ind, f"{out}, = unpack_from('>{_FMT[t]}', d, p)")
            e(ind, f"p += {_SIZE[_FMT[t]]}")
            return
        if t == "uuid":
            e(ind, f"if p + 16 > {end}: raise DecodeError('truncated uuid')")
            e(ind, f"{out} = UUID(bytes(d[p:p + 16]))")
            e(ind, "p += 16")
            return
        n = self.src.var("n")
        self.dec_len(self.compact(f), t != "string", n, ind)
        e(ind, f"if {n} < 0:")
        if nullable:
            e(ind + 1, f"{out} = None")
        else:
            e(ind + 1, f"raise DecodeError('null {f.name} is not nullable in v{self.v}')")
        e(ind, "else:")
        e(ind + 1, f"q = p + {n}")
        e(ind + 1, f"if q > {end}: raise DecodeError('{f.name}: length past the end')")
        if t == "string":
            e(ind + 1, f"{out} = str(d[p:q], 'utf-8', 'replace')")
        elif t == "bytes":
            e(ind + 1, f"{out} = bytes(d[p:q])")
        else:  # records: a zero-copy view
            e(ind + 1, f"{out} = d[p:q]")
        e(ind + 1, "p = q")

    def dec_field(self, f: FieldSpec, out: str, ind: int, end: str) -> None:
        e = self.src.emit
        if not f.is_array:
            self.dec_value(f, out, ind, end)
            return
        n = self.src.var("n")
        self.dec_len(self.compact(f), True, n, ind)
        e(ind, f"if {n} < 0:")
        if f.is_nullable(self.v):
            e(ind + 1, f"{out} = None")
        else:
            e(ind + 1, f"raise DecodeError('null {f.name} is not nullable in v{self.v}')")
        if f.struct is not None:
            size = max(1, min_wire_size(f.struct, self.v, self.flex))
        else:
            size = _SIZE.get(_FMT.get(f.elem, ""), 16 if f.elem == "uuid" else 1)
        e(ind, f"elif {n} * {size} > {end} - p:")
        e(ind + 1, f"raise DecodeError('{f.name}: ' + str({n}) + ' elements cannot fit')")
        e(ind, "else:")
        if f.struct is None and f.elem in _FMT:
            c = _FMT[f.elem]
            e(ind + 1, f"{out} = list(unpack_from('>%d{c}' % {n}, d, p))")
            e(ind + 1, f"p += {_SIZE[c]} * {n}")
            return
        e(ind + 1, f"{out} = []")
        ap = self.src.var("ap")
        it = self.src.var("it")
        e(ind + 1, f"{ap} = {out}.append")
        e(ind + 1, f"for _ in range({n}):")
        self.dec_value(f, it, ind + 2, end, in_array=True)
        e(ind + 2, f"{ap}({it})")

    def gen_decoder(self, s: StructSpec, fn: str) -> None:
        e = self.src.emit
        e(0, f"def d_{fn}(d, p, end):")
        names: dict[str, str] = {}
        for group in self._groups(self.regular_fields(s)):
            f = group[0]
            if not f.is_array and f.elem in _FMT:
                fmt = ">" + "".join(_FMT[g.elem] for g in group)
                st = struct.Struct(fmt)
                unpacker = self.const(st.unpack_from, "U")
                vs = [self.src.var("f") for _ in group]
                for g, v in zip(group, vs, strict=True):
                    names[g.py] = v
                e(1, f"{', '.join(vs)}, = {unpacker}(d, p)")
                e(1, f"p += {st.size}")
            else:
                v = self.src.var("f")
                names[f.py] = v
                self.dec_field(f, v, 1, "end")
        if self.flex:
            tagged = self.tagged_fields(s)
            for f in tagged:
                v = self.src.var("f")
                names[f.py] = v
                e(1, f"{v} = {self.default_expr(f)}")
            # the count of tagged fields: almost always 0, one byte read in place
            e(1, "nt = d[p]")
            e(1, "if nt < 128: p += 1")
            e(1, "else: nt, p = uv(d, p)")
            e(1, "for _ in range(nt):")
            e(2, "tag, p = uv(d, p)")
            e(2, "sz, p = uv(d, p)")
            e(2, "q = p + sz")
            e(2, "if q > end: raise DecodeError('tagged field past the end')")
            kw = "if"
            for f in tagged:
                e(2, f"{kw} tag == {f.tag}:")
                self.dec_field(f, names[f.py], 3, "q")
                e(3, "if p != q: raise DecodeError('tagged field size mismatch')")
                kw = "elif"
            e(2, "p = q")
        e(1, "if p > end: raise DecodeError('truncated input')")
        args = [names.get(f.py) or self.default_expr(f) for f in s.fields]
        cls = self.const(s.cls, "C")
        e(1, f"return {cls}({', '.join(args)}), p")
        e(0, "")

    # -------------------------------------------------------------- driver
    def build(self) -> tuple[str, str, str]:
        top = self.struct_fn(self.spec)
        done: set[int] = set()
        while self.pending:
            s = self.pending.pop()
            if id(s) in done:
                continue
            done.add(id(s))
            fn = self.funcs[id(s)]
            self.gen_encoder(s, fn)
            self.gen_decoder(s, fn)
        return "\n".join(self.src.lines), f"e_{top}", f"d_{top}"


class Compiled:
    """The encode and decode functions of one (message, version)."""

    __slots__ = ("encode", "decode", "source")

    def __init__(self, spec: MessageSpec, version: int):
        unit = _Unit(spec, version)
        src, enc, dec = unit.build()
        ns = dict(unit.consts)
        exec(compile(src, f"<wire {spec.name} v{version}>", "exec"), ns)
        self.encode = ns[enc]
        self.decode = ns[dec]
        self.source = src


_CACHE: dict[tuple[str, int], Compiled] = {}


def compiled(spec: MessageSpec, version: int) -> Compiled:
    key = (spec.name, version)
    c = _CACHE.get(key)
    if c is None:
        c = _CACHE[key] = Compiled(spec, version)
    return c


def source(spec: MessageSpec, version: int) -> str:
    """The generated Python source for one (message, version), for reading and debugging."""
    return compiled(spec, version).source
