"""LogCleaner: compaction as jobs the broker drives (Kafka's ``LogCleaner``, without its threads).

Kafka runs ``log.cleaner.threads`` threads that each pick the filthiest compacted log, clean it
and swap the result in under the log's lock.  log/ starts no threads, so a cleaning is three
calls the broker makes, from threads of its choosing:

1. ``job = cleaner.grab_filthiest()`` - **short**.  Chooses a log (cleaner_manager.py), marks
   it in progress, takes an idle ``Cleaner`` (one per ``log.cleaner.threads``; None if all
   are busy or no log qualifies) and, under the log's lock, snapshots what the cleaning
   needs: the non-active segments below the first uncleanable offset, each with a ``dup`` of
   its file descriptor, its size, mtime and index sizes; the config; the time; the
   producers' last batches (cleaner.py's ``CleaningPlan``).  No data is read; the job holds
   one extra file descriptor per segment until it ends.
2. ``job.prepare(run=None)`` - **long** (the whole cleaning's I/O and CPU).  Builds the
   offset map and writes the ``.cleaned`` segments from the snapshot only, holding no lock
   and never touching the ``Log``, so appends, reads, rolls, retention and deletion go on
   meanwhile.  In the calling thread, or, given a ``run`` (a ``PrepareRunner``), wherever
   that has it done: the broker's runs it in a worker process (kbroker/app/cleaner_processes.py)
   from ``plan.portable()`` and the snapshot's descriptors, and gets back a
   ``CleaningSummary``; the written segments are then reopened here by name, and if the
   runner failed (e.g. its process was killed) every ``.cleaned`` file the plan could have
   left is removed.  ``job.cancel()`` (any thread) makes it stop at the next chunk (a runner
   forwards ``job.cancelled``).  Never raises: a failure is kept in ``job.error`` and
   reported by ``commit``.
3. ``result = job.commit()`` - **short**, after ``prepare`` returned.  Under the log's
   ``replace_lock`` (so retention, truncation and close wait for it) and, for the checks
   and the in-memory swap only, its lock (appends wait for those, never for an fsync), checks that the log did not change
   under the cleaning: not closed or deleted, still compacted, not truncated since the grab
   (``Log.truncations``), and, per group, every source segment still the same object with
   the same size in the log.  A group whose sources are gone (retention deleted them
   meanwhile, always a prefix of the log) is dropped; the rest are swapped in with
   ``Log.replace_segments`` (``.cleaned`` -> ``.swap`` -> old ones ``.deleted``, deleted after
   file.delete.delay.ms so reads holding them finish -> final names) and the cleaner offset
   checkpoint advances.  Otherwise (closed, truncated, policy changed, prepare failed or was
   cancelled) the ``.cleaned`` files are removed and nothing changes.  Costs a few renames,
   two directory fsyncs (both outside the log's lock: before the swap, the ``.swap`` files;
   after it, the final names) and the checkpoint's atomic rewrite (not fsynced: the swap is
   durable first, and a lost checkpoint only means cleaning again).

Threads: each step may run on any thread (one step of a job at a time, in order): the log's
mutations take ``Log.lock`` (a swap also ``Log.replace_lock``, taken first), segment lookups are lock-free (``LogSegments`` is copy-on-write),
the cleaner's bookkeeping has its own lock (lock order: cleaner manager, then a log).  In
CPython a ``prepare`` run in a thread competes for the GIL with request handling, which is
why the broker runs it in a worker process (bench/micro/cleaner.py measures both).

Aborting is always safe, and so is a crash at any point (loader.py completes or undoes the
swap), of the broker or of a worker process (it only ever writes ``.cleaned`` files).  A log
whose cleaning failed with an unexpected error (e.g. a corrupt batch) is marked uncleanable
and skipped from then on, as Kafka does; a ``LogCleaningAbortedError`` (a cancel, a worker
that died) only aborts.  ``clean_once()`` runs the three steps
in the calling thread (tests, tools).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from log.cleaner import (
    Cleaner,
    CleanerOutput,
    CleanerStats,
    CleaningPlan,
    CleaningSummary,
    LastRecord,
    LogCleaningAbortedError,
    SourceSegment,
    remove_cleaned_files,
    reopen_output,
)
from log.cleaner_manager import LogCleanerManager, LogToClean
from log.clock import Clock
from log.config import CleanerConfig
from log.log import Log
from log.offset_map import SkimpyOffsetMap
from log.segment import LogSegment
from log.throttler import Throttler

__all__ = ["CleanResult", "CleaningJob", "JobState", "LogCleaner", "PrepareRunner"]

_log = logging.getLogger(__name__)
TopicPartition = tuple[str, int]
# who runs a job's prepare elsewhere: (plan, cancelled) -> what was written (see CleaningJob.prepare)
PrepareRunner = Callable[[CleaningPlan, threading.Event], CleaningSummary]


class JobState(Enum):
    GRABBED = "grabbed"
    PREPARING = "preparing"
    PREPARED = "prepared"
    FAILED = "failed"  # prepare raised, or was cancelled
    COMMITTED = "committed"
    ABORTED = "aborted"


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What a cleaning did.  ``committed``: segments were swapped in and the checkpoint moved
    to ``end_offset``; else ``reason`` says why nothing changed."""

    topic_partition: TopicPartition
    first_dirty_offset: int
    end_offset: int
    committed: bool
    reason: str = ""
    segments_replaced: int = 0  # old segments swapped out
    groups_dropped: int = 0  # groups whose source segments were deleted during the cleaning
    stats: CleanerStats | None = None


