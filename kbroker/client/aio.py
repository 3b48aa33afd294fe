"""An asyncio connection to one broker (asyncio streams; TLS and SASL optional).

``await conn.call(request[, version])`` sends one request and returns its answer.  One
request is in flight at a time: concurrent calls wait their turn on a lock, so a
connection may be shared by tasks.  Any failure during a call (timeout, closed connection,
wrong correlation id, an answer that does not parse, the caller's cancellation) closes the
connection: its byte stream is in an unknown state; a closed connection raises
ConnectionClosed at once.  Reconnecting is the owner's policy (open a new one).

Timeouts are per call, in seconds (``asyncio.timeout``), and raise ``RequestTimeout`` (a
``TimeoutError``); ``timeout_s=None`` at :meth:`AsyncConnection.open` leaves the deadline
to the caller (the inter-broker links keep their own ``wait_for``).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable
from typing import Any, TypeVar

from kbroker.client.errors import ClientError, ConnectionClosed, CorrelationMismatch, RequestTimeout
from kbroker.client.exchange import (
    DEFAULT_CLIENT_ID,
    DEFAULT_SOFTWARE,
    DEFAULT_TIMEOUT_S,
    Exchange,
    adrive,
    expects_response,
    response_class,
)
from kbroker.client.sasl import SaslCredentials, authentication
from kbroker.client.versions import VersionTable, api_name, negotiation

__all__ = ["AsyncConnection"]

_READ_BYTES = 1 << 16   # per read from the stream; StreamReader buffers 64 KiB by default
T = TypeVar("T")


class AsyncConnection:
    """A connected asyncio stream pair speaking the Kafka protocol; make one with :meth:`open`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 client_id: str | None = DEFAULT_CLIENT_ID, timeout_s: float | None = DEFAULT_TIMEOUT_S,
                 caps: dict[int, int] | None = None) -> None:
        self._reader, self._writer = reader, writer
        self.timeout_s = timeout_s
        self.caps = caps
        self.versions: VersionTable | None = None   # set by negotiate()
        self.closed = False
        self._exchange = Exchange(client_id)
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, host: str, port: int, *, client_id: str | None = DEFAULT_CLIENT_ID,
                   timeout_s: float | None = DEFAULT_TIMEOUT_S, ssl_context: ssl.SSLContext | None = None,
                   sasl: SaslCredentials | None = None, negotiate: bool = True,
                   caps: dict[int, int] | None = None,
                   software: tuple[str, str] = DEFAULT_SOFTWARE) -> AsyncConnection:
        """Connect (TLS when ``ssl_context`` is given; the certificate is checked against
        ``host``), ask ApiVersions unless ``negotiate`` is False, then authenticate with
        ``sasl``; all within ``timeout_s``.  ``caps``: api key -> the highest version the
        caller's code reads and writes."""
        async def connect() -> AsyncConnection:
            reader, writer = await asyncio.open_connection(
                host, port, ssl=ssl_context, server_hostname=host if ssl_context is not None else None)
            conn = cls(reader, writer, client_id=client_id, timeout_s=timeout_s, caps=caps)
            try:
                if negotiate:
                    await conn.negotiate(software)
                if sasl is not None:
                    await conn.authenticate(sasl)
            except BaseException:
                conn.close()
                raise
            return conn
        return await _within(connect(), timeout_s, f"connecting to {host}:{port}")

    @property
    def client_id(self) -> str | None:
        return self._exchange.client_id

    async def negotiate(self, software: tuple[str, str] = DEFAULT_SOFTWARE) -> VersionTable:
        """ApiVersions: from now on ``call`` without a version picks one."""
        self.versions = VersionTable(await adrive(negotiation(*software), self.call), self.caps)
        return self.versions

    async def authenticate(self, credentials: SaslCredentials) -> None:
        await adrive(authentication(credentials), self.call)

    def version_for(self, api_key: int, cap: int | None = None) -> int:
        if self.versions is None:
            raise ClientError(f"no ApiVersions answer on this connection: give {api_name(api_key)}'s version")
        return self.versions.pick(api_key, cap)

    async def call(self, message: Any, version: int | None = None, timeout_s: float | None = None) -> Any:
        """Send ``message`` and return its answer (None for a Produce with acks=0).
        ``timeout_s`` None: the connection's."""
        if version is None:
            version = self.version_for(message.API_KEY)
        timeout = self.timeout_s if timeout_s is None else timeout_s
        async with self._lock:
            try:
                return await _within(self._roundtrip(message, version), timeout, type(message).__name__)
            except BaseException:
                self.close()
                raise

    async def _roundtrip(self, message: Any, version: int) -> Any:
        if self.closed:
            raise ConnectionClosed(message="this connection is closed")
        sent, frame = self._exchange.request(message, version)
        self._writer.write(frame)
        await self._writer.drain()
        if not expects_response(message):
            return None
        got, answer = Exchange.decode(response_class(message), await self._read_frame(), version)
        if got != sent:
            raise CorrelationMismatch(got, sent)
        return answer

    async def _read_frame(self) -> bytearray:
        frames = self._exchange.frames
        while (frame := frames.next_frame()) is None:
            data = await self._reader.read(_READ_BYTES)
            if not data:
                raise ConnectionClosed(frames.buffered_bytes)
            frames.feed(data)
        return frame

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._writer.close()

    async def aclose(self) -> None:
        """Close and wait until the transport is gone (errors of a dead peer ignored)."""
        self.close()
        try:
            await self._writer.wait_closed()
        except OSError:   # ssl.SSLError included
            pass

    async def __aenter__(self) -> AsyncConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _within(aw: Awaitable[T], timeout_s: float | None, what: str) -> T:
    """``await aw``, raising RequestTimeout when ``timeout_s`` passes first."""
    if timeout_s is None:
        return await aw
    try:
        async with asyncio.timeout(timeout_s) as deadline:
            return await aw
    except TimeoutError:
        if deadline.expired():
            raise RequestTimeout(f"{what}: no answer within {timeout_s} s") from None
        raise
