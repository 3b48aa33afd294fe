"""Sans-IO framing: a 4-byte big-endian size, then that many bytes (h11-style).

``FrameDecoder.feed(data)`` accepts any chunking of the byte stream;
``next_frame()`` returns complete frames in order, or None.  Each frame is its own
``bytearray``: once the size is known the decoder allocates exactly that much and copies
the stream into it, so the frame never moves again and the broker may patch record
batches in place (base offsets) without another copy.  A size above
``max_frame_bytes`` (Kafka's ``socket.request.max.bytes``) or below zero raises
``FrameError`` before anything is allocated: the caller closes that connection.
"""

from __future__ import annotations

from collections import deque

from wire.errors import DecodeError

DEFAULT_MAX_FRAME_BYTES = 104857600  # socket.request.max.bytes, 100 MiB


class FrameError(DecodeError):
    """The stream cannot be framed: negative or oversized size prefix."""


class FrameDecoder:
    __slots__ = ("max_frame_bytes", "_head", "_frame", "_filled", "_ready")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        self.max_frame_bytes = max_frame_bytes
        self._head = bytearray()          # partial size prefix (< 4 bytes)
        self._frame: bytearray | None = None
        self._filled = 0
        self._ready: deque[bytearray] = deque()

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        mv = memoryview(data)
        i, n = 0, len(mv)
        while i < n:
            frame = self._frame
            if frame is None:
                take = min(4 - len(self._head), n - i)
                self._head += mv[i : i + take]
                i += take
                if len(self._head) < 4:
                    return
                size = int.from_bytes(self._head, "big", signed=True)
                self._head.clear()
                if size < 0:
                    raise FrameError(f"negative frame size {size}")
                if size > self.max_frame_bytes:
                    raise FrameError(
                        f"frame of {size} bytes exceeds the limit of {self.max_frame_bytes}"
                    )
                frame = bytearray(size)
                if size == 0:
                    self._ready.append(frame)
                    continue
                self._frame, self._filled = frame, 0
            take = min(len(frame) - self._filled, n - i)
            frame[self._filled : self._filled + take] = mv[i : i + take]
            self._filled += take
            i += take
            if self._filled == len(frame):
                self._ready.append(frame)
                self._frame = None

    def next_frame(self) -> bytearray | None:
        return self._ready.popleft() if self._ready else None

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for frames not yet complete (for flow control)."""
        return len(self._head) + (self._filled if self._frame is not None else 0)
