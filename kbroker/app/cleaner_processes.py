"""The log cleaner off the request path: Kafka's ``CleanerThread``s, each with a worker process.

log/ drives compaction as jobs (log/log_cleaner.py: grab, prepare, commit) and starts nothing;
the broker runs ``log.cleaner.threads`` cleaner loops, each a thread of this process that owns
one worker process.  A loop does what Kafka's ``CleanerThread.doWork`` does: grab the filthiest
compacted log (a short snapshot under the log's lock), have the worker *prepare* it, commit the
swap here (short, under the log's locks), and sleep ``log.cleaner.backoff.ms`` when nothing
qualifies.  Only the long part, reading the segments, building the offset map and writing the
``.cleaned`` segments, runs in the worker, so it never holds this process's GIL: request
handling on the event loop keeps its latency while a log is cleaned (bench/micro/cleaner.py).
The thread only waits on the worker's pipe (GIL released).

The worker: a fresh interpreter (``sys.executable -c _BOOT``; never a fork of this process,
which has an event loop and threads running), started by its loop's thread when it first has
a job, kept for the next ones, at nice 10.  It gets one end of a socket pair, a one-byte
shared memory file (the cancel flag) and the broker's sys.path.  Per job it receives
``CleaningPlan.portable()`` over the socket (pickled, multiprocessing's ``Connection``
framing) and then the plan's *file descriptors* (``SCM_RIGHTS``, at most ``_FDS_PER_MESSAGE`` a message),
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
whose broker dies goes too: it asked for SIGKILL on its parent's death (prctl), its
``check_done`` also stops it when its parent changed, and an idle one reads the socket's end.
Otherwise it could go on writing ``.cleaned`` files beside a restarted broker's.

Throttling: ``log.cleaner.io.max.bytes.per.second`` is shared by all of Kafka's cleaner
threads; each worker paces itself at that rate / ``log.cleaner.threads`` (same total).

Stopping: ``stop`` cancels the running preparations, lets their commits abort (removing the
``.cleaned`` files), ends the loops and the workers (asked, then terminated after a bound)
before the logs close.  A kill -9 at any point is recovered by the loader.
"""

from __future__ import annotations

import ctypes
import json
import logging
import mmap
import os
import pickle
import signal
import socket
import subprocess
import sys
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


def _worker_main(conn: Connection, cancel: mmap.mmap, config: CleanerConfig, rate: float,
                 hook: Callable[[CleaningPlan], None] | None, parent: int) -> None:
    """The worker's loop: a plan, its descriptors, the answer; until None or the pipe's end."""
    cleaner = Cleaner(0, SkimpyOffsetMap(config.dedupe_buffer_per_thread, config.hash_algorithm),
                      config.io_buffer_per_thread, config.dedupe_buffer_load_factor, Throttler(rate))
    plan: CleaningPlan | None = None

    def check_done() -> None:
        if hook is not None:
            hook(plan)
        if cancel[0]:
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


