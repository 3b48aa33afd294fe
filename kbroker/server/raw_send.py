"""Raw mode: responses with record slices sent by the connection itself (``os.sendfile``).

Zero-copy Fetch.  A response part that is a :class:`~log.file_records.PinnedSlice`
(records of a large slice, kbroker/replica/record_sending.py) goes from the page cache to the
socket with ``os.sendfile``.  Neither uvloop's transport nor its loop can sendfile
(``loop.sendfile``/``sock_sendfile`` raise NotImplementedError), so the connection
writes such a response itself, on the socket's descriptor, in *raw mode*:

* Raw mode starts when a response with a slice is ready; from then on every part of
  every later response is queued in ``_out`` (strict request order is kept by that one
  queue) and written by ``_pump`` with ``os.writev`` (bytes) and ``os.sendfile`` (slices),
  nothing through the transport.
* ``_pump`` writes only once the transport's own write buffer is empty (bytes handed to
  the transport before raw mode leave first; nothing is added to it during raw mode), so
  the byte stream is the transport's bytes, then ``_out`` in order.
* When the socket is full (EAGAIN or a short write), ``_pump`` waits for it to be writable
  through a reader/writer registration on a ``dup`` of the socket's descriptor (the loops
  refuse ``add_writer`` on a descriptor a transport owns; epoll is told about the dup, the
  same socket).  That registration exists only while raw mode waits; it is removed, and the
  dup closed, before the connection closes.
* Raw mode ends when ``_out`` is empty; later responses without slices go through the
  transport again.  Reading stays paused in raw mode.
* A slice's descriptor is a dup taken at read time: retention or the cleaner deleting the
  segment meanwhile does not stop its bytes (the inode lives until the dup is closed).  A
  file shorter than the slice (sendfile returns 0: a truncation under the send) or a
  socket error closes the connection: the frame cannot be completed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from typing import Any

from log.file_records import PinnedSlice

log = logging.getLogger("kbroker.connection")

_IOV_MAX = 1024           # parts per os.writev (Linux's IOV_MAX)


class SendStats:
    """Counters of the raw-mode sends of this process (tests and the bench read them)."""

    sendfile_calls = 0      # os.sendfile calls that sent something
    sendfile_bytes = 0      # record bytes sent with sendfile
    slices = 0              # PinnedSlices sent whole
    raw_waits = 0           # raw-mode episodes that had to wait for the socket to drain


def read_slices(parts: list[Any]) -> list[Any]:
    """``parts`` with each PinnedSlice read into bytes (and released): a TLS connection
    cannot sendfile; the record bytes were just read or written, so the page cache has them."""
    out: list[Any] = []
    try:
        for p in parts:
            out.append(bytes(p) if type(p) is PinnedSlice else p)   # OSError: file shorter
    finally:
        for p in parts:
            if type(p) is PinnedSlice:
                p.close()
    return out


class RawSender:
    """The raw-mode half of kbroker.server.connection.KafkaConnection (a mixin: it shares the
    connection's fields, set in its ``__init__``; ``_abort``, ``close_after_sending`` and
    ``_update_reading`` are the connection's)."""

    transport: asyncio.Transport | None
    closed: bool
    peer: str
    _out: deque[Any]
    _slice_sent: int
    _sock_fd: int
    _wake_fd: int
    _raw_slices: int
    _raw_bytes: int
    _close_when_sent: str | None

    def buffered_bytes(self) -> int:
        """Response bytes this connection holds in memory: the transport's buffer and the
        bytes parts queued in raw mode (slices are on disk, not counted)."""
        t = self.transport
        held = t.get_write_buffer_size() if t is not None and not self.closed else 0
        return held + sum(len(p) for p in list(self._out) if type(p) is not PinnedSlice)

    def _pump(self) -> None:
        """Write ``_out`` in order on the socket itself until it is empty or the socket is
        full (then wait for writability); see the module docstring."""
        transport = self.transport
        if self.closed or transport is None:
            return
        if transport.get_write_buffer_size():
            self._wait_writable()   # the transport's bytes leave first
            return
        if self._sock_fd < 0:
            self._sock_fd = transport.get_extra_info("socket").fileno()
        out = self._out
        try:
            while out:
                head = out[0]
                if type(head) is PinnedSlice:
                    left = head.length - self._slice_sent
                    n = os.sendfile(self._sock_fd, head.fd, head.position + self._slice_sent, left)
                    if n == 0:
                        self._abort(f"{head.path} ended before the {head.length} bytes being sent "
                                    f"from position {head.position}")
                        return
                    SendStats.sendfile_calls += 1
                    SendStats.sendfile_bytes += n
                    if n < left:
                        self._slice_sent += n
                        self._wait_writable()
                        return
                    out.popleft().close()
                    self._slice_sent = 0
                    SendStats.slices += 1
                    self._raw_slices += 1
                    self._raw_bytes += head.length
                    continue
                batch = []
                for p in out:
                    if type(p) is PinnedSlice or len(batch) == _IOV_MAX:
                        break
                    batch.append(p)
                n = os.writev(self._sock_fd, batch)
                for p in batch:
                    size = len(p)
                    if n >= size:
                        n -= size
                        out.popleft()
                    else:
                        out[0] = memoryview(p)[n:]
                        self._wait_writable()
                        return
        except (BlockingIOError, InterruptedError):
            self._wait_writable()
            return
        except OSError as e:
            self._abort(f"send failed: {e}")
            return
        self._end_raw_mode()
        if self._raw_slices:
            log.debug("sent %d record slices (%d bytes) to %s with sendfile", self._raw_slices,
                      self._raw_bytes, self.peer)
            self._raw_slices = self._raw_bytes = 0
        if self._close_when_sent is not None:   # the responses before the close slot have all left
            self.close_after_sending(self._close_when_sent)
            return
        self._update_reading()

    def _wait_writable(self) -> None:
        if self._wake_fd < 0:
            loop = asyncio.get_running_loop()
            self._wake_fd = os.dup(self._sock_fd if self._sock_fd >= 0
                                   else self.transport.get_extra_info("socket").fileno())
            loop.add_writer(self._wake_fd, self._pump)
            SendStats.raw_waits += 1

    def _end_raw_mode(self) -> None:
        """Stop watching the socket (before its descriptor may close); on close, release
        the slices never sent."""
        if self._wake_fd >= 0:
            asyncio.get_running_loop().remove_writer(self._wake_fd)
            os.close(self._wake_fd)
            self._wake_fd = -1
        if self.closed:
            while self._out:
                p = self._out.popleft()
                if type(p) is PinnedSlice:
                    p.close()
