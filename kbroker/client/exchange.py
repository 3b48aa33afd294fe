"""The sans-I/O half of a connection, shared by the blocking and the asyncio one.

* ``Exchange`` numbers requests (correlation ids 1, 2, ... per connection, wrapping below
  2**31 as the field is an int32), writes request frames (``wire.headers.encode_request``:
  size prefix, header at the version the API's flexibleVersions asks, body) and decodes
  answer frames that ``wire.framing.FrameDecoder`` cut out of the byte stream.
* Multi-round exchanges (ApiVersions with its KIP-511 retry, SASL) are written once, as
  generators of ``(request, version)`` steps that receive each answer (``Steps``); a
  connection runs them with :func:`drive` or :func:`adrive`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any

from wire.errors import DecodeError
from wire.framing import FrameDecoder
from wire.headers import decode_response, encode_request
from wire.schema import RESPONSES

__all__ = ["Exchange", "Steps", "response_class", "expects_response", "drive", "adrive",
           "ANY_FRAME_BYTES", "DEFAULT_CLIENT_ID", "DEFAULT_SOFTWARE", "DEFAULT_TIMEOUT_S"]

Steps = Generator[tuple[Any, int], Any, Any]

DEFAULT_CLIENT_ID = "kbroker-client"
# ApiVersions v3's client software name and version (KIP-511: letters, digits, '-' and '.')
DEFAULT_SOFTWARE = ("kbroker-client", "1")
DEFAULT_TIMEOUT_S = 30.0    # per request (Kafka's request.timeout.ms default is 30 s)

# Answers are as large as the broker makes them (a Fetch answer is bounded by the request's
# max_bytes, not by the client): the frame limit is only the int32 size field's.
ANY_FRAME_BYTES = 0x7FFFFFFF
_API_VERSIONS_KEY = 18
_PRODUCE_KEY = 0
_MAX_CORRELATION_ID = 0x7FFFFFFF


def response_class(request: Any) -> type:
    """The generated response class answering ``request`` (same api key)."""
    return RESPONSES[request.API_KEY].cls


def expects_response(request: Any) -> bool:
    """False for a Produce with acks=0: the broker answers nothing (Kafka's rule)."""
    return not (request.API_KEY == _PRODUCE_KEY and request.acks == 0)


class Exchange:
    __slots__ = ("client_id", "frames", "_next_id")

    def __init__(self, client_id: str | None, max_frame_bytes: int = ANY_FRAME_BYTES) -> None:
        self.client_id = client_id
        self.frames = FrameDecoder(max_frame_bytes)
        self._next_id = 1

    @property
    def last_correlation_id(self) -> int:
        """The id the last numbered request got (0 before the first)."""
        return self._next_id - 1

    def request(self, message: Any, version: int, correlation_id: int | None = None) -> tuple[int, bytes]:
        """(correlation id, the request's complete frame).  Without ``correlation_id`` the
        next number is taken; a given one (tests that pick their ids) takes none."""
        if correlation_id is None:
            correlation_id = self._next_id
            self._next_id = correlation_id + 1 if correlation_id < _MAX_CORRELATION_ID else 1
        return correlation_id, encode_request(message, version, correlation_id, self.client_id)

    @staticmethod
    def decode(resp_cls: type, frame: bytes | bytearray | memoryview, version: int) -> tuple[int, Any]:
        """(correlation id, answer) from a frame without its size prefix.

        An ApiVersions answer that does not parse at the version asked is read as v0: a
        broker answers an ApiVersions version it does not know with UNSUPPORTED_VERSION in
        the v0 layout (KIP-511; Kafka's ``ApiVersionsResponse.parse`` falls back the same
        way)."""
        try:
            return decode_response(resp_cls, frame, version)
        except DecodeError:
            if resp_cls.API_KEY != _API_VERSIONS_KEY or version == 0:  # type: ignore[attr-defined]
                raise
            return decode_response(resp_cls, frame, 0)


def drive(steps: Steps, call: Callable[[Any, int], Any]) -> Any:
    """Run a step generator on a blocking ``call(request, version) -> answer``."""
    try:
        step = next(steps)
        while True:
            step = steps.send(call(*step))
    except StopIteration as done:
        return done.value


async def adrive(steps: Steps, call: Callable[[Any, int], Awaitable[Any]]) -> Any:
    """Run a step generator on an async ``call(request, version) -> answer``."""
    try:
        step = next(steps)
        while True:
            step = steps.send(await call(*step))
    except StopIteration as done:
        return done.value
