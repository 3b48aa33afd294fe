"""A TCP relay in front of a broker that notes the (api_key, api_version) of every request a
client sends through it, so a test can say which protocol versions a stock client chose.
Start the broker with ``advertised.listeners`` naming the relay's port, so the clients'
later connections (found through Metadata) come through it too."""

from __future__ import annotations

import socket
import threading


class RequestRecorder:
    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self.target_port: int | None = None   # the broker's real port, set before clients connect
        self.requests: list[tuple[int, int]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def versions(self, api_key: int) -> set[int]:
        with self._lock:
            return {v for k, v in self.requests if k == api_key}

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            assert self.target_port is not None
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _requests(self, src: socket.socket, dst: socket.socket) -> None:
        """Client to broker, frame by frame: size (int32), then api_key and api_version (int16)."""
        try:
            while True:
                head = _read(src, 4)
                body = _read(src, int.from_bytes(head, "big"))
                with self._lock:
                    self.requests.append((int.from_bytes(body[0:2], "big"), int.from_bytes(body[2:4], "big")))
                dst.sendall(head + body)
        except OSError:
            pass
        finally:
            src.close()
            dst.close()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            src.close()
            dst.close()


def _read(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("closed")
        buf += chunk
    return buf
