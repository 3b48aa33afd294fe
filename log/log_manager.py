"""LogManager: every partition log of a broker, across its ``log.dirs`` (Kafka's ``LogManager``).

Directory layout of each log dir::

    <log.dir>/meta.properties                     node.id, cluster.id, version (see checkpoint.py)
    <log.dir>/.lock                               flock'ed while the broker runs
    <log.dir>/.kafka_cleanshutdown                present only after a clean shutdown
    <log.dir>/recovery-point-offset-checkpoint    "topic partition offset" per log
    <log.dir>/log-start-offset-checkpoint         idem
    <log.dir>/replication-offset-checkpoint       idem, the HWs (cluster mode: ``replicated``)
    <log.dir>/cleaner-offset-checkpoint           first dirty offset of each compacted log
    <log.dir>/<topic>-<partition>/...             one Log each
    <log.dir>/<topic>-<partition>.<uuid>-delete/  a deleted partition waiting for removal

Startup (``startup``/``load_logs``): lock each dir, note whether the clean-shutdown marker is
there (then logs open without recovery) and delete it, read both checkpoints, refuse
(``LogDirError``) if a partition the recovery-point checkpoint lists has no directory, open
every partition directory.  Periodic work is queued on the injected ``Scheduler`` with Kafka's task
names and intervals: ``kafka-log-retention`` (log.retention.check.interval.ms, 5 min),
``kafka-log-flusher`` (log.flush.scheduler.interval.ms), ``kafka-recovery-point-checkpoint``
(log.flush.offset.checkpoint.interval.ms, 60 s), ``kafka-log-start-offset-checkpoint`` (60 s),
``kafka-delete-logs``, and in cluster mode ``highwatermark-checkpoint``
(replica.high.watermark.checkpoint.interval.ms, 5 s).  Shutdown flushes and closes every log, writes both checkpoints and then
the clean-shutdown marker (``shutdown``; the broker runs its three steps ``begin_shutdown``,
``close_logs`` per batch and ``finish_shutdown`` off its event loop: kbroker/app/log_shutdown.py).

Compaction: with ``log.cleaner.enable`` (``CleanerConfig.enable_cleaner``), ``self.cleaner`` is
a ``LogCleaner`` over ``self.logs`` and the log dirs (created by ``load_logs``); the broker
drives it (log_cleaner.py).  Every log whose cleanup.policy contains ``compact`` is a
candidate, ``__consumer_offsets`` included.  Retention runs on every log as before:
cleanup.policy=compact,delete gets both, and a compact-only log still loses the segments below
its log start offset (Kafka's cleaner thread does that deletion for compacted logs).
Deleting a partition cancels its cleaning and drops it from the cleaner checkpoint.

Threads: logs are created (``get_or_create_log``) by the broker's creations on an executor
thread (kbroker/replica/topic_creation.py; one creator per partition, so its check-then-add needs no
more than the map's lock) or at start-up, and removed from the map on the event loop
(``remove_log``); the background thread runs the periodic tasks and the slow part of a
deletion (``finish_delete``: cleaner abort, close, rename, checkpoints).  ``self.logs`` is
changed only under ``_logs_lock`` and walked only through ``snapshot()`` (a copy), never
iterated live.  Each checkpoint is computed and written under its file's lock
(``checkpoint_lock``), so an older snapshot never overwrites a newer one.  Each ``Log`` has its
own lock for appends/reads.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
from collections.abc import Callable

from log.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    CleanShutdownFile,
    MetaProperties,
    OffsetCheckpointFile,
    checkpoint_lock,
)
from log.clock import Clock
from log.config import CleanerConfig, LogConfig, ProducerStateManagerConfig
from log.durable_batch import syncfs_pays
from log.durable_files import syncfs_file_systems
from log.errors import KafkaStorageError
from log.files import (
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    STRAY_DIR_SUFFIX,
    log_delete_dir_name,
    log_dir_name,
    parse_topic_partition_name,
)
from log.log import Log
from log.log_cleaner import LogCleaner
from log.log_dir_checks import LogDirError, missing_partition_dirs, missing_partition_message
from log.progress import Progress
from log.scheduler import Scheduler

__all__ = ["LogManager"]

_log = logging.getLogger(__name__)


def _partition_log_bytes(d: str) -> dict[str, int]:
    """Partition directory name -> bytes of its .log segments, for the load's progress lines."""
    out: dict[str, int] = {}
    for entry in os.scandir(d):
        if not entry.is_dir() or entry.name.endswith((DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)):
            continue
        try:
            parse_topic_partition_name(entry.name)
        except ValueError:
            continue
        out[entry.name] = sum(f.stat().st_size for f in os.scandir(entry.path) if f.name.endswith(".log"))
    return out