def _index_size(path: str) -> int:
    """Bytes of an index file (an inactive segment's index is trimmed to its entries)."""
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


class CleaningJob:
    """One cleaning of one log; see the module docstring for who calls what, on which thread."""

    def __init__(self, owner: LogCleaner, cleaner: Cleaner, log: Log, to_clean: LogToClean, now: int) -> None:
        self._owner = owner
        self._cleaner = cleaner
        self.log = log
        self.to_clean = to_clean
        self.topic_partition = log.topic_partition
        self.state = JobState.GRABBED
        self.error: BaseException | None = None
        self.output: CleanerOutput | None = None
        self._cancelled = threading.Event()
        fuo = to_clean.first_uncleanable_offset
        sources = []
        # under the log's lock: no segment is renamed, deleted or truncated while it is measured
        with log.lock:
            self._truncations = log.truncations
            self._segments = [s for s in log.log_segments() if s.base_offset < fuo]
            try:
                for seg in self._segments:
                    sources.append(SourceSegment(seg.base_offset, os.dup(seg.log.fd), seg.size(), seg.last_modified(),
                                                 _index_size(seg.offset_index_path), _index_size(seg.time_index_path)))
            except BaseException:
                for s in sources:
                    os.close(s.fd)
                raise
            producers = log.last_records_of_active_producers()
            first = self._segments[0].base_offset if self._segments else fuo
            aborted = tuple(log.collect_aborted_transactions(first, fuo)) if fuo > first else ()
            config = log.config
        self._sources_open = True
        self.plan = CleaningPlan(
            dir=log.dir, topic_partition=log.topic_partition, config=config, clock=log.clock, now_ms=now,
            first_dirty_offset=to_clean.first_dirty_offset, first_uncleanable_offset=fuo, sources=tuple(sources),
            last_records_of_producers={pid: LastRecord(off, epoch) for pid, (off, epoch) in producers.items()},
            aborted_transactions=aborted)

    # ------------------------------------------------------------------ any thread
    def cancel(self) -> None:
        """Ask a running ``prepare`` to stop; the commit will then abort."""
        self._cancelled.set()

    def _check_done(self) -> None:
        if self._cancelled.is_set():
            raise LogCleaningAbortedError(f"cleaning of {self.topic_partition} cancelled")

    @property
    def cancelled(self) -> threading.Event:
        """Set by ``cancel()``: what a ``prepare`` runner forwards to its worker process."""
        return self._cancelled

    def prepare(self, run: PrepareRunner | None = None) -> None:
        """Write the ``.cleaned`` segments (thread-safe: reads only the snapshot).  Never raises.

        ``run``: who does the work.  None: this thread, with this job's ``Cleaner``.  Else
        ``run(plan, cancelled)`` must have it done (a worker process: ``plan.portable()`` is
        picklable, the worker needs its own descriptors of ``plan.sources``' fds) and return
        the ``CleaningSummary``, or raise, once nothing writes the ``.cleaned`` files any
        more; ``cancelled`` is this job's cancellation.  Then the written segments are
        reopened here by name; on failure every ``.cleaned`` file the plan could have left is
        removed (a killed worker does not say which it wrote)."""
        if self.state is not JobState.GRABBED:
            raise RuntimeError(f"prepare() on a {self.state.value} cleaning job")
        self.state = JobState.PREPARING
        try:
            if run is None:
                self.output = self._cleaner.clean(self.plan, self._check_done)
            else:
                try:
                    summary = run(self.plan, self._cancelled)
                except BaseException:
                    remove_cleaned_files(self.plan.dir, (s.base_offset for s in self.plan.sources))
                    raise
                self.output = reopen_output(self.plan, summary)
            self.state = JobState.PREPARED
        except BaseException as e:  # noqa: BLE001 - reported by commit(), on the owner's thread
            self.error = e
            self.state = JobState.FAILED
        finally:
            self._close_sources()

    def _close_sources(self) -> None:
        if self._sources_open:
            self._sources_open = False
            for s in self.plan.sources:
                os.close(s.fd)

    # ------------------------------------------------------------------ after prepare
    def commit(self) -> CleanResult:
        """Swap the cleaned segments in, or abort; see the module docstring."""
        if self.state in (JobState.COMMITTED, JobState.ABORTED):
            raise RuntimeError(f"commit() on a {self.state.value} cleaning job")
        if self.state is JobState.PREPARING:
            raise RuntimeError("commit() while prepare() is running")
        try:
            return self._commit()
        finally:
            self._close_sources()
            self._owner._release(self)

    def abort(self, reason: str = "aborted") -> CleanResult:
        """Give the job up: nothing is swapped in."""
        if self.state is JobState.PREPARING:
            raise RuntimeError("abort() while prepare() is running; cancel() it and wait")
        try:
            return self._abort(reason)
        finally:
            self._close_sources()
            self._owner._release(self)

    def _abort(self, reason: str) -> CleanResult:
        if self.output is not None:
            for _, cleaned in self.output.groups:
                cleaned.delete_if_exists()
        self.state = JobState.ABORTED
        self._owner.manager.abort(self.topic_partition)
        _log.info("Cleaning of %s aborted: %s", self.topic_partition, reason)
        return CleanResult(self.topic_partition, self.to_clean.first_dirty_offset, self.to_clean.first_dirty_offset,
                           False, reason, stats=self.output.stats if self.output else None)

    def _changed_reason(self) -> str:
        log = self.log
        if log.local_log.closed:
            return "log closed or deleted"
        if not log.config.compact:
            return "cleanup.policy no longer contains compact"
        if log.truncations != self._truncations:
            return "log truncated during the cleaning"
        return ""

    def _commit(self) -> CleanResult:
        if self.state is JobState.FAILED:
            e = self.error
            changed = self._changed_reason()  # e.g. the log's directory went away under prepare
            if not isinstance(e, LogCleaningAbortedError) and not changed:
                _log.warning("Unexpected exception thrown when cleaning log %s. Marking its partition (%s) as uncleanable",
                             self.log, self.topic_partition, exc_info=e)
                self._owner.manager.mark_partition_uncleanable(os.path.dirname(self.log.dir), self.topic_partition)
            return self._abort(changed or f"prepare failed: {e!r}")
        if self.state is not JobState.PREPARED:
            return self._abort("not prepared")
        out = self.output
        assert out is not None
        log = self.log
        by_base = {seg.base_offset: seg for seg in self._segments}
        swap_new: list[LogSegment] = []
        swap_old: list[LogSegment] = []
        dropped = 0
        # replace_lock, not the log's lock, spans the check and the swap: truncation, retention
        # deletion and close wait until the swap is durable (so what is checked here stays
        # true, and no .swap file can outlive a truncation), while appends, reads, rolls and
        # flushes only wait for the check and the in-memory swap, never for its fsyncs
        with log.replace_lock:
            with log.lock:
                reason = self._changed_reason()
                if not reason:
                    for sources, cleaned in out.groups:
                        olds = [by_base[s.base_offset] for s in sources]
                        if all(log.segments.get(o.base_offset) is o and o.size() == s.size
                               for o, s in zip(olds, sources, strict=True)):
                            swap_new.append(cleaned)
                            swap_old.extend(olds)
                        else:
                            dropped += 1
                            cleaned.delete_if_exists()
            if swap_new:
                log.replace_segments(swap_new, swap_old)
        if reason:  # outside the log's lock: the manager's lock is taken before a log's
            return self._abort(reason)
        self.state = JobState.COMMITTED
        self._owner.manager.done_cleaning(self.topic_partition, os.path.dirname(log.dir), out.end_offset)
        s = out.stats
        _log.info("Cleaned log %s (dirty section = [%d, %d]): %.1f MB read, %.1f MB written in %.2f s "
                  "(%.1f MB/s), %d -> %d messages",
                  self.topic_partition, self.to_clean.first_dirty_offset, out.end_offset, s.bytes_read / 1e6,
                  s.bytes_written / 1e6, s.elapsed_s, s.bytes_read / 1e6 / s.elapsed_s if s.elapsed_s > 0 else 0.0,
                  s.messages_read, s.messages_written)
        return CleanResult(self.topic_partition, self.to_clean.first_dirty_offset, out.end_offset, True,
                           segments_replaced=len(swap_old), groups_dropped=dropped, stats=s)

    def __repr__(self) -> str:
        return f"CleaningJob({self.to_clean}, state={self.state.value})"


