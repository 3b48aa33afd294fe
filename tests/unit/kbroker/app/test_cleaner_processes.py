"""The log cleaner's worker processes: prepare runs in another process, commit stays here.

The workers are real processes (kbroker/app/cleaner_processes.py).  Where a test needs a worker caught
in the middle of writing its ``.cleaned`` segments, the worker's per-chunk hook
(``stop_once_writing``) makes it SIGSTOP itself once a ``.cleaned`` log file exists, and the
test waits for the stopped state (an event, not a delay) before killing or resuming it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import replace

import pytest

from kbroker.app.cleaner_processes import CleanerProcesses, CleanerWorker, CleanerWorkerError
from log.cleaner import LogCleaningAbortedError
from log.config import CleanerConfig
from log.log_cleaner import JobState, LogCleaner
from tests.unit.log.helpers import COMPACT, keyed, latest_per_key, open_log, read_records

DAY = 86_400_000
DEADLINE_S = 60
CONFIG = CleanerConfig(dedupe_buffer_size=1 << 20, io_buffer_size=1024, backoff_ms=10)


def stop_once_writing(plan) -> None:
    """Worker hook: the first time a ``.cleaned`` log exists in the plan's directory, stop
    this process (a marker file beside the log makes it once per test)."""
    if plan is None:
        return
    marker = os.path.join(os.path.dirname(plan.dir), "worker-stopped-once")
    if os.path.exists(marker) or not any(f.endswith(".log.cleaned") for f in os.listdir(plan.dir)):
        return
    with open(marker, "w") as f:
        f.write(str(os.getpid()))
    os.kill(os.getpid(), signal.SIGSTOP)


def _wait(predicate, what: str):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def _setup(tmp_path, **cfg):
    log = open_log(tmp_path, replace(COMPACT, **cfg))
    cleaner = LogCleaner(CONFIG, [str(tmp_path)], {log.topic_partition: log}, log.clock)
    return log, cleaner


def _fill(log, n, keys=10):
    for i in range(n):
        log.append_as_leader(keyed([(f"k{i % keys}", f"v{i}"), (f"k{(i + 3) % keys}", f"w{i}")], ts=log.clock.milliseconds()))
    log.roll()


def _stray(log):
    return sorted(f for f in os.listdir(log.dir) if f.endswith((".cleaned", ".swap")))


def _files(log):
    return {f: open(os.path.join(log.dir, f), "rb").read() for f in sorted(os.listdir(log.dir))
            if f.endswith((".log", ".index", ".timeindex"))}


@pytest.fixture
def workers():
    started: list[CleanerWorker] = []

    def make(**kw) -> CleanerWorker:
        w = CleanerWorker(CONFIG, f"test-cleaner-worker-{len(started)}", **kw)
        started.append(w)
        return w

    yield make
    for w in started:
        w.close()


def test_a_cleaning_prepared_in_a_worker_process_leaves_the_same_files_as_one_prepared_in_a_thread(tmp_path, workers):
    in_thread, thread_cleaner = _setup(tmp_path / "thread")
    in_process, process_cleaner = _setup(tmp_path / "process")
    for log in (in_thread, in_process):
        _fill(log, 120)
    pre = read_records(in_process)

    thread_result = thread_cleaner.clean_once(now=in_thread.clock.milliseconds())
    job = process_cleaner.grab_filthiest(now=in_process.clock.milliseconds())
    worker = workers()
    job.prepare(worker.run)
    result = job.commit()

    assert worker.pid != os.getpid() and worker.jobs == 1
    assert result.committed and thread_result.committed
    assert (result.end_offset, result.segments_replaced) == (thread_result.end_offset, thread_result.segments_replaced)
    assert _files(in_process) == _files(in_thread)
    assert read_records(in_process) == read_records(in_thread) != pre
    assert latest_per_key(read_records(in_process)) == latest_per_key(pre) and not _stray(in_process)
    assert process_cleaner.cleaner_checkpoints() == thread_cleaner.cleaner_checkpoints()


def test_a_worker_killed_mid_cleaning_leaves_the_log_as_it_was_and_a_later_cleaning_succeeds(tmp_path, workers):
    log, cleaner = _setup(tmp_path)
    _fill(log, 120)
    pre, files = read_records(log), _files(log)
    worker = workers(hook=stop_once_writing)
    job = cleaner.grab_filthiest()
    preparing = threading.Thread(target=job.prepare, args=(worker.run,))
    preparing.start()
    _wait(lambda: os.path.exists(tmp_path / "worker-stopped-once") and _stopped(worker.pid), "the worker to stop mid-write")
    assert any(f.endswith(".log.cleaned") for f in os.listdir(log.dir))  # its partial output
    os.kill(worker.pid, signal.SIGKILL)
    preparing.join(DEADLINE_S)

    assert job.state is JobState.FAILED and isinstance(job.error, CleanerWorkerError)
    assert "died" in str(job.error) and not _stray(log)  # removed by prepare, before the commit
    result = job.commit()
    assert not result.committed and "died" in result.reason
    assert read_records(log) == pre and _files(log) == files and cleaner.cleaner_checkpoints() == {}

    job = cleaner.grab_filthiest()  # not marked uncleanable
    job.prepare(workers().run)  # a new worker
    assert job.commit().committed and cleaner.grab_filthiest() is None
    assert latest_per_key(read_records(log)) == latest_per_key(pre) and not _stray(log)


def test_the_cleaner_loop_replaces_a_killed_worker_and_cleans_the_log_with_the_next(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 120)
    pre = read_records(log)
    processes = CleanerProcesses(cleaner, 1, CONFIG.backoff_ms, hook=stop_once_writing).start()
    try:
        first = _wait(lambda: processes.workers[0], "a worker")
        _wait(lambda: os.path.exists(tmp_path / "worker-stopped-once") and _stopped(first.pid), "the worker to stop mid-write")
        os.kill(first.pid, signal.SIGKILL)
        _wait(lambda: cleaner.cleaner_checkpoints(), "a cleaning to commit")
        assert processes.workers_started == 2 and processes.workers[0] is not first
        # the metrics' count: the cleaning that committed, not the one whose worker died
        _wait(lambda: processes.cleanings >= 1, "the cleaning counted")
    finally:
        processes.stop()
    assert processes.cleanings == 1
    assert latest_per_key(read_records(log)) == latest_per_key(pre) != {} and not _stray(log)
    assert processes.workers == [None]


def test_stop_cancels_a_cleaning_under_way_and_the_worker_exits_by_itself(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 120)
    pre, files = read_records(log), _files(log)
    processes = CleanerProcesses(cleaner, 1, CONFIG.backoff_ms, hook=stop_once_writing).start()
    worker = _wait(lambda: processes.workers[0], "a worker")
    _wait(lambda: os.path.exists(tmp_path / "worker-stopped-once") and _stopped(worker.pid), "the worker to stop mid-write")
    [job] = cleaner.jobs.values()
    stopping = threading.Thread(target=processes.stop)
    stopping.start()
    _wait(lambda: worker.cancel_requested, "the cancel to reach the worker")
    os.kill(worker.pid, signal.SIGCONT)  # it reads the cancel at its next chunk
    stopping.join(DEADLINE_S)

    assert not stopping.is_alive()
    assert job.state is JobState.ABORTED and type(job.error) is LogCleaningAbortedError and "cancelled" in str(job.error)
    assert worker.exitcode == 0  # it answered and was told to exit: not terminated
    assert read_records(log) == pre and _files(log) == files and not _stray(log) and cleaner.cleaner_checkpoints() == {}


def test_a_segment_deleted_by_retention_before_the_worker_reads_it_is_read_through_its_descriptor(tmp_path, workers):
    log, cleaner = _setup(tmp_path, cleanup_policy=("compact", "delete"), retention_ms=DAY)
    clock = log.clock
    for i in range(40):  # old data, past retention soon
        log.append_as_leader(keyed([(f"old{i}", "x")], ts=clock.milliseconds()))
    log.roll()
    clock.sleep(DAY // 2)
    _fill(log, 60)
    job = cleaner.grab_filthiest()
    clock.sleep(DAY // 2 + 1)
    assert log.delete_old_segments() > 0  # retention on the owner's thread, after the grab
    clock.sleep(log.config.file_delete_delay_ms)
    log.scheduler.run_pending()  # the old segments' files are now gone from the directory
    gone = [s for s in job.plan.sources if not os.path.exists(os.path.join(log.dir, f"{s.base_offset:020d}.log"))]
    assert gone
    expected = latest_per_key(read_records(log))

    job.prepare(workers().run)
    assert job.state is JobState.PREPARED  # the worker read them through the descriptors it was sent
    result = job.commit()
    assert result.committed and result.groups_dropped > 0 and result.segments_replaced > 0
    assert latest_per_key(read_records(log)) == expected and not _stray(log)
    assert all(k.startswith(b"k") for k in expected)


def test_an_error_in_the_worker_reaches_the_commit_with_its_type(tmp_path, workers):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    first = cleaner.grab_filthiest().plan.sources[0]
    cleaner.jobs[log.topic_partition].abort()
    with open(os.path.join(log.dir, f"{first.base_offset:020d}.log"), "r+b") as f:
        f.seek(8)
        f.write(b"\x00\x00\x00\x01")  # batch length 1: below the minimum batch overhead
    job = cleaner.grab_filthiest()
    job.prepare(workers().run)
    result = job.commit()
    assert not result.committed and "CorruptRecordError" in result.reason and not _stray(log)
    assert cleaner.grab_filthiest() is None  # marked uncleanable, as in a thread


def test_a_log_of_more_segments_than_one_descriptor_message_carries_is_cleaned(tmp_path, workers):
    log, cleaner = _setup(tmp_path)
    for i in range(450):  # one batch a segment: 450 descriptors, sent 200 at a time
        log.append_as_leader(keyed([(f"k{i % 7}", f"v{i}")], ts=log.clock.milliseconds()))
        log.roll()
    pre = read_records(log)
    job = cleaner.grab_filthiest()
    assert len(job.plan.sources) == 450
    job.prepare(workers().run)
    result = job.commit()
    assert result.committed and result.segments_replaced == 450
    assert latest_per_key(read_records(log)) == latest_per_key(pre) and not _stray(log)
