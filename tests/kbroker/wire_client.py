"""A blocking Kafka-protocol client for tests that speak raw requests to a broker: one
socket; ``call`` sends one request and waits for its answer, ``send`` / ``receive`` pipeline
several (answers come back in request order, each with its correlation id)."""

from __future__ import annotations

import socket
import struct
from typing import Any

from wire.headers import decode_response, encode_request

DEADLINE_S = 60


class WireClient:
    def __init__(self, bootstrap: str, client_id: str = "wire-test", rcvbuf: int | None = None) -> None:
        """``rcvbuf`` shrinks the socket's receive buffer (a slow reader)."""
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.socket()
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(DEADLINE_S)
        self.sock.connect((host, int(port)))
        self.client_id = client_id
        self.cid = 0
        self.buf = bytearray()

    def call(self, msg: Any, version: int, resp_cls: type, correlation_id: int | None = None) -> Any:
        """Send ``msg`` at ``version`` and return the decoded ``resp_cls`` answer."""
        cid = self.send(msg, version, correlation_id)
        got, resp = self.receive(resp_cls, version)
        assert got == cid
        return resp

    def send(self, msg: Any, version: int, correlation_id: int | None = None) -> int:
        """Send without waiting; the correlation id used (the next one unless given)."""
        if correlation_id is None:
            self.cid += 1
            correlation_id = self.cid
        self.sock.sendall(encode_request(msg, version, correlation_id, self.client_id))
        return correlation_id

    def receive(self, resp_cls: type, version: int) -> tuple[int, Any]:
        """The next answer: (correlation id, decoded ``resp_cls``)."""
        self._fill(4)
        (size,) = struct.unpack_from(">i", self.buf)
        self._fill(4 + size)
        frame = bytes(self.buf[4:4 + size])
        del self.buf[:4 + size]
        return decode_response(resp_cls, frame, version)

    def _fill(self, n: int) -> None:
        while len(self.buf) < n:
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:   # a close with our requests unread is a reset
                chunk = b""
            assert chunk, f"connection closed with {len(self.buf)} of {n} bytes"
            self.buf += chunk

    def close(self) -> None:
        self.sock.close()
