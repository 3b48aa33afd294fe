"""The log cleaner off the request path: Kafka's ``CleanerThread``s, each with a worker process.

log/ drives compaction as jobs (log/log_cleaner.py: grab, prepare, commit) and starts nothing;
the broker runs ``log.cleaner.threads`` cleaner loops, each a thread of this process that owns
one worker process.  A loop does what Kafka's ``CleanerThread.doWork`` does: grab the filthiest
compacted log (a short snapshot under the log's lock), have the worker *prepare* it, commit the
swap here (short, under the log's locks), and sleep ``log.cleaner.backoff.ms`` when nothing
qualifies.  Only the long part, reading the segments, building the offset map and writing the
``.cleaned`` segments, runs in the worker, so it never holds this process's GIL: request
handling on the event loop keeps its latency while a log is cleaned (bench/cleaner_bench.py).
The thread only waits on the worker's pipe (GIL released).

The worker: a process of the ``forkserver`` context (never a fork of this process, which has
an event loop and threads running), started when its loop first has a job, kept for the next
ones.  Per job it receives ``CleaningPlan.portable()`` over a duplex pipe (a Unix socket) and
then the plan's *file descriptors* (``SCM_RIGHTS``, at most ``_FDS_PER_MESSAGE`` a message),
runs ``log.cleaner.clean_to_summary`` and answers ``("ok", CleaningSummary)`` or ``("error",
exception)``; the job then reopens the ``.cleaned`` segments by name and commits as in thread
mode.  Why descriptors and not paths: the grab ``dup``s each source's descriptor under the
log's lock, so the worker reads exactly the files that were measured, even when retention
renames or deletes a segment meanwhile (the commit then drops that group, as it always did);
a worker opening paths could find a source gone, or a different file under the same name after
a truncation, and would add a failure mode that thread mode does not have.

Cancellation: ``job.cancel()`` (``LogCleaner.abort_cleaning``, ``shutdown``) is forwarded to
the worker through a shared flag its ``check_done`` reads per chunk; it then answers with
``LogCleaningAbortedError``.  A worker that does not answer within ``cancel_grace_s`` of a
cancel is terminated, then killed.  A worker that dies (kill -9, OOM killer) fails the job with
``CleanerWorkerError`` (a ``LogCleaningAbortedError``: the log is not marked uncleanable, it
was not its fault); ``prepare`` removes every ``.cleaned`` file the plan could have left, the
commit aborts, nothing changes, and the loop starts a new worker for its next job.  A worker
whose broker dies exits too: it gets SIGKILL when its parent (the fork server, which exits
with the broker) dies, and its ``check_done`` also stops it when its parent changed.

Throttling: ``log.cleaner.io.max.bytes.per.second`` is shared by all of Kafka's cleaner
threads; each worker paces itself at that rate / ``log.cleaner.threads`` (same total).

Stopping: ``stop`` cancels the running preparations, lets their commits abort (removing the
``.cleaned`` files), ends the loops and the workers (asked, then terminated after a bound)
before the logs close.  A kill -9 at any point is recovered by the loader.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import pickle
import signal
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing import reduction
from multiprocessing.connection import Connection, wait

from log.cleaner import (
    Cleaner,
    CleaningPlan,
    CleaningSummary,
    LogCleaningAbortedError,
    clean_to_summary,
)
from log.config import CleanerConfig
from log.log_cleaner import LogCleaner
from log.offset_map import SkimpyOffsetMap
from log.throttler import Throttler

__all__ = ["CleanerProcesses", "CleanerWorker", "CleanerWorkerError"]

log = logging.getLogger("kbroker.cleaner")

_FDS_PER_MESSAGE = 200  # Linux refuses more than SCM_MAX_FD (253) descriptors in one message
_PR_SET_PDEATHSIG = 1
# The worker yields the CPU to the broker's own threads: on a busy machine the scheduler
# would otherwise share a core evenly between a cleaning and request handling (nice 10 is
# about a tenth of the weight of nice 0 for Linux's scheduler); the cleaning then just takes
# longer, which compaction, a background duty, can afford.
_WORKER_NICENESS = 10


class CleanerWorkerError(LogCleaningAbortedError):
    """The worker process could not do the job (it died, could not start, or did not stop
    when cancelled): the cleaning aborts and is retried later; the log is not to blame."""


# ---------------------------------------------------------------------- in the worker process
def _die_with_parent() -> None:
    """SIGKILL when the parent (the fork server) exits; best effort, Linux only."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _recv_fds(conn: Connection, n: int) -> list[int]:
    fds: list[int] = []
    with socket.socket(fileno=os.dup(conn.fileno())) as sock:
        while len(fds) < n:
            fds.extend(reduction.recvfds(sock, min(_FDS_PER_MESSAGE, n - len(fds))))
    return fds