TopicPartition = tuple[str, int]
LOCK_FILE_NAME = ".lock"


class LogManager:
    def __init__(self, log_dirs: list[str], default_config: LogConfig, clock: Clock, scheduler: Scheduler,
                 topic_configs: Callable[[str], LogConfig | None] | None = None,
                 retention_check_ms: int = 300000, flush_check_ms: int = (1 << 63) - 1,
                 flush_recovery_offset_checkpoint_ms: int = 60000, flush_start_offset_checkpoint_ms: int = 60000,
                 file_delete_delay_ms: int = 60000,
                 producer_state_config: ProducerStateManagerConfig | None = None,
                 producer_id_expiration_check_ms: int = 600000,
                 cleaner_config: CleanerConfig | None = None,
                 replicated: bool = False, high_watermark_checkpoint_ms: int = 5000) -> None:
        if not log_dirs:
            raise ValueError("log.dirs is empty")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.default_config = default_config
        self.clock = clock
        self.scheduler = scheduler
        self.topic_configs = topic_configs or (lambda topic: None)
        self.retention_check_ms = retention_check_ms
        self.retention_passes = 0  # completed cleanup_logs passes (one thread runs them)
        self.flush_check_ms = flush_check_ms
        self.flush_recovery_offset_checkpoint_ms = flush_recovery_offset_checkpoint_ms
        self.flush_start_offset_checkpoint_ms = flush_start_offset_checkpoint_ms
        self.file_delete_delay_ms = file_delete_delay_ms
        self.producer_state_config = producer_state_config
        self.producer_id_expiration_check_ms = producer_id_expiration_check_ms
        self.logs: dict[TopicPartition, Log] = {}
        self._logs_lock = threading.Condition()  # guards changes to self.logs and _deleting
        self._deleting: set[TopicPartition] = set()  # removed, dir not yet renamed -delete
        self._lock_fds: dict[str, int] = {}
        self._tasks: list = []
        self.had_clean_shutdown: dict[str, bool] = {}
        self.cleaner_config = cleaner_config or CleanerConfig()
        self.cleaner: LogCleaner | None = None
        # Cluster mode: logs do not move their HW with the LEO (replication moves it), and
        # each log dir's replication-offset-checkpoint keeps the HWs across restarts.
        self.replicated = replicated
        self.high_watermark_checkpoint_ms = high_watermark_checkpoint_ms

    # ------------------------------------------------------------------ startup
    def startup(self) -> None:
        """Lock dirs, load logs, schedule the periodic tasks."""
        self.load_logs()
        s = self.scheduler
        self._tasks = [
            s.schedule("kafka-log-retention", self.cleanup_logs, self.retention_check_ms, self.retention_check_ms),
            s.schedule("kafka-recovery-point-checkpoint", self.checkpoint_log_recovery_offsets,
                       self.flush_recovery_offset_checkpoint_ms, self.flush_recovery_offset_checkpoint_ms),
            s.schedule("kafka-log-start-offset-checkpoint", self.checkpoint_log_start_offsets,
                       self.flush_start_offset_checkpoint_ms, self.flush_start_offset_checkpoint_ms),
            s.schedule("PeriodicProducerExpirationCheck", self.remove_expired_producers,
                       self.producer_id_expiration_check_ms, self.producer_id_expiration_check_ms),
        ]
        if self.replicated:
            self._tasks.append(s.schedule("highwatermark-checkpoint", self.checkpoint_high_watermarks,
                                          self.high_watermark_checkpoint_ms, self.high_watermark_checkpoint_ms))
        if self.flush_check_ms < (1 << 62):
            self._tasks.append(s.schedule("kafka-log-flusher", self.flush_dirty_logs, self.flush_check_ms, self.flush_check_ms))

    def _lock_dir(self, d: str) -> None:
        fd = os.open(os.path.join(d, LOCK_FILE_NAME), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise LogDirError(f"Failed to acquire lock on file .lock in {d}. A Kafka instance in another process or thread is using this directory.") from None
        self._lock_fds[d] = fd

    def load_logs(self) -> None:
        for d in self.log_dirs:
            os.makedirs(d, exist_ok=True)
            if d not in self._lock_fds:
                self._lock_dir(d)
            marker = CleanShutdownFile(d)
            clean = marker.exists()
            self.had_clean_shutdown[d] = clean
            recovery_points = self._read_checkpoint(d, RECOVERY_POINT_CHECKPOINT_FILE)
            start_offsets = self._read_checkpoint(d, LOG_START_OFFSET_CHECKPOINT_FILE)
            high_watermarks = self._read_checkpoint(d, REPLICATION_OFFSET_CHECKPOINT_FILE) if self.replicated else {}
            # a partition the checkpoint knows whose directory is gone: refuse, do not
            # recreate it empty (log_dir_checks.py)
            missing = missing_partition_dirs(d, set(recovery_points))
            if missing:
                raise LogDirError(missing_partition_message(d, missing, RECOVERY_POINT_CHECKPOINT_FILE))
            sizes = _partition_log_bytes(d)
            progress = Progress(f"Loading logs in {d}" + ("" if clean else " (recovery after an unclean shutdown)"),
                                len(sizes), sum(sizes.values()), self.clock, _log)
            for name in sorted(os.listdir(d)):
                path = os.path.join(d, name)
                if not os.path.isdir(path):
                    continue
                if name.endswith(DELETE_DIR_SUFFIX):
                    self._schedule_dir_removal(path)
                    continue
                if name.endswith((FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)):
                    continue
                try:
                    tp = parse_topic_partition_name(name)
                except ValueError:
                    continue
                if tp in self.logs:
                    raise RuntimeError(f"Duplicate log directories for {tp} are found in both {self.logs[tp].dir} and {path}.")
                opened = Log.open(path, self.config_for(tp[0]), self.clock, self.scheduler,
                                  log_start_offset=start_offsets.get(tp, 0),
                                  recovery_point=recovery_points.get(tp, 0),
                                  had_clean_shutdown=clean,
                                  producer_state_config=self.producer_state_config,
                                  high_watermark_follows_log_end=not self.replicated)
                if self.replicated:
                    # Kafka's ReplicaManager reads the checkpoint into each log's HW (clamped)
                    opened.update_high_watermark(high_watermarks.get(tp, 0))
                with self._logs_lock:
                    self.logs[tp] = opened
                progress.advance(1, sizes.get(name, 0))
            if sizes:
                progress.done()
            # Kafka deletes the marker once the logs are loaded: a crash from now on is unclean
            marker.delete()
        if self.cleaner is None and self.cleaner_config.enable_cleaner:
            self.cleaner = LogCleaner(self.cleaner_config, self.log_dirs, self.logs, self.clock, snapshot=self.snapshot)

    @staticmethod
    def _read_checkpoint(d: str, name: str) -> dict[TopicPartition, int]:
        path = os.path.join(d, name)
        if not os.path.exists(path):
            return {}
        try:
            return OffsetCheckpointFile(path).read()
        except OSError as e:
            _log.warning("Error reading %s, treating it as empty: %s", path, e)
            return {}

    def config_for(self, topic: str) -> LogConfig:
        return self.topic_configs(topic) or self.default_config

    # ------------------------------------------------------------------ meta.properties
    def ensure_meta_properties(self, node_id: int, cluster_id: str) -> None:
        """Write meta.properties where missing; refuse a dir that belongs to another
        node or cluster (Kafka fails startup the same way).  The broker runs
        ``log_dir_checks.check_log_dirs`` first, which refuses a non-empty dir without one."""
        for d in self.log_dirs:
            os.makedirs(d, exist_ok=True)
            found = MetaProperties.read(d)
            if found is None:
                MetaProperties(node_id, cluster_id).write(d)
            elif found.node_id != node_id or found.cluster_id != cluster_id:
                raise LogDirError(f"{d}/meta.properties has node.id={found.node_id} cluster.id={found.cluster_id}, "
                                  f"expected {node_id} / {cluster_id}")

    # ------------------------------------------------------------------ logs
    def get_log(self, tp: TopicPartition) -> Log | None:
        return self.logs.get(tp)

    def all_logs(self) -> list[Log]:
        return [log for _, log in self.snapshot()]

    def snapshot(self) -> list[tuple[TopicPartition, Log]]:
        """A copy of the logs now: what any walk over the logs iterates (another thread
        may add or remove logs meanwhile)."""
        with self._logs_lock:
            return list(self.logs.items())

    def deleting(self) -> list[TopicPartition]:
        """The partitions removed by ``remove_log`` whose ``finish_delete`` has not ended."""
        with self._logs_lock:
            return list(self._deleting)

    def is_being_deleted(self, tp: TopicPartition) -> bool:
        """Removed by ``remove_log`` and its directory not yet renamed by ``finish_delete``."""
        with self._logs_lock:
            return tp in self._deleting

    def get_or_create_log(self, tp: TopicPartition, config: LogConfig | None = None) -> Log:
        log = self.logs.get(tp)
        if log is not None:
            return log
        if self.is_being_deleted(tp):
            # its old directory still has the name a new log would take
            raise RuntimeError(f"Cannot create the log of {tp[0]}-{tp[1]}: its previous log is still being deleted")
        d = self._next_log_dir()
        path = os.path.join(d, log_dir_name(*tp))
        existed = os.path.isdir(path)
        try:
            log = Log.open(path, config or self.config_for(tp[0]), self.clock,
                           self.scheduler, producer_state_config=self.producer_state_config,
                           high_watermark_follows_log_end=not self.replicated)
        except OSError as e:
            # Kafka's getOrCreateLog: an IOException is a KafkaStorageException with this
            # message (CreateTopics answers KAFKA_STORAGE_ERROR).  A directory made here and
            # left half-filled goes, so the next start does not load it as a partition.
            if not existed:
                shutil.rmtree(path, ignore_errors=True)
            raise KafkaStorageError(f"Error while creating log for {tp[0]}-{tp[1]} in dir {d}") from e
        with self._logs_lock:
            self.logs[tp] = log
        return log

    def _next_log_dir(self) -> str:
        """The log dir holding the fewest partitions (Kafka's ``nextLogDirs``)."""
        if len(self.log_dirs) == 1:
            return self.log_dirs[0]
        counts = {d: 0 for d in self.log_dirs}
        for _, log in self.snapshot():
            parent = os.path.dirname(log.dir)
            if parent in counts:
                counts[parent] += 1
        return min(self.log_dirs, key=lambda d: (counts[d], self.log_dirs.index(d)))

    def async_delete(self, tp: TopicPartition) -> Log | None:
        """Remove a partition: close it, rename its dir ``...-delete``, remove it later.
        Both steps of ``remove_log`` + ``finish_delete`` on the caller's thread."""
        log = self.remove_log(tp)
        if log is not None:
            self.finish_delete(tp, log)
        return log

    def remove_log(self, tp: TopicPartition) -> Log | None:
        """The quick step of a deletion, for the event loop: take the log out of the map (no
        new append, read or periodic task finds it).  Until ``finish_delete`` has renamed its
        directory, ``get_or_create_log(tp)`` refuses (the old dir holds the name)."""
        with self._logs_lock:
            log = self.logs.pop(tp, None)
            if log is not None:
                self._deleting.add(tp)
        return log

    def finish_delete(self, tp: TopicPartition, log: Log) -> None:
        """The slow step of a deletion, off the event loop (fsyncs, renames, checkpoints):
        cancel its cleaning, close it, rename its dir ``...-delete`` (removed after
        ``file.delete.delay.ms``) and rewrite the checkpoints of its log dir without it."""
        try:
            self._finish_delete(tp, log)
        finally:
            with self._logs_lock:
                self._deleting.discard(tp)
                self._logs_lock.notify_all()

    def _finish_delete(self, tp: TopicPartition, log: Log) -> None:
        if self.cleaner is not None:
            self.cleaner.abort_cleaning(tp)
            self.cleaner.update_checkpoints(os.path.dirname(log.dir), remove=tp)
        log.close()
        new_dir = os.path.join(os.path.dirname(log.dir), log_delete_dir_name(*tp))
        os.rename(log.dir, new_dir)
        self._schedule_dir_removal(new_dir)
        self.checkpoint_log_recovery_offsets()
        self.checkpoint_log_start_offsets()

    def _schedule_dir_removal(self, path: str) -> None:
        self.scheduler.schedule_once("kafka-delete-logs", lambda: shutil.rmtree(path, ignore_errors=True), self.file_delete_delay_ms)

    # ------------------------------------------------------------------ periodic tasks
    def cleanup_logs(self) -> int:
        """Retention pass over every log (``kafka-log-retention``); returns segments deleted.

        Ends with Kafka's DEBUG line "Log cleanup completed. N files deleted in S seconds",
        here with the pass number and the clock's epoch ms when the pass began: a pass that
        began after a config change has seen it (the compat tests wait on this line)."""
        started_ms = self.clock.milliseconds()
        total = 0
        for _, log in self.snapshot():
            try:
                total += log.delete_old_segments()
            except Exception:  # noqa: BLE001 - one bad log must not stop retention for others
                _log.exception("Error deleting old segments of %s", log)
        self.retention_passes += 1
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("Log cleanup completed. %d files deleted in %.3f seconds (retention pass %d, began at %d ms)",
                       total, (self.clock.milliseconds() - started_ms) / 1000, self.retention_passes, started_ms)
        return total

    def flush_dirty_logs(self) -> None:
        now = self.clock.milliseconds()
        for _, log in self.snapshot():
            if now - log.last_flush_time >= log.config.flush_ms:
                log.flush()

    def remove_expired_producers(self) -> None:
        now = self.clock.milliseconds()
        for _, log in self.snapshot():
            log.remove_expired_producers(now)

    def _logs_in_dir(self, d: str) -> dict[TopicPartition, Log]:
        return {tp: log for tp, log in self.snapshot() if os.path.dirname(log.dir) == d}

    def checkpoint_log_recovery_offsets(self) -> None:
        for d in self.log_dirs:
            path = os.path.join(d, RECOVERY_POINT_CHECKPOINT_FILE)
            with checkpoint_lock(path):  # snapshot and write together: never a stale overwrite
                OffsetCheckpointFile(path).write({tp: log.recovery_point for tp, log in self._logs_in_dir(d).items()})

    def checkpoint_high_watermarks(self) -> None:
        """``replication-offset-checkpoint`` of every log dir (replicated logs only)."""
        if not self.replicated:
            return
        for d in self.log_dirs:
            path = os.path.join(d, REPLICATION_OFFSET_CHECKPOINT_FILE)
            with checkpoint_lock(path):
                OffsetCheckpointFile(path).write({tp: log.high_watermark for tp, log in self._logs_in_dir(d).items()})

    def checkpoint_log_start_offsets(self) -> None:
        for d in self.log_dirs:
            path = os.path.join(d, LOG_START_OFFSET_CHECKPOINT_FILE)
            with checkpoint_lock(path):
                OffsetCheckpointFile(path).write(
                    {tp: log.log_start_offset for tp, log in self._logs_in_dir(d).items()
                     if log.log_start_offset > log.segments.first_segment_base_offset()})

    # ------------------------------------------------------------------ shutdown
    def shutdown(self, broker_epoch: int = -1, deletions_timeout_s: float = 60.0) -> None:
        """The whole shutdown on the calling thread (Kafka's LogManager.shutdown): the broker
        runs the same three steps itself, off its event loop and a batch of logs at a time
        (kbroker/app/log_shutdown.py)."""
        self.begin_shutdown(deletions_timeout_s)
        logs = self.all_logs()
        sync = self.close_syncs_each_file(len(logs))
        self.close_logs(logs, sync=sync)
        self.finish_shutdown(broker_epoch, syncfs_first=not sync)

    def begin_shutdown(self, deletions_timeout_s: float = 60.0) -> None:
        """Shutdown step 1: no periodic task runs any more, the deletions under way end, the
        cleaner stops."""
        for task in self._tasks:
            task.cancel()
        with self._logs_lock:  # a deletion finishing on another thread: let it end first
            self._logs_lock.wait_for(lambda: not self._deleting, deletions_timeout_s)
        if self.cleaner is not None:
            self.cleaner.shutdown()

    @staticmethod
    def flush_logs(logs: list[Log]) -> None:
        """fsync ``logs`` whole (active segment included) and move their recovery points:
        the broker does this while it still answers, so that ``close_logs`` after the
        listeners close has little left to sync.  Thread-safe (Log.flush)."""
        for log in logs:
            log.flush(force_flush_active_segment=True)

    @staticmethod
    def close_syncs_each_file(logs: int) -> bool:
        """Does a shutdown closing ``logs`` logs fsync each one's state files (producer
        snapshot, leader epoch file: four fsyncs a log with their directory), or write them
        unsynced and sync each file system once before the marker (``syncfs_first``)?
        10,000 logs: 40,000 journal commits, ~10 s on this project's machine, against one
        syncfs (bench/results/shutdown.md)."""
        return not syncfs_pays(2 * logs)

    @staticmethod
    def close_logs(logs: list[Log], flushed: bool = False, sync: bool = True) -> None:
        """Shutdown step 2, for any subset of the logs (the broker closes batches on a few
        threads, as Kafka's ``log-closing`` pool of num.recovery.threads.per.data.dir does):
        flush each whole, then close it (producer snapshot at the LEO, leader epoch file,
        index trim).  Nothing may append to them any more.  ``flushed``: ``flush_logs`` ran
        on them already, so only what was appended since is synced (a forced flush fsyncs
        the active segment, and an empty log's directory, even when nothing changed).
        ``sync=False``: the state files the closes write are not fsynced (``Log.close``);
        ``finish_shutdown(syncfs_first=True)`` must follow."""
        for log in logs:
            if flushed:
                log.flush_upto_offset_exclusive(log.log_end_offset)
            else:
                log.flush(force_flush_active_segment=True)
            log.close(sync)

    def finish_shutdown(self, broker_epoch: int = -1, syncfs_first: bool = False) -> None:
        """Shutdown step 3, once every log is closed (``close_logs``): the checkpoints, then
        the clean-shutdown marker, which vouches for all of it; then the dir locks go.  Not
        reached (an exception) when a close failed: the next start recovers.
        ``syncfs_first``: the closes wrote unsynced (``close_logs(sync=False)``), so first
        one syncfs per file system of the log dirs; if one fails (an I/O error the kernel
        reports against the file system), nothing vouches for those files: no checkpoints,
        no marker, and the next start recovers from the previous checkpoints."""
        if syncfs_first:
            try:
                syncfs_file_systems(self.log_dirs)
            except OSError:
                _log.exception("syncfs of the log dirs failed after closing the logs: no clean-shutdown marker")
                raise
        self.checkpoint_log_recovery_offsets()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()
        for d in self.log_dirs:
            CleanShutdownFile(d).write(broker_epoch)
        self.release_locks()

    def crash(self) -> None:
        """Drop everything without flushing or checkpoints (tests: a kill -9)."""
        for _, log in self.snapshot():
            log.close_handlers()
        with self._logs_lock:
            self.logs.clear()
        self.release_locks()

    def release_locks(self) -> None:
        for fd in self._lock_fds.values():
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        self._lock_fds.clear()
