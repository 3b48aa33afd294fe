"""Request and response headers, and which version each (api, version) uses.

Formats (RequestHeader.json / ResponseHeader.json):
* request header v0: api_key int16, api_version int16, correlation_id int32;
  v1 adds client_id (int16-length nullable string); v2 adds a tagged-field section.
  Note ``client_id`` stays a non-compact string in v2 (its flexibleVersions is "none").
* response header v0: correlation_id int32; v1 adds a tagged-field section.

The header version follows the API's flexibleVersions for that request version: flexible
-> request v2 / response v1, otherwise request v1 / response v0.  Exceptions: ApiVersions
responses always use header v0 (clients parse it before they know the broker's
versions: KIP-511), and ControlledShutdown v0 requests use request header v0.
Headers are written by hand: they are small, hot and need these special cases.
"""

from __future__ import annotations

import struct
from typing import Any

from wire._generated.messages import RequestHeader
from wire.codec import decode_at, encode_parts
from wire.errors import DecodeError
from wire.schema import REQUESTS, MessageSpec
from wire.varint import decode_unsigned_varint

__all__ = [
    "RequestHeader", "request_header_version", "response_header_version",
    "decode_request_header", "encode_request", "encode_response", "decode_response",
]

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7
_HEAD = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _flexible(api_key: int, api_version: int) -> bool:
    spec = REQUESTS.get(api_key)
    return spec is not None and spec.is_flexible(api_version)


def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return 0
    return 2 if _flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if _flexible(api_key, api_version) else 0


def decode_request_header(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, int]:
    """Parse the header at the start of a request frame; returns (header, body offset).

    Works for any api key and version, known or not, so the caller can answer an
    unsupported version (ApiVersions' KIP-511 rule) with the right correlation id.
    The header version of an unknown API key is taken as v1.
    """
    d = frame if isinstance(frame, memoryview) else memoryview(frame)
    if len(d) < 8:
        raise DecodeError(f"request header needs 8 bytes, frame has {len(d)}")
    api_key, api_version, correlation_id = _HEAD.unpack_from(d, 0)
    hv = request_header_version(api_key, api_version)
    p = 8
    client_id: str | None = None
    if hv >= 1:
        if len(d) < 10:
            raise DecodeError("truncated client_id")
        (n,) = _I16.unpack_from(d, 8)
        p = 10
        if n >= 0:
            if p + n > len(d):
                raise DecodeError("client_id past the end of the frame")
            # Kafka decodes with Java's new String(bytes, UTF_8): bad bytes become U+FFFD.
            client_id = str(d[p : p + n], "utf-8", "replace")
            p += n
    if hv >= 2:
        count, p = decode_unsigned_varint(d, p)
        for _ in range(count):  # no tagged header fields are defined: skip them all
            _tag, p = decode_unsigned_varint(d, p)
            size, p = decode_unsigned_varint(d, p)
            p += size
            if p > len(d):
                raise DecodeError("tagged header field past the end of the frame")
    return RequestHeader(request_api_key=api_key, request_api_version=api_version, correlation_id=correlation_id, client_id=client_id), p


def encode_request(msg: Any, version: int, correlation_id: int, client_id: str | None = None) -> bytes:
    """A complete request frame (4-byte size prefix, header, body)."""
    spec: MessageSpec = REQUESTS[msg.API_KEY]
    hv = request_header_version(spec.api_key, version)  # type: ignore[arg-type]
    head = bytearray(_HEAD.pack(spec.api_key, version, correlation_id))
    if hv >= 1:
        if client_id is None:
            head += b"\xff\xff"
        else:
            raw = client_id.encode("utf-8")
            head += _I16.pack(len(raw)) + raw
    if hv >= 2:
        head += b"\x00"
    body = encode_parts(msg, version)
    size = len(head) + sum(len(b) for b in body)
    return b"".join([_I32.pack(size), head, *body])


def encode_response(msg: Any, version: int, correlation_id: int) -> list[bytes | memoryview]:
    """A complete response frame as parts: size prefix + header first, body parts after
    (record bytes stay uncopied; hand the list to ``writelines``)."""
    body = encode_parts(msg, version)
    hv = response_header_version(msg.API_KEY, version)
    head = _I32.pack(correlation_id) + (b"\x00" if hv >= 1 else b"")
    size = len(head) + sum(map(len, body))
    return [_I32.pack(size) + head, *body]


def decode_response(cls: type, frame: bytes | bytearray | memoryview, version: int) -> tuple[int, Any]:
    """Parse a response frame (without its size prefix); returns (correlation id, message)."""
    d = frame if isinstance(frame, memoryview) else memoryview(frame)
    if len(d) < 4:
        raise DecodeError("response shorter than its header")
    (correlation_id,) = _I32.unpack_from(d, 0)
    p = 4
    if response_header_version(cls.API_KEY, version) >= 1:  # type: ignore[attr-defined]
        count, p = decode_unsigned_varint(d, p)
        for _ in range(count):
            _tag, p = decode_unsigned_varint(d, p)
            size, p = decode_unsigned_varint(d, p)
            p += size
        if p > len(d):
            raise DecodeError("response header past the end")
    msg, _ = decode_at(cls, d, version, p)
    return correlation_id, msg

