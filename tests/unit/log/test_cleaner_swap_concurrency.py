"""A compaction swap fsyncs the log directory outside the log's lock: appends go on while
either directory fsync of the swap is blocked, and a truncation waits for the swap instead.

The fsync seam is ``log.local_log.fsync_path`` (the name local_log calls): the test replaces it with one that blocks the
cleaner's thread on an Event the test sets only after every append has returned (or after the
truncation is seen waiting), so an append that waited for the fsync could never return in
time: the outcome does not depend on how busy the machine is.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace

import pytest

import log.local_log as local_log_module
from log.clock import ManualClock
from log.config import CleanerConfig
from log.log import Log
from log.log_cleaner import LogCleaner
from log.scheduler import Scheduler

from .helpers import COMPACT, batch, keyed, latest_per_key, read_records

DEADLINE_S = 60.0
T0 = 1_700_000_000_000
CONFIG = replace(COMPACT, segment_bytes=520, index_interval_bytes=64)


def _compacted_log(root) -> tuple[Log, LogCleaner]:
    """A compacted log of several segments, a hot key rewritten in each batch."""
    clock = ManualClock(T0)
    log = Log.open(os.path.join(str(root), "topic-0"), CONFIG, clock, Scheduler(clock))
    for i in range(30):
        log.append_as_leader(keyed([("hot", f"h{i}"), (f"u{i}", f"x{i}")], ts=T0 + i))
    log.roll()
    cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [str(root)], {log.topic_partition: log}, clock)
    return log, cleaner


class GatedDirFsync:
    """Replaces ``fsync_path``: on the cleaner's thread, call number ``block_call`` (1: the
    fsync of the ``.swap`` files, 2: the one of the final names) announces itself and waits
    for ``release``; every other call fsyncs at once."""

    def __init__(self, original, block_call: int) -> None:
        self.original = original
        self.block_call = block_call
        self.cleaner_calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, path: str) -> None:
        if threading.current_thread().name == "cleaner":
            self.cleaner_calls += 1
            if self.cleaner_calls == self.block_call:
                self.entered.set()
                assert self.release.wait(DEADLINE_S), "the test never released the fsync"
        self.original(path)


class ContentionRecordingLock:
    """Wraps ``Log.replace_lock``: ``contended`` is set when a thread has to wait for it."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.contended = threading.Event()

    def __enter__(self):
        if not self.inner.acquire(blocking=False):
            self.contended.set()
            self.inner.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.inner.release()


def _start_commit(log: Log, cleaner: LogCleaner, monkeypatch, block_call: int):
    job = cleaner.job_for(log)
    job.prepare()
    gate = GatedDirFsync(local_log_module.fsync_path, block_call)
    monkeypatch.setattr(local_log_module, "fsync_path", gate)
    results = []
    committer = threading.Thread(target=lambda: results.append(job.commit()), name="cleaner", daemon=True)
    committer.start()
    assert gate.entered.wait(DEADLINE_S), "the commit never reached the directory fsync"
    return gate, committer, results


@pytest.mark.parametrize("block_call", [1, 2], ids=["swap-files-fsync", "final-names-fsync"])
def test_appends_complete_while_a_directory_fsync_of_the_compaction_swap_is_blocked(tmp_path, monkeypatch, block_call):
    log, cleaner = _compacted_log(tmp_path)
    before = latest_per_key(read_records(log))
    gate, committer, results = _start_commit(log, cleaner, monkeypatch, block_call)

    durations: list[float] = []
    appended = threading.Event()

    def append_more() -> None:
        for i in range(50):  # enough to roll, under the lock the swap's fsync must not hold
            start = time.monotonic()
            log.append_as_leader(keyed([(f"late{i}", "v")], ts=T0 + 100 + i))
            durations.append(time.monotonic() - start)
        appended.set()

    appender = threading.Thread(target=append_more, name="event-loop", daemon=True)
    appender.start()
    finished = appended.wait(DEADLINE_S)
    fsync_still_blocked = committer.is_alive() and not gate.release.is_set()
    gate.release.set()
    committer.join(DEADLINE_S)
    appender.join(DEADLINE_S)

    assert finished, "appends waited for the blocked directory fsync"
    assert fsync_still_blocked
    # no wall-clock bound: the gate is never released before the appends end, so they cannot
    # have waited for the fsync however long it takes (a bound would only measure the machine)
    assert len(durations) == 50
    assert not committer.is_alive() and results and results[0].committed
    assert gate.cleaner_calls == 2
    assert not [f for f in os.listdir(log.dir) if f.endswith((".cleaned", ".swap"))]
    after = latest_per_key(read_records(log))
    assert {k: after.get(k) for k in before} == before  # compaction keeps offsets and latest values
    assert {k: v for k, (_, v) in after.items() if k not in before} == {f"late{i}".encode(): b"v" for i in range(50)}
    log.close()


@pytest.mark.parametrize("block_call", [1, 2], ids=["swap-files-fsync", "final-names-fsync"])
def test_a_truncation_during_the_compaction_swap_waits_until_the_swap_is_durable(tmp_path, monkeypatch, block_call):
    log, cleaner = _compacted_log(tmp_path)
    log.replace_lock = recording = ContentionRecordingLock(log.replace_lock)
    target = log.log_end_offset - 6  # three batches of two records: inside the cleaned range
    gate, committer, results = _start_commit(log, cleaner, monkeypatch, block_call)

    truncated = threading.Event()
    seen_at_truncation: list[bool] = []

    def truncate() -> None:
        log.truncate_to(target)
        seen_at_truncation.append(gate.release.is_set())
        truncated.set()

    truncator = threading.Thread(target=truncate, name="truncator", daemon=True)
    truncator.start()
    assert recording.contended.wait(DEADLINE_S), "the truncation did not wait for the swap"
    assert not truncated.is_set()
    gate.release.set()
    assert truncated.wait(DEADLINE_S)
    committer.join(DEADLINE_S)

    assert seen_at_truncation == [True]
    assert results and results[0].committed  # the swap completed first, then the truncation
    assert log.log_end_offset == target
    assert not [f for f in os.listdir(log.dir) if f.endswith((".cleaned", ".swap"))]
    log.close()


def test_a_truncation_before_the_commit_aborts_it_and_leaves_no_swap_file(tmp_path):
    log, cleaner = _compacted_log(tmp_path)
    before = read_records(log)
    job = cleaner.job_for(log)
    job.prepare()
    target = log.log_end_offset - 6
    log.truncate_to(target)
    result = job.commit()
    assert not result.committed and result.reason == "log truncated during the cleaning"
    assert not [f for f in os.listdir(log.dir) if f.endswith((".cleaned", ".swap"))]
    assert read_records(log) == [r for r in before if r[0] < target]  # nothing cleaned
    log.append_as_leader(batch(n=1))  # the log goes on
    log.close()