def _picklable(e: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001 - any exception must reach the parent somehow
        return RuntimeError(f"{type(e).__name__}: {e}")


def _worker_main(conn: Connection, cancel: ctypes.c_bool, config: CleanerConfig, rate: float,
                 hook: Callable[[CleaningPlan], None] | None) -> None:
    """The worker's loop: a plan, its descriptors, the answer; until None or the pipe's end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is for the broker to handle
    _die_with_parent()
    try:
        os.nice(_WORKER_NICENESS)
    except OSError:
        pass
    parent = os.getppid()
    cleaner = Cleaner(0, SkimpyOffsetMap(config.dedupe_buffer_per_thread, config.hash_algorithm),
                      config.io_buffer_per_thread, config.dedupe_buffer_load_factor, Throttler(rate))

    plan: CleaningPlan | None = None

    def check_done() -> None:
        if hook is not None:
            hook(plan)
        if cancel.value:
            raise LogCleaningAbortedError("cleaning cancelled")
        if os.getppid() != parent:
            raise LogCleaningAbortedError("the broker is gone")

    while True:
        try:
            plan = conn.recv()
        except (EOFError, OSError):
            return
        if plan is None:
            return
        fds = _recv_fds(conn, len(plan.sources))
        try:
            plan = plan.with_fds(fds)
            reply = ("ok", clean_to_summary(cleaner, plan, check_done))
        except BaseException as e:  # noqa: BLE001 - reported to the parent, which aborts the job
            reply = ("error", _picklable(e))
        finally:
            for fd in fds:
                os.close(fd)
        try:
            conn.send(reply)
        except OSError:
            return


# ---------------------------------------------------------------------- in the broker
class CleanerWorker:
    """One worker process and its pipe.  ``run`` is a ``log_cleaner.PrepareRunner``; one job
    at a time (its loop's thread).  ``close`` ends the process."""

    def __init__(self, config: CleanerConfig, name: str, context: str = "forkserver",
                 cancel_grace_s: float = 30.0, hook: Callable[[CleaningPlan], None] | None = None) -> None:
        ctx = multiprocessing.get_context(context)
        if context == "forkserver":  # each worker forks from a server that has imported this module
            ctx.set_forkserver_preload([__name__])
        self.cancel_grace_s = cancel_grace_s
        self._cancel = ctx.RawValue(ctypes.c_bool, False)
        self.conn, child = ctx.Pipe(duplex=True)
        rate = config.max_io_bytes_per_second / max(config.num_threads, 1)
        self.process = ctx.Process(target=_worker_main, args=(child, self._cancel, config, rate, hook),
                                   name=name, daemon=True)
        try:
            self.process.start()
        finally:
            child.close()
        self.jobs = 0  # jobs answered (tests, logs)

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def cancel_requested(self) -> bool:
        """The running job's cancel has been forwarded to the worker."""
        return bool(self._cancel.value)

    def alive(self) -> bool:
        return self.process.is_alive() and not self.conn.closed

    def run(self, plan: CleaningPlan, cancelled: threading.Event) -> CleaningSummary:
        """Have the worker prepare ``plan``; returns once it no longer writes (see the module
        docstring for what each failure raises)."""
        self._cancel.value = False
        try:
            self.conn.send(plan.portable())
            fds = [s.fd for s in plan.sources]
            with socket.socket(fileno=os.dup(self.conn.fileno())) as sock:
                for i in range(0, len(fds), _FDS_PER_MESSAGE):
                    reduction.sendfds(sock, fds[i:i + _FDS_PER_MESSAGE])
        except OSError as e:
            self.close()
            raise CleanerWorkerError(f"cleaner worker {self.pid} unreachable: {e}") from e
        cancelled_at = None
        while True:
            # wakes up for the answer or the worker's death; the timeout only bounds how late
            # a cancel (a threading.Event: no descriptor to wait on) is forwarded
            ready = wait([self.conn, self.process.sentinel], timeout=0.1)
            if self.conn in ready:
                try:
                    kind, value = self.conn.recv()
                except (EOFError, OSError):
                    pass  # the pipe's end: the process ended (or is ending) without answering
                else:
                    self.jobs += 1
                    if kind == "ok":
                        return value
                    raise value
            if ready:
                self.close()  # reaps it (terminates one that closed its pipe but lingers)
                raise CleanerWorkerError(f"cleaner worker {self.pid} died (exit code {self.process.exitcode})")
            if cancelled.is_set():
                if cancelled_at is None:
                    self._cancel.value = True
                    cancelled_at = time.monotonic()
                elif time.monotonic() - cancelled_at > self.cancel_grace_s:
                    self.close(0)
                    raise CleanerWorkerError(f"cleaner worker {self.pid} did not stop within "
                                             f"{self.cancel_grace_s:.0f} s of a cancel: terminated")

    def close(self, timeout_s: float = 10.0) -> None:
        """Ask the worker to exit (an idle one reads None), then terminate and kill it if it
        has not within ``timeout_s``; waits until it is gone."""
        if not self.conn.closed:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.conn.close()
        self.process.join(timeout_s)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout_s)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


class CleanerProcesses:
    """``num_threads`` cleaner loops, each driving its own worker process (see the module
    docstring).  ``workers`` holds each loop's current worker (None until its first job or
    after it died).  ``hook``: called by the workers per chunk with the plan (tests: a
    module-level function, pickled by name)."""

    def __init__(self, cleaner: LogCleaner, num_threads: int, backoff_ms: int, context: str = "forkserver",
                 cancel_grace_s: float = 30.0, hook: Callable[[CleaningPlan], None] | None = None) -> None:
        self.cleaner = cleaner
        self.hook = hook
        self.context = context
        self.cancel_grace_s = cancel_grace_s
        self._backoff_s = backoff_ms / 1000.0
        self._stop = threading.Event()
        self._lock = threading.Lock()  # guards workers against stop() racing a loop's new worker
        self.workers: list[CleanerWorker | None] = [None] * num_threads
        self.workers_started = 0
        self._threads = [threading.Thread(target=self._run, args=(i,), name=f"kafka-log-cleaner-thread-{i}", daemon=True)
                         for i in range(num_threads)]

    def start(self) -> CleanerProcesses:
        for t in self._threads:
            t.start()
        return self

    def _worker(self, i: int) -> CleanerWorker:
        with self._lock:
            w = self.workers[i]
            if w is None or not w.alive():
                if self._stop.is_set():
                    raise CleanerWorkerError("the cleaner is stopping")
                try:
                    w = CleanerWorker(self.cleaner.config, f"kafka-log-cleaner-process-{i}", self.context,
                                      self.cancel_grace_s, self.hook)
                except Exception as e:
                    raise CleanerWorkerError(f"cannot start a cleaner worker: {e!r}") from e
                self.workers[i] = w
                self.workers_started += 1
                log.info("Started log cleaner worker process %d (pid %s)", i, w.pid)
            return w

    def _run(self, i: int) -> None:
        def run(plan: CleaningPlan, cancelled: threading.Event) -> CleaningSummary:
            return self._worker(i).run(plan, cancelled)

        while not self._stop.is_set():
            back_off = True
            try:
                job = self.cleaner.grab_filthiest()
                if job is not None:
                    job.prepare(run)
                    job.commit()
                    # a cleaning that ran (even aborted) is followed by the next at once, as in
                    # Kafka; one the worker failed (died, would not start) waits like no work
                    back_off = isinstance(job.error, CleanerWorkerError)
            except Exception:  # noqa: BLE001 - one bad cleaning must not end the loop
                log.exception("log cleaner pass failed")
            if back_off:
                self._stop.wait(self._backoff_s)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Cancel cleanings under way, let their commits abort, end the loops and the workers."""
        self._stop.set()
        self.cleaner.shutdown()
        for t in self._threads:
            if t.is_alive():
                t.join(timeout_s)
        with self._lock:
            workers, self.workers = self.workers, [None] * len(self.workers)
        for w in workers:
            if w is not None:
                w.close(timeout_s / 3)