class LogCleaner:
    """Compaction for the logs in ``logs`` (a live mapping, e.g. ``LogManager.logs``), walked
    through ``snapshot`` (e.g. ``LogManager.snapshot``: a copy taken under the owner's lock;
    default: a copy of ``logs``).  Thread-safe; see the module docstring."""

    def __init__(self, config: CleanerConfig, log_dirs: list[str], logs: Mapping[TopicPartition, Log], clock: Clock,
                 throttler: Throttler | None = None,
                 snapshot: Callable[[], Iterable[tuple[TopicPartition, Log]]] | None = None) -> None:
        self.config = config
        self.clock = clock
        self.logs = logs
        self.manager = LogCleanerManager(log_dirs, logs, snapshot)
        self.throttler = throttler or Throttler(config.max_io_bytes_per_second)
        self._idle = [Cleaner(i, SkimpyOffsetMap(config.dedupe_buffer_per_thread, config.hash_algorithm),
                              config.io_buffer_per_thread, config.dedupe_buffer_load_factor,
                              self.throttler)
                      for i in range(config.num_threads)]
        self.jobs: dict[TopicPartition, CleaningJob] = {}
        self.shut_down = False
        self._lock = threading.Lock()  # guards _idle and jobs

    # ------------------------------------------------------------------ jobs
    def grab_filthiest(self, now: int | None = None) -> CleaningJob | None:
        """The next cleaning to run, or None (no log qualifies, or every cleaner is busy: wait
        ``config.backoff_ms``)."""
        if not self._idle or self.shut_down:
            return None
        now = self.clock.milliseconds() if now is None else now
        self.manager.maintain_uncleanable_partitions()
        ltc = self.manager.grab_filthiest_compacted_log(now)
        return None if ltc is None else self._start(ltc, now)

    def job_for(self, log: Log, now: int | None = None) -> CleaningJob | None:
        """A cleaning of ``log`` whatever its dirty ratio (Kafka's tests call the cleaner on a
        given log the same way); None if it is being cleaned, paused or uncleanable, or no
        cleaner is idle."""
        if not self._idle or self.shut_down:
            return None
        now = self.clock.milliseconds() if now is None else now
        ltc = self.manager.grab(log, now)
        return None if ltc is None else self._start(ltc, now)

    def _start(self, ltc: LogToClean, now: int) -> CleaningJob | None:
        with self._lock:
            cleaner = self._idle.pop() if self._idle else None
        if cleaner is None:  # taken by another thread since the check
            self.manager.abort(ltc.topic_partition)
            return None
        try:
            job = CleaningJob(self, cleaner, ltc.log, ltc, now)
        except BaseException:
            with self._lock:
                self._idle.append(cleaner)
            self.manager.abort(ltc.topic_partition)
            raise
        with self._lock:
            self.jobs[ltc.topic_partition] = job
        return job

    def _release(self, job: CleaningJob) -> None:
        with self._lock:
            if self.jobs.get(job.topic_partition) is job:
                del self.jobs[job.topic_partition]
                self._idle.append(job._cleaner)

    def clean_once(self, now: int | None = None) -> CleanResult | None:
        """grab_filthiest + prepare + commit in the calling thread (Kafka's cleaner-thread loop
        body: a dedicated thread may call it, sleeping ``config.backoff_ms`` on None)."""
        job = self.grab_filthiest(now)
        if job is None:
            return None
        job.prepare()
        return job.commit()

    def clean_log(self, log: Log, now: int | None = None) -> CleanResult | None:
        """job_for + prepare + commit in the calling thread."""
        job = self.job_for(log, now)
        if job is None:
            return None
        job.prepare()
        return job.commit()

    # ------------------------------------------------------------------ state changes
    def abort_cleaning(self, tp: TopicPartition) -> None:
        """Cancel the running cleaning of ``tp``, if any (its commit will abort)."""
        with self._lock:
            job = self.jobs.get(tp)
        if job is not None:
            job.cancel()

    def maybe_truncate_checkpoint(self, log: Log, offset: int) -> None:
        """Call after truncating ``log`` to ``offset`` (Kafka's LogManager.truncateTo does)."""
        if log.config.compact:
            self.manager.maybe_truncate_checkpoint(os.path.dirname(log.dir), log.topic_partition, offset)

    def update_checkpoints(self, data_dir: str, remove: TopicPartition | None = None) -> None:
        """Rewrite ``data_dir``'s checkpoint, dropping ``remove`` and logs that are gone."""
        self.manager.update_checkpoints(data_dir, remove=remove)

    def cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        return self.manager.all_cleaner_checkpoints()

    def shutdown(self) -> None:
        """Cancel every running cleaning and grab no more.  The caller should then wait for
        running ``prepare`` calls and ``commit`` (which aborts) them; leftover ``.cleaned``
        files are harmless (the loader deletes them)."""
        self.shut_down = True
        with self._lock:
            jobs = list(self.jobs.values())
        for job in jobs:
            job.cancel()
