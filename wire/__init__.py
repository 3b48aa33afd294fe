"""wire: Kafka's binary protocol, sans-IO (bytes and messages only; no sockets, files or asyncio).

Theory of operation
-------------------
* ``wire/_generated`` is produced by ``python -m wire.codegen`` (``make gen``) from Kafka's
  own JSON schemas: a table of facts (``schema_table.py``) and one slotted dataclass per
  message and nested struct (``messages.py``).  Nothing reads the JSON at run time.
* The version is a parameter, never a class: ``encode(msg, version)`` and
  ``decode(Type, buf, version)`` (``wire.codec``) cover every version in validVersions.
  They run compiled per-(message, version) functions (``wire.compiler``), checked
  byte-for-byte against the table-driven reference ``wire.interpreter``.
* Headers (``wire.headers``) and framing (``wire.framing``) are written by hand: the
  header version follows the API's flexibleVersions, except that ApiVersions responses
  always use header v0.  ``FrameDecoder`` turns a byte stream into frames.
* Record batches (``wire.record_batch``) stay opaque bytes on the hot paths: the
  ``records`` field decodes to a zero-copy memoryview; the batch view reads its 61-byte
  header in place; records are only iterated when someone asks.
* Errors: only ``wire.errors.WireError`` subclasses escape (``DecodeError`` for bad
  input); Kafka's error codes are ``wire.error_codes.ErrorCode``.

Rule: wire imports nothing from log, groups or kbroker, and no I/O modules.
"""

from wire import messages
from wire.codec import decode, decode_at, encode, encode_parts
from wire.error_codes import ErrorCode
from wire.errors import DecodeError, EncodeError, UnsupportedVersionError, WireError

__all__ = [
    "messages", "encode", "encode_parts", "decode", "decode_at", "ErrorCode",
    "WireError", "DecodeError", "EncodeError", "UnsupportedVersionError",
]
