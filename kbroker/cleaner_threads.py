"""The log cleaner's threads: Kafka's ``CleanerThread``, ``log.cleaner.threads`` of them.

log/ drives compaction as jobs (log/log_cleaner.py) and starts no threads; the broker owns
them.  Each thread loops like Kafka's ``CleanerThread.doWork``: ``clean_once`` (grab the
filthiest compacted log, prepare the cleaned segments without any lock, commit the swap
under the log's lock) and, when nothing qualifies, sleeps ``log.cleaner.backoff.ms``.

Why threads and not the background worker: a cleaning reads and rewrites whole segments
(seconds per GiB); on the background thread it would hold up retention, flushes and
checkpoints.  Request handling stays on the event loop; in CPython a cleaning still shares
the GIL with it (bench/cleaner_bench.py measures what that costs a produce).

Stopping: ``LogCleaner.shutdown`` cancels the running preparations (they stop at their next
chunk and their commits abort, removing the ``.cleaned`` files); the threads are then
joined before the logs close.  A kill -9 at any point is recovered by the loader.
"""

from __future__ import annotations

import logging
import threading

from log.log_cleaner import LogCleaner

log = logging.getLogger("kbroker.cleaner")


class CleanerThreads:
    def __init__(self, cleaner: LogCleaner, num_threads: int, backoff_ms: int) -> None:
        self.cleaner = cleaner
        self._backoff_s = backoff_ms / 1000.0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, name=f"kafka-log-cleaner-thread-{i}", daemon=True)
                         for i in range(num_threads)]

    def start(self) -> CleanerThreads:
        for t in self._threads:
            t.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                result = self.cleaner.clean_once()
            except Exception:  # noqa: BLE001 - one bad cleaning must not end the thread
                log.exception("log cleaner pass failed")
                result = None
            if result is None:  # nothing to clean (or it failed): back off as Kafka does
                self._stop.wait(self._backoff_s)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Cancel cleanings under way, let their commits abort, and end the threads."""
        self._stop.set()
        self.cleaner.shutdown()
        for t in self._threads:
            if t.is_alive():
                t.join(timeout_s)