def worker_entry(sock_fd: int, cancel_fd: int, parent: int) -> None:
    """The worker process's start (see ``_BOOT``): its end of the socket pair, the shared
    cancel byte, the broker's pid; then ``(config, rate, hook)`` as the first message."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is for the broker to handle
    _die_with_parent()
    if os.getppid() != parent:  # died before the prctl took effect
        return
    try:
        os.nice(_WORKER_NICENESS)
    except OSError:
        pass
    cancel = mmap.mmap(cancel_fd, 1)
    os.close(cancel_fd)
    conn = Connection(sock_fd)
    try:
        config, rate, hook = conn.recv()
    except (EOFError, OSError):
        return
    _worker_main(conn, cancel, config, rate, hook, parent)


# The worker runs this with the broker's sys.path (argv[1], JSON): a fresh interpreter, not a
# fork of the broker (threads, an event loop) nor multiprocessing's spawn (which re-imports
# the broker's __main__ module in the child, so an embedder without a main guard would fail)
_BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
         "from kbroker.app.cleaner_processes import worker_entry; "
         "worker_entry(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))")


# ---------------------------------------------------------------------- in the broker
class CleanerWorker:
    """One worker process and its socket.  ``run`` is a ``log_cleaner.PrepareRunner``; one job
    at a time (its loop's thread).  ``close`` ends the process.  The worker gets SIGKILL if
    the thread that created it ends first (Linux's parent-death signal follows the thread):
    create it on a thread that outlives it (``CleanerProcesses`` uses its loop's thread).
    ``hook``: called by the worker per chunk with the plan (tests: a module-level function,
    pickled by name)."""

    def __init__(self, config: CleanerConfig, name: str, cancel_grace_s: float = 10.0,
                 hook: Callable[[CleaningPlan], None] | None = None) -> None:
        self.name = name
        self.cancel_grace_s = cancel_grace_s
        parent_sock, child_sock = socket.socketpair()
        cancel_fd = os.memfd_create(f"{name}-cancel")
        try:
            os.ftruncate(cancel_fd, 1)
            self._cancel = mmap.mmap(cancel_fd, 1)
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, json.dumps(sys.path), str(child_sock.fileno()), str(cancel_fd),
                 str(os.getpid())], pass_fds=(child_sock.fileno(), cancel_fd), stdin=subprocess.DEVNULL)
        except BaseException:
            parent_sock.close()
            raise
        finally:
            child_sock.close()
            os.close(cancel_fd)
        self.conn = Connection(parent_sock.detach())
        rate = config.max_io_bytes_per_second / max(config.num_threads, 1)
        try:
            self.conn.send((config, rate, hook))
        except OSError:
            pass  # it died already: the first run finds out
        self.jobs = 0  # jobs answered (tests, logs)

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def cancel_requested(self) -> bool:
        """The running job's cancel has been forwarded to the worker."""
        return bool(self._cancel[0])

    @property
    def exitcode(self) -> int | None:
        """None while it runs; -N when killed by signal N."""
        return self.process.poll()

    def alive(self) -> bool:
        return self.process.poll() is None and not self.conn.closed

    def run(self, plan: CleaningPlan, cancelled: threading.Event) -> CleaningSummary:
        """Have the worker prepare ``plan``; returns once it no longer writes (see the module
        docstring for what each failure raises)."""
        self._cancel[0] = 0
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
            # wakes up for the answer or the worker's death (its end of the socket closes then:
            # only it holds that descriptor); the timeout only bounds how late a cancel (a
            # threading.Event, no descriptor to wait on) is forwarded
            ready = wait([self.conn], timeout=0.1)
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
                raise CleanerWorkerError(f"cleaner worker {self.pid} died (exit code {self.exitcode})")
            if cancelled.is_set():
                if cancelled_at is None:
                    self._cancel[0] = 1
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
        for end in (None, self.process.terminate, self.process.kill):
            if end is not None:
                end()
            try:
                self.process.wait(timeout_s)
                return
            except subprocess.TimeoutExpired:
                pass
        self.process.wait()


class CleanerProcesses:
    """``num_threads`` cleaner loops, each driving its own worker process (see the module
    docstring).  ``workers`` holds each loop's current worker (None until its first job or
    after it died).  ``hook``: called by the workers per chunk with the plan (tests: a
    module-level function, pickled by name)."""

    def __init__(self, cleaner: LogCleaner, num_threads: int, backoff_ms: int,
                 cancel_grace_s: float = 10.0, hook: Callable[[CleaningPlan], None] | None = None) -> None:
        self.cleaner = cleaner
        self.hook = hook
        self.cancel_grace_s = cancel_grace_s
        self._backoff_s = backoff_ms / 1000.0
        self._stop = threading.Event()
        self._lock = threading.Lock()  # guards workers against stop() racing a loop's new worker
        self.workers: list[CleanerWorker | None] = [None] * num_threads
        self.workers_started = 0
        self.cleanings = 0   # cleanings that ran (completed or aborted), for the metrics
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
                if w is not None:  # died while idle: reap it
                    w.close()
                if self._stop.is_set():
                    raise CleanerWorkerError("the cleaner is stopping")
                try:
                    w = CleanerWorker(self.cleaner.config, f"kafka-log-cleaner-process-{i}",
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

        try:
            self._loop(run)
        finally:  # on this thread: the worker's parent-death signal follows its creating thread
            with self._lock:
                w, self.workers[i] = self.workers[i], None
            if w is not None:
                w.close()

    def _loop(self, run: Callable[[CleaningPlan, threading.Event], CleaningSummary]) -> None:
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
                    if not back_off:
                        with self._lock:
                            self.cleanings += 1
            except Exception:  # noqa: BLE001 - one bad cleaning must not end the loop
                log.exception("log cleaner pass failed")
            if back_off:
                self._stop.wait(self._backoff_s)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Cancel cleanings under way, let their commits abort, end the loops and the workers."""
        self._stop.set()
        self.cleaner.shutdown()
        for t in self._threads:  # each closes its worker as it ends
            if t.is_alive():
                t.join(timeout_s)
        with self._lock:  # workers of loops that did not end in time
            workers, self.workers = self.workers, [None] * len(self.workers)
        for w in workers:
            if w is not None:
                w.close(timeout_s / 3)
