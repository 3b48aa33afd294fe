"""One background pass that makes many small state files durable at once.

A creation of 10,000 partitions gives each new log a ``partition.metadata`` (its topic id)
and a ``leader-epoch-checkpoint`` entry, both written at once without fsync (the caller may
be the event loop) and made durable later on the log's scheduler thread.  Written one by
one, each costs two fsyncs (the file, then its directory for the rename), and each fsync is
an ext4 journal commit: ~0.2 ms on a quiet disk, milliseconds when segments are being
written, so 10,000 partitions kept the scheduler thread (and the disk) busy for tens of
seconds after the creation had answered.

``DurableWriteBatch`` (one per scheduler, ``durable_write_batch(scheduler)``) collects the
pending writes of every log of that scheduler and queues one ``flush-state-files`` task for
all of them (a write added while the task runs goes to the next task).  The task:

* fewer than ``SYNCFS_MIN_WRITES`` pending: each write with its own fsyncs, as before;
* more: each written without fsync, then one ``syncfs`` per file system they live on (Linux:
  every dirty page and every metadata change of that file system reaches the disk before it
  returns, the renames included), then each write's ``synced`` callback.  If ``syncfs``
  fails or the platform has none, every write is done again with its own fsyncs, so an
  error is reported against the file it belongs to.

A write is ``flush(sync: bool)``: write the file's current content (atomically: temp file,
rename) and fsync it and its directory when ``sync``; it writes nothing if its log has been
closed or deleted meanwhile.  The batch never holds its own lock while calling one.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from log.durable_files import syncfs_file_systems

__all__ = ["SYNCFS_MIN_WRITES", "DurableWriteBatch", "durable_write_batch", "syncfs_pays"]

_log = logging.getLogger(__name__)

# Below this many files, one fsync pair each (~0.4 ms) costs less than a syncfs, which also
# writes out whatever else the file system has dirty (segment data, up to gigabytes).
SYNCFS_MIN_WRITES = 256


def syncfs_pays(files: int) -> bool:
    """Is one syncfs cheaper than fsyncing ``files`` small files one by one?"""
    return files >= SYNCFS_MIN_WRITES


@dataclass(frozen=True)
class _Write:
    dir: str                                  # where the file is (picks the file system)
    flush: Callable[[bool], object]
    synced: Callable[[], None] | None         # after a syncfs made an unsynced write durable


class DurableWriteBatch:
    TASK_NAME = "flush-state-files"

    def __init__(self, scheduler) -> None:  # noqa: ANN001 - log.scheduler.Scheduler
        self.scheduler = scheduler
        self._lock = threading.Lock()
        self._pending: list[_Write] = []
        self.tasks_queued = 0   # for tests and benches: tasks, not files
        self.syncfs_calls = 0   # likewise

    def add(self, dir_: str, flush: Callable[[bool], object], synced: Callable[[], None] | None = None) -> None:
        """Queue ``flush`` (see the module docstring); any thread."""
        with self._lock:
            self._pending.append(_Write(dir_, flush, synced))
            if len(self._pending) > 1:
                return   # the task queued for the first one takes this one too
            self.tasks_queued += 1
        self.scheduler.schedule_once(self.TASK_NAME, self.run)

    def run(self) -> int:
        """Make everything pending now durable; returns how many writes ran."""
        with self._lock:
            pending, self._pending = self._pending, []
        if not syncfs_pays(len(pending)) or not self._write_then_syncfs(pending):
            for w in pending:
                _flush(w, True)
        return len(pending)

    def _write_then_syncfs(self, pending: list[_Write]) -> bool:
        """Write all unsynced, then one syncfs per file system; False if a syncfs failed."""
        for w in pending:
            _flush(w, False)
        try:   # a log deleted meanwhile has nothing left to sync
            self.syncfs_calls += syncfs_file_systems(w.dir for w in pending)
        except OSError as e:
            _log.warning("syncfs failed (%s); syncing the %d state files one by one", e, len(pending))
            return False
        for w in pending:
            if w.synced is not None:
                w.synced()
        return True


def _flush(w: _Write, sync: bool) -> None:
    try:
        w.flush(sync)
    except Exception:  # noqa: BLE001 - one bad dir must not keep the other files unwritten
        _log.exception("Error while writing a state file in %s", w.dir)


_BATCHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_BATCHES_LOCK = threading.Lock()


def durable_write_batch(scheduler) -> DurableWriteBatch:  # noqa: ANN001 - a log.scheduler.Scheduler
    """The one batch of ``scheduler``'s logs."""
    with _BATCHES_LOCK:
        batch = _BATCHES.get(scheduler)
        if batch is None:
            batch = _BATCHES[scheduler] = DurableWriteBatch(scheduler)
        return batch
