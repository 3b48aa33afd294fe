"""The codec's public entry points: ``encode(msg, version)`` and ``decode(Type, buf, version)``.

The version is a parameter, never a class: one dataclass covers every version of a
message.  Both directions go through the compiled per-(message, version) functions of
``wire.compiler``; ``wire.interpreter`` is the slow reference they are tested against.
Only ``WireError`` subclasses leave this module.
"""

from __future__ import annotations

import struct
from typing import Any, TypeVar

from wire.compiler import compiled
from wire.errors import DecodeError, EncodeError, UnsupportedVersionError
from wire.schema import MessageSpec, spec_of

T = TypeVar("T")

# What a generated decoder raises on short or hostile input, before we translate it.
_DECODE_FAILURES = (struct.error, IndexError, ValueError, UnicodeDecodeError, TypeError,
                    OverflowError, RecursionError)
_ENCODE_FAILURES = (struct.error, AttributeError, TypeError, ValueError, OverflowError,
                    UnicodeEncodeError)


def check_version(spec: MessageSpec, version: int) -> None:
    lo, hi = spec.valid
    if version < lo or (hi is not None and version > hi):
        raise UnsupportedVersionError(f"{spec.name} has no version {version} (valid {lo}-{hi})")


def encode_parts(msg: Any, version: int) -> list[bytes | memoryview]:
    """Encode into a list of parts; record bytes are included as given, uncopied."""
    spec = spec_of(msg)
    check_version(spec, version)
    out: list[bytes | memoryview] = []
    enc = compiled(spec, version).encode
    try:
        enc(msg, out)
    except EncodeError:
        raise
    except _ENCODE_FAILURES as e:
        raise EncodeError(f"{spec.name} v{version}: {e}") from e
    return out


def encode(msg: Any, version: int) -> bytes:
    return b"".join(encode_parts(msg, version))


def decode_at(cls: type[T], buf: bytes | bytearray | memoryview, version: int,
              pos: int = 0, end: int | None = None) -> tuple[T, int]:
    """Decode one message from ``buf[pos:end]``; returns (message, position after it)."""
    spec = spec_of(cls)
    check_version(spec, version)
    d = buf if isinstance(buf, memoryview) else memoryview(buf)
    if end is None:
        end = len(d)
    dec = compiled(spec, version).decode
    try:
        return dec(d, pos, end)
    except DecodeError:
        raise
    except _DECODE_FAILURES as e:
        raise DecodeError(f"{spec.name} v{version}: {type(e).__name__}: {e}") from e


def decode(cls: type[T], buf: bytes | bytearray | memoryview, version: int,
           *, strict: bool = False) -> T:
    """Decode a whole message.  ``strict``: trailing bytes are an error too."""
    msg, p = decode_at(cls, buf, version)
    if strict and p != len(buf):
        raise DecodeError(f"{len(buf) - p} trailing bytes after {cls.__qualname__} v{version}")
    return msg
