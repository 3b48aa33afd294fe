"""A blocking Kafka-protocol client for tests that speak raw requests to an embedded broker:
one socket, one request at a time, each response matched to its correlation id."""

from __future__ import annotations

import socket
from typing import Any

from wire.headers import decode_response, encode_request

DEADLINE_S = 60


class WireClient:
    def __init__(self, bootstrap: str, client_id: str = "wire-test") -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=DEADLINE_S)
        self.client_id = client_id
        self.cid = 0

    def call(self, msg: Any, version: int, resp_cls: type) -> Any:
        """Send ``msg`` at ``version`` and return the decoded ``resp_cls`` answer."""
        self.cid += 1
        self.sock.sendall(encode_request(msg, version, self.cid, self.client_id))
        size = int.from_bytes(self._read(4), "big")
        cid, resp = decode_response(resp_cls, self._read(size), version)
        assert cid == self.cid
        return resp

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "connection closed"
            buf += chunk
        return buf

    def close(self) -> None:
        self.sock.close()
