"""A blocking connection to one broker (plain sockets; TLS and SASL optional).

Two ways to use it:

* ``call(request[, version])``: one request, then its answer (the version negotiated by
  ApiVersions unless given).  Any failure in between (timeout, closed connection, wrong
  correlation id, an answer that does not parse) closes the connection: its byte stream is
  in an unknown state.
* ``send`` / ``send_raw`` / ``receive`` / ``read_frame``: pipelined requests, chosen
  correlation ids and deliberately malformed bytes, for tests.  Nothing is checked or
  closed on the caller's behalf; a ``receive`` that timed out may be repeated.

Timeouts are per request, in seconds: a ``receive`` waits at most ``timeout_s`` for a whole
answer frame (``RequestTimeout``, a ``TimeoutError``); a send waits at most as long for the
socket to take the bytes.
"""

from __future__ import annotations

import socket
import ssl
import time
from typing import Any

from kbroker.client.errors import ClientError, ConnectionClosed, CorrelationMismatch, RequestTimeout
from kbroker.client.exchange import (
    DEFAULT_CLIENT_ID,
    DEFAULT_SOFTWARE,
    DEFAULT_TIMEOUT_S,
    Exchange,
    drive,
    expects_response,
    response_class,
)
from kbroker.client.sasl import SaslCredentials, authentication
from kbroker.client.versions import VersionTable, api_name, negotiation

__all__ = ["Connection"]

_RECV_BYTES = 1 << 20   # one receive buffer per connection, reused


class Connection:
    """A connected socket speaking the Kafka protocol; make one with :meth:`open`."""

    def __init__(self, sock: socket.socket, *, client_id: str | None = DEFAULT_CLIENT_ID,
                 timeout_s: float | None = DEFAULT_TIMEOUT_S, caps: dict[int, int] | None = None) -> None:
        self.sock = sock
        self.timeout_s = timeout_s
        self.caps = caps
        self.versions: VersionTable | None = None   # set by negotiate()
        self.closed = False
        self._exchange = Exchange(client_id)
        self._buffer = bytearray(_RECV_BYTES)

    @classmethod
    def open(cls, host: str, port: int, *, client_id: str | None = DEFAULT_CLIENT_ID,
             timeout_s: float | None = DEFAULT_TIMEOUT_S, ssl_context: ssl.SSLContext | None = None,
             sasl: SaslCredentials | None = None, negotiate: bool = True, caps: dict[int, int] | None = None,
             software: tuple[str, str] = DEFAULT_SOFTWARE, rcvbuf: int | None = None) -> Connection:
        """Connect (TLS when ``ssl_context`` is given), ask ApiVersions unless
        ``negotiate`` is False, then authenticate with ``sasl``.  ``caps``: api key -> the
        highest version the caller's code reads and writes.  ``rcvbuf`` sizes the socket's
        receive buffer (a slow reader).  Connection failures raise the socket's OSError."""
        sock = _connect(host, port, timeout_s, rcvbuf)
        if ssl_context is not None:
            try:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        conn = cls(sock, client_id=client_id, timeout_s=timeout_s, caps=caps)
        try:
            if negotiate:
                conn.negotiate(software)
            if sasl is not None:
                conn.authenticate(sasl)
        except BaseException:
            conn.close()
            raise
        return conn

    @property
    def client_id(self) -> str | None:
        return self._exchange.client_id

    @property
    def last_correlation_id(self) -> int:
        return self._exchange.last_correlation_id

    @property
    def buffered_bytes(self) -> int:
        """Bytes received that do not make a whole frame yet."""
        return self._exchange.frames.buffered_bytes

    # -- the conversation ------------------------------------------------------------------

    def negotiate(self, software: tuple[str, str] = DEFAULT_SOFTWARE) -> VersionTable:
        """ApiVersions: from now on ``call`` without a version picks one."""
        self.versions = VersionTable(drive(negotiation(*software), self.call), self.caps)
        return self.versions

    def authenticate(self, credentials: SaslCredentials) -> None:
        drive(authentication(credentials), self.call)

    def version_for(self, api_key: int, cap: int | None = None) -> int:
        if self.versions is None:
            raise ClientError(f"no ApiVersions answer on this connection: give {api_name(api_key)}'s version")
        return self.versions.pick(api_key, cap)

    def call(self, message: Any, version: int | None = None, timeout_s: float | None = None) -> Any:
        """Send ``message`` and return its answer (None for a Produce with acks=0).
        ``timeout_s`` None: the connection's."""
        if version is None:
            version = self.version_for(message.API_KEY)
        try:
            sent = self.send(message, version)
            if not expects_response(message):
                return None
            got, answer = self.receive(response_class(message), version, timeout_s)
            if got != sent:
                raise CorrelationMismatch(got, sent)
        except BaseException:
            self.close()
            raise
        return answer

    # -- pipelining and raw bytes -----------------------------------------------------------

    def send(self, message: Any, version: int, correlation_id: int | None = None) -> int:
        """Send without waiting; returns the correlation id (the next one unless given)."""
        cid, frame = self._exchange.request(message, version, correlation_id)
        self.send_raw(frame)
        return cid

    def send_raw(self, data: bytes) -> None:
        """Write ``data`` as it is (a test's malformed frame, or several frames at once)."""
        if self.closed:
            raise ConnectionClosed(message="this connection is closed")
        self.sock.settimeout(self.timeout_s)
        self.sock.sendall(data)

    def receive(self, resp_cls: type, version: int, timeout_s: float | None = None) -> tuple[int, Any]:
        """The next answer, decoded as ``resp_cls`` at ``version``: (correlation id, answer)."""
        return Exchange.decode(resp_cls, self.read_frame(timeout_s), version)

    def read_frame(self, timeout_s: float | None = None) -> bytearray:
        """The next answer frame, without its size prefix.  Raises ConnectionClosed when the
        broker closes (or resets) the connection first, RequestTimeout after ``timeout_s``."""
        if self.closed:
            raise ConnectionClosed(message="this connection is closed")
        frames = self._exchange.frames
        timeout = self.timeout_s if timeout_s is None else timeout_s
        deadline = None if timeout is None else time.monotonic() + timeout
        while (frame := frames.next_frame()) is None:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RequestTimeout(f"no whole answer within {timeout} s")
                self.sock.settimeout(left)
            else:
                self.sock.settimeout(None)
            try:
                n = self.sock.recv_into(self._buffer)
            except ConnectionResetError:   # a close with our requests unread is a reset
                n = 0
            except TimeoutError:
                raise RequestTimeout(f"no whole answer within {timeout} s") from None
            if n == 0:
                raise ConnectionClosed(frames.buffered_bytes)
            frames.feed(memoryview(self._buffer)[:n])
        return frame

    def close(self) -> None:
        self.closed = True
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connect(host: str, port: int, timeout_s: float | None, rcvbuf: int | None) -> socket.socket:
    if rcvbuf is None:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    else:   # sized before connecting: TCP fixes its window scale in the handshake
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.settimeout(timeout_s)
            sock.connect(address)
        except BaseException:
            sock.close()
            raise
    # requests are whole frames written at once: no reason to wait for more (Nagle)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock
