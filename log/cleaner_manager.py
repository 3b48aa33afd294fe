"""LogCleanerManager: which log to clean next and how far each log is clean (Kafka's
``LogCleanerManager`` and ``LogToClean``).

State (guarded by one lock, as Kafka's: the broker may grab and commit on one thread and
delete partitions on another):

* the **cleaner offset checkpoint** of each log dir, ``<log.dir>/cleaner-offset-checkpoint``
  in Kafka's offset checkpoint format (``0`` / count / ``topic partition offset`` lines, see
  checkpoint.py): per log, the *first dirty offset*, below which the log has been cleaned.
  Loaded once, kept in memory, rewritten (atomically) when a cleaning finishes;
* the logs being cleaned (``in_progress``), paused (a count per log) and marked uncleanable
  after an unexpected error (per log dir), which are skipped when choosing.

Choosing (``grab_filthiest_compacted_log``): for every log with cleanup.policy containing
``compact``, the range ``[first dirty, first uncleanable)`` (:func:`cleanable_offsets`): the
first dirty offset is the checkpoint (reset to the log start offset when it lies outside the
log); the first uncleanable offset is the lowest of the last stable offset (<= the high
watermark), the active segment's base offset and, with
min.compaction.lag.ms > 0, the base of the first segment holding a record newer than
``now - min.compaction.lag.ms``; it is then rounded down to a segment base.  The *cleanable
ratio* is dirty bytes / total bytes, where the segments at or after the one holding the first
dirty offset and before the first uncleanable one are dirty and those before the first dirty
offset are clean (the segment holding it counts as both, as in Kafka).  A log qualifies when
its ratio is above min.cleanable.dirty.ratio, or when it has cleanable bytes and a dirty
segment whose first batch is older than max.compaction.lag.ms; the one with the highest ratio
is chosen and marked in progress until ``done_cleaning``/``abort``.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from log.checkpoint import OffsetCheckpointFile
from log.log import Log

__all__ = ["CLEANER_OFFSET_CHECKPOINT_FILE", "LogCleanerManager", "LogToClean", "OffsetsToClean",
           "calculate_cleanable_bytes", "cleanable_offsets", "max_compaction_delay"]

_log = logging.getLogger(__name__)
TopicPartition = tuple[str, int]
T = TypeVar("T")


def _locked(method: Callable[..., T]) -> Callable[..., T]:
    """Run the method under the manager's lock (lock order: manager, then a log's lock)."""
    @functools.wraps(method)
    def wrapper(self: LogCleanerManager, *args: object, **kwargs: object) -> T:
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper
CLEANER_OFFSET_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
_LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class OffsetsToClean:
    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    force_update_checkpoint: bool = False  # the checkpoint was invalid and is reset to first_dirty_offset


def cleanable_offsets(log: Log, last_clean_offset: int | None, now: int) -> OffsetsToClean:
    """Kafka's ``LogCleanerManager.cleanableOffsets``."""
    log_start = log.log_start_offset
    checkpoint = last_clean_offset if last_clean_offset is not None else log_start
    force = False
    if checkpoint < log_start:
        if not (log.config.compact and log.config.delete):
            _log.warning("Resetting first dirty offset of %s to log start offset %d since the checkpointed offset %d is invalid.",
                         log.topic_partition, log_start, checkpoint)
        first_dirty, force = log_start, True
    elif checkpoint > log.log_end_offset:
        _log.warning("The last checkpoint dirty offset for partition %s is %d, which is larger than the log end offset %d. "
                     "Resetting to the log start offset %d.", log.topic_partition, checkpoint, log.log_end_offset, log_start)
        first_dirty, force = log_start, True
    else:
        first_dirty = checkpoint
    # the LSO, not the HW: records of an open transaction may still be aborted, so they
    # must neither enter the offset map nor be compacted (Kafka's firstUncleanableDirtyOffset)
    candidates = [log.last_stable_offset, log.active_segment().base_offset]
    min_lag = max(log.config.min_compaction_lag_ms, 0)
    if min_lag > 0:
        for seg in log.segments.non_active_log_segments_from(first_dirty):
            if seg.largest_timestamp() > now - min_lag:
                candidates.append(seg.base_offset)
                break
    return OffsetsToClean(first_dirty, max(first_dirty, min(candidates)), force)


def calculate_cleanable_bytes(log: Log, first_dirty_offset: int, uncleanable_offset: int) -> tuple[int, int]:
    """(base offset of the first uncleanable segment, bytes of the segments before it from the
    one holding the first dirty offset on)."""
    non_active = log.segments.non_active_log_segments_from(uncleanable_offset)
    first_uncleanable = non_active[0] if non_active else log.active_segment()
    fuo = first_uncleanable.base_offset
    cleanable = sum(s.size() for s in log.segments.values(min(first_dirty_offset, fuo), fuo))
    return fuo, cleanable


def max_compaction_delay(log: Log, first_dirty_offset: int, now: int) -> int:
    """How long past max.compaction.lag.ms the oldest dirty segment is (0: not overdue)."""
    timestamps = [t for t in (s.get_first_batch_timestamp() for s in log.segments.non_active_log_segments_from(first_dirty_offset))
                  if t > 0]
    earliest = min(timestamps, default=_LONG_MAX)
    clean_until = now - max(log.config.max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


class LogToClean:
    """A log with its clean/dirty byte counts (Kafka's ``LogToClean``)."""

    __slots__ = ("cleanable_bytes", "clean_bytes", "first_dirty_offset", "first_uncleanable_offset",
                 "log", "need_compaction_now", "topic_partition", "total_bytes")

    def __init__(self, log: Log, first_dirty_offset: int, uncleanable_offset: int, need_compaction_now: bool) -> None:
        self.log = log
        self.topic_partition = log.topic_partition
        self.first_dirty_offset = first_dirty_offset
        self.need_compaction_now = need_compaction_now
        self.clean_bytes = sum(s.size() for s in log.segments.values(-1, first_dirty_offset))
        self.first_uncleanable_offset, self.cleanable_bytes = calculate_cleanable_bytes(log, first_dirty_offset, uncleanable_offset)
        self.total_bytes = self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    def __repr__(self) -> str:
        return (f"LogToClean({self.topic_partition}, firstDirtyOffset={self.first_dirty_offset}, "
                f"firstUncleanableOffset={self.first_uncleanable_offset}, cleanableRatio={self.cleanable_ratio:.3f})")


class LogCleanerManager:
    """Cleaning state of every log.  Thread-safe (one lock)."""

    def __init__(self, log_dirs: list[str], logs: Mapping[TopicPartition, Log],
                 snapshot: Callable[[], Iterable[tuple[TopicPartition, Log]]] | None = None) -> None:
        self._lock = threading.RLock()
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.logs = logs
        # how the logs are walked: a copy taken under their owner's lock (LogManager.snapshot),
        # never an iteration of the live mapping another thread may change meanwhile
        self._snapshot = snapshot or (lambda: list(logs.items()))
        self._files = {d: OffsetCheckpointFile(os.path.join(d, CLEANER_OFFSET_CHECKPOINT_FILE)) for d in self.log_dirs}
        self._checkpoints: dict[str, dict[TopicPartition, int]] = {}
        for d, f in self._files.items():
            try:
                self._checkpoints[d] = f.read()
            except OSError as e:
                _log.warning("Error reading %s, treating it as empty: %s", f.path, e)
                self._checkpoints[d] = {}
        self.in_progress: set[TopicPartition] = set()
        self.paused: dict[TopicPartition, int] = {}
        self.uncleanable: dict[str, set[TopicPartition]] = {}
        self.dirtiest_log_cleanable_ratio = 0.0

    # ------------------------------------------------------------------ checkpoints
    @_locked
    def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for cp in self._checkpoints.values():
            out.update(cp)
        return out

    @_locked
    def update_checkpoints(self, data_dir: str, update: tuple[TopicPartition, int] | None = None,
                           remove: TopicPartition | None = None) -> None:
        """Set and/or drop one entry of ``data_dir``'s checkpoint and rewrite the file with the
        entries of logs that still exist (Kafka's ``updateCheckpoints``)."""
        data_dir = os.path.abspath(data_dir)
        cp = self._checkpoints.get(data_dir)
        if cp is None:
            return
        live = dict(self._snapshot())
        cp = {tp: o for tp, o in cp.items() if tp in live}
        if remove is not None:
            cp.pop(remove, None)
        if update is not None:
            cp[update[0]] = update[1]
        self._checkpoints[data_dir] = cp
        try:
            # no fsync: a checkpoint lost in a crash only makes the next cleaning redo work,
            # and it is written after the swap it records is durable
            self._files[data_dir].write(cp, sync=False)
        except OSError:
            _log.exception("Failed to write the cleaner offset checkpoint of %s", data_dir)

    @_locked
    def maybe_truncate_checkpoint(self, data_dir: str, tp: TopicPartition, offset: int) -> None:
        """After a truncation to ``offset``: the log is no longer known clean beyond it."""
        cp = self._checkpoints.get(os.path.abspath(data_dir), {})
        if cp.get(tp, 0) > offset:
            self.update_checkpoints(data_dir, (tp, offset))

    # ------------------------------------------------------------------ choosing
    def _skipped(self, tp: TopicPartition, log: Log) -> bool:
        return (tp in self.in_progress or tp in self.paused or log.local_log.closed
                or tp in self.uncleanable.get(os.path.dirname(log.dir), ()))

    @_locked
    def log_to_clean(self, tp: TopicPartition, log: Log, now: int) -> LogToClean:
        with log.lock:  # segments stay put (no rename under os.stat) while they are measured
            offsets = cleanable_offsets(log, self.all_cleaner_checkpoints().get(tp), now)
            delay = max_compaction_delay(log, offsets.first_dirty_offset, now)
            ltc = LogToClean(log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset, delay > 0)
        if offsets.force_update_checkpoint:
            self.update_checkpoints(os.path.dirname(log.dir), (tp, offsets.first_dirty_offset))
        return ltc

    @_locked
    def grab_filthiest_compacted_log(self, now: int) -> LogToClean | None:
        """The compacted log most in need of cleaning (see the module docstring), now marked
        in progress; None if no log qualifies."""
        dirty = []
        for tp, log in self._snapshot():
            if not log.config.compact or self._skipped(tp, log):
                continue
            ltc = self.log_to_clean(tp, log, now)
            if ltc.total_bytes > 0:
                dirty.append(ltc)
        self.dirtiest_log_cleanable_ratio = max((d.cleanable_ratio for d in dirty), default=0.0)
        cleanable = [d for d in dirty
                     if (d.need_compaction_now and d.cleanable_bytes > 0)
                     or d.cleanable_ratio > d.log.config.min_cleanable_dirty_ratio]
        if not cleanable:
            return None
        filthiest = max(cleanable, key=lambda d: d.cleanable_ratio)
        self.in_progress.add(filthiest.topic_partition)
        return filthiest

    @_locked
    def grab(self, log: Log, now: int) -> LogToClean | None:
        """``log`` to clean now whatever its ratio (tests, tools); None if it is in progress,
        paused or uncleanable."""
        tp = log.topic_partition
        if self._skipped(tp, log):
            return None
        ltc = self.log_to_clean(tp, log, now)
        self.in_progress.add(tp)
        return ltc

    # ------------------------------------------------------------------ outcomes
    @_locked
    def done_cleaning(self, tp: TopicPartition, data_dir: str, end_offset: int) -> None:
        """The log is clean below ``end_offset``: checkpoint it, no longer in progress."""
        self.in_progress.discard(tp)
        self.update_checkpoints(data_dir, (tp, end_offset))

    @_locked
    def abort(self, tp: TopicPartition) -> None:
        """The cleaning of ``tp`` ended without effect: no longer in progress."""
        self.in_progress.discard(tp)

    @_locked
    def pause(self, tp: TopicPartition) -> None:
        self.paused[tp] = self.paused.get(tp, 0) + 1

    @_locked
    def resume(self, tp: TopicPartition) -> None:
        count = self.paused.get(tp, 0)
        if count <= 0:
            raise ValueError(f"Compaction for partition {tp} cannot be resumed since it is not paused.")
        if count == 1:
            del self.paused[tp]
        else:
            self.paused[tp] = count - 1

    @_locked
    def mark_partition_uncleanable(self, data_dir: str, tp: TopicPartition) -> None:
        self.uncleanable.setdefault(os.path.abspath(data_dir), set()).add(tp)

    @_locked
    def maintain_uncleanable_partitions(self) -> None:
        live = dict(self._snapshot())
        for d in list(self.uncleanable):
            self.uncleanable[d] = {tp for tp in self.uncleanable[d] if tp in live}
            if not self.uncleanable[d]:
                del self.uncleanable[d]
