"""``WireClient``: kbroker.client's blocking Connection with the signatures the tests that
speak raw requests were written with (the answer's class named, a lost connection an
AssertionError).  ``call`` sends one request and waits for its answer, ``send`` / ``receive``
pipeline several (answers come back in request order, each with its correlation id)."""

from __future__ import annotations

from typing import Any

from kbroker.client import Connection, ConnectionClosed

DEADLINE_S = 60


class WireClient:
    def __init__(self, bootstrap: str, client_id: str = "wire-test", rcvbuf: int | None = None) -> None:
        """``rcvbuf`` shrinks the socket's receive buffer (a slow reader)."""
        host, port = bootstrap.rsplit(":", 1)
        self.conn = Connection.open(host, int(port), client_id=client_id, timeout_s=DEADLINE_S, negotiate=False,
                                    rcvbuf=rcvbuf)
        self.sock = self.conn.sock

    @property
    def cid(self) -> int:
        """The correlation id of the last request numbered by the client (0 before any)."""
        return self.conn.last_correlation_id

    def call(self, msg: Any, version: int, resp_cls: type, correlation_id: int | None = None) -> Any:
        """Send ``msg`` at ``version`` and return the decoded ``resp_cls`` answer."""
        cid = self.send(msg, version, correlation_id)
        got, resp = self.receive(resp_cls, version)
        assert got == cid
        return resp

    def send(self, msg: Any, version: int, correlation_id: int | None = None) -> int:
        """Send without waiting; the correlation id used (the next one unless given)."""
        return self.conn.send(msg, version, correlation_id)

    def receive(self, resp_cls: type, version: int) -> tuple[int, Any]:
        """The next answer: (correlation id, decoded ``resp_cls``)."""
        try:
            return self.conn.receive(resp_cls, version)
        except ConnectionClosed as e:
            raise AssertionError(f"connection closed with {e.unread} bytes of an answer unread") from None

    def close(self) -> None:
        self.conn.close()
