"""Small JSON documents the broker keeps in its first log dir (topic config overrides,
dynamic broker configs): read whole, written whole to a temp file that is fsynced and
renamed over the old one, so a crash leaves the old or the new document, never half.

Writes run off the caller's thread (the caller is the event loop: CreateTopics, DeleteTopics,
AlterConfigs...): ``JsonFileWriter`` serialises the document on the caller's thread (so what is
written is the state at the call) and hands the bytes to one writer thread per file, which
writes them in call order; each write returns a future that is done once that version is
durable, which a request handler awaits before answering (Kafka answers once the change is
stored).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Awaitable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from log.durable_files import replace_file

T = TypeVar("T")


def read_json(path: str, default: Any) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def _dumps(data: Any) -> str:
    return json.dumps(data, indent=1, sort_keys=True)


def _write_text_atomically(path: str, text: str) -> None:
    replace_file(path, text.encode("utf-8"))


def _done() -> Future[None]:
    f: Future[None] = Future()
    f.set_result(None)
    return f


class JsonFileWriter:
    """The single writer of one JSON file: ``write`` returns at once; the writes happen on one
    thread (``json-writer-<file>``), in the order of the calls, so the file always ends with
    the last version written.  Thread-safe."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"json-writer-{os.path.basename(path)}")
        self._lock = threading.Lock()  # submission order = serialisation order
        self._last: Future[None] = _done()

    def write(self, data: Any) -> Future[None]:
        """Queue ``data`` (serialised now) for writing; the future is done once it is durable
        (or holds the OSError that stopped it)."""
        with self._lock:
            self._last = self._executor.submit(_write_text_atomically, self.path, _dumps(data))
            return self._last

    def durable(self) -> Future[None]:
        """Done once every write queued so far is durable (the last one failed: its error)."""
        with self._lock:
            return self._last

    def close(self) -> None:
        """Finish the queued writes and stop the thread."""
        self._executor.shutdown(wait=True)


def answer_when_stored(response: T, stored: list[Future[None]]) -> T | Awaitable[T]:
    """For a request handler: ``response`` once every write in ``stored`` is durable (at once
    if they are, else as an awaitable the connection awaits; a failed write fails the request
    as a synchronous error would)."""
    if all(f.done() and f.exception() is None for f in stored):
        return response

    async def wait() -> T:
        for f in stored:
            await asyncio.wrap_future(f)
        return response

    return wait()
