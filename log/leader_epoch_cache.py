"""LeaderEpochFileCache: leader epoch -> first offset of that epoch, per partition, kept in the
partition directory's ``leader-epoch-checkpoint`` (Kafka's ``LeaderEpochFileCache`` and
``LeaderEpochCheckpointFile``, KIP-101).

File format (``CheckpointFile`` version 0)::

    0          version
    2          number of entries
    0 0        "epoch startOffset", epochs and start offsets strictly increasing
    3 1200

Semantics, as Kafka's:

* ``assign(epoch, start_offset)`` adds an entry only when it changes something (a new epoch,
  or the latest epoch starting earlier); entries it contradicts (epoch or start offset >= the
  new one's) are removed first, so the entries stay monotonic.  Both must be >= 0.
* ``end_offset_for(epoch, log_end_offset)`` (OffsetForLeaderEpoch): -1 -> (-1, -1); the latest
  epoch -> (epoch, LEO); else the largest epoch <= the requested one with the start offset
  of the next epoch; an epoch above every entry -> (-1, -1); below every entry -> (requested
  epoch, start of the first entry).
* ``truncate_from_end(end_offset)`` (log truncation) drops entries starting at or after it;
  ``truncate_from_start(start_offset)`` (the log start offset moved) drops entries starting at
  or before it and moves the last dropped one to ``start_offset``.

Writes: Kafka fsyncs the file inside ``assign`` and defers the truncation writes to its
scheduler.  Here nothing fsyncs on the caller's thread (the event loop, under the log's
lock): ``assign`` replaces the file at once without fsync, truncations write nothing at
once, and both queue a flush on the log's scheduler's ``DurableWriteBatch`` (durable_batch.py:
one background task for every file pending) that rewrites the file and fsyncs it, or for
thousands of files at once syncs their file system once.  A crash before that task loses at
most the newest entries, which the loader gets back from the batches' ``partitionLeaderEpoch``
while recovering (Kafka's segment recovery does the same) and the partition layer re-assigns
its current epoch when the log opens.  A cache whose log is closed or deleted writes nothing
more (its directory may be renamed, or even recreated for a new topic of the same name).

Thread safety: one lock per cache; the file has its own ``checkpoint_lock`` too.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from typing import NamedTuple

from log.checkpoint import CheckpointFile
from log.durable_batch import durable_write_batch
from log.scheduler import Scheduler

__all__ = ["LEADER_EPOCH_CHECKPOINT_FILE", "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "EpochEntry",
           "LeaderEpochCheckpointFile", "LeaderEpochFileCache"]

_log = logging.getLogger(__name__)

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1          # OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH
UNDEFINED_EPOCH_OFFSET = -1   # OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochCheckpointFile(CheckpointFile):
    """``leader-epoch-checkpoint``: version 0, then "epoch startOffset" lines."""

    def __init__(self, path: str) -> None:
        super().__init__(path, 0)

    def write(self, entries: list[EpochEntry], sync: bool = True) -> None:
        self.write_lines([f"{e.epoch} {e.start_offset}" for e in entries], sync)

    def read(self) -> list[EpochEntry]:
        out = []
        for line in self.read_lines():
            parts = line.split()
            if len(parts) != 2:
                raise OSError(f"Malformed line in checkpoint file [{self.path}]: {line}")
            try:
                out.append(EpochEntry(int(parts[0]), int(parts[1])))
            except ValueError:
                raise OSError(f"Malformed line in checkpoint file [{self.path}]: {line}") from None
        return out


class LeaderEpochFileCache:
    def __init__(self, dir_: str, topic_partition: tuple[str, int], scheduler: Scheduler,
                 stored: bool = True) -> None:
        """``stored``: read the checkpoint file (False: the directory is new, the file was
        just created empty)."""
        self.dir = dir_
        self.topic_partition = topic_partition
        self.scheduler = scheduler
        self.checkpoint = LeaderEpochCheckpointFile(os.path.join(dir_, LEADER_EPOCH_CHECKPOINT_FILE))
        self._lock = threading.RLock()
        self._entries: list[EpochEntry] = []   # sorted by epoch (and so by start offset)
        self._flush_queued = False
        self._closed = False
        try:
            entries = self.checkpoint.read() if stored else []
        except OSError as e:
            _log.warning("Error reading %s, starting with an empty leader epoch cache: %s", self.checkpoint.path, e)
            entries = []
        for entry in entries:
            self._assign(entry)

    # ------------------------------------------------------------------ reads
    def entries(self) -> list[EpochEntry]:
        with self._lock:
            return list(self._entries)

    def latest_entry(self) -> EpochEntry | None:
        entries = self._entries
        return entries[-1] if entries else None

    def latest_epoch(self) -> int | None:
        latest = self.latest_entry()
        return None if latest is None else latest.epoch

    def is_update_needed(self, epoch: int, start_offset: int) -> bool:
        """Would ``assign(epoch, start_offset)`` change anything?  (The append path's check.)"""
        latest = self.latest_entry()
        return latest is None or epoch != latest.epoch or start_offset < latest.start_offset

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch; see the module docstring."""
        with self._lock:
            if requested_epoch == UNDEFINED_EPOCH:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            latest = self.latest_entry()
            if latest is not None and latest.epoch == requested_epoch:
                return requested_epoch, log_end_offset
            epochs = [e.epoch for e in self._entries]
            higher = bisect.bisect_right(epochs, requested_epoch)
            if higher == len(epochs):
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if higher == 0:
                return requested_epoch, self._entries[0].start_offset
            return self._entries[higher - 1].epoch, self._entries[higher].start_offset

    # ------------------------------------------------------------------ changes
    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed."""
        if not self.is_update_needed(epoch, start_offset):
            return False
        with self._lock:
            if not self._assign(EpochEntry(epoch, start_offset)):
                return False
            self._write_now_unsynced()
            self._queue_flush()
            return True

    def _assign(self, entry: EpochEntry) -> bool:
        if entry.epoch < 0 or entry.start_offset < 0:
            raise ValueError(f"Received invalid partition leader epoch entry {entry}")
        if not self.is_update_needed(entry.epoch, entry.start_offset):
            return False
        removed = []
        while self._entries and (self._entries[-1].epoch >= entry.epoch
                                 or self._entries[-1].start_offset >= entry.start_offset):
            removed.append(self._entries.pop())
        if len(removed) > 1 or (removed and removed[0].start_offset != entry.start_offset):
            _log.warning("[LeaderEpochCache %s-%d] New epoch entry %s caused truncation of conflicting entries %s. "
                         "Cache now contains %d entries.", *self.topic_partition, entry, removed, len(self._entries))
        self._entries.append(entry)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop the entries starting at or after ``end_offset`` (the log was truncated there)."""
        with self._lock:
            if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
                return
            while self._entries and self._entries[-1].start_offset >= end_offset:
                self._entries.pop()
            self._queue_flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: drop the entries starting at or before it and
        let the last of them start there (an entry at exactly ``start_offset`` is kept)."""
        with self._lock:
            removed = None
            while self._entries and self._entries[0].start_offset <= start_offset:
                removed = self._entries.pop(0)
            if removed is None:
                return
            self._entries.insert(0, EpochEntry(removed.epoch, start_offset))
            self._queue_flush()

    def clear(self) -> None:
        """Forget every entry (the log was emptied and restarts at a new offset)."""
        with self._lock:
            self._entries.clear()
            self._write_now_unsynced()
            self._queue_flush()

    # ------------------------------------------------------------------ file
    def _write_now_unsynced(self) -> None:
        if not self._closed:
            self.checkpoint.write(self._entries, sync=False)

    def _queue_flush(self) -> None:
        if not self._flush_queued and not self._closed:
            self._flush_queued = True
            durable_write_batch(self.scheduler).add(self.dir, self.flush)

    def flush(self, sync: bool = True) -> None:
        """Write the file, fsynced with its directory when ``sync``, unless the log was
        closed or its directory is gone (Kafka's ``writeIfDirExists``)."""
        with self._lock:
            self._flush_queued = False
            if self._closed or not os.path.isdir(self.dir):
                return
            self.checkpoint.write(self._entries, sync=sync)

    def close(self, flush: bool = True, sync: bool = True) -> None:
        """The log closes: write the file a last time (``flush``; not after a crash), fsynced
        unless ``sync`` is False (the caller syncs the file system), and never again."""
        with self._lock:
            if flush and not self._closed and os.path.isdir(self.dir):
                self.checkpoint.write(self._entries, sync=sync)
            self._closed = True

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self.topic_partition}, {self._entries})"
