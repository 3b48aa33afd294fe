"""A cleaning prepared in a worker process handles transactions as one prepared in a thread:
the same .log/.index/.timeindex/.txnindex files (the worker writes the cleaned segment's
.txnindex, the owner swaps it in by name)."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from kbroker.app.cleaner_processes import CleanerWorker
from log.config import CleanerConfig
from log.log_cleaner import LogCleaner
from tests.unit.log.helpers import COMPACT, keyed, open_log
from wire.record_batch import build_batch

CONFIG = CleanerConfig(dedupe_buffer_size=1 << 20)


def _setup(tmp_path):
    log = open_log(tmp_path, replace(COMPACT))
    return log, LogCleaner(CONFIG, [str(tmp_path)], {log.topic_partition: log}, log.clock)


def _fill(log):
    """Plain keyed records, committed and aborted transactions of two producers."""
    seq = {7: 0, 8: 0}
    for i in range(60):
        log.append_as_leader(keyed([(f"k{i % 9}", f"v{i}")], ts=log.clock.milliseconds()))
        pid = 7 if i % 2 else 8
        records = [(f"k{(i + 1) % 9}".encode(), f"t{i}".encode(), None, log.clock.milliseconds())]
        log.append_as_leader(bytearray(build_batch(records, producer_id=pid, producer_epoch=0,
                                                   base_sequence=seq[pid], is_transactional=True)))
        seq[pid] += 1
        log.append_control_batch(commit=i % 3 != 0, producer_id=pid, producer_epoch=0, coordinator_epoch=0)
    log.roll()


def _files(log):
    return {f: open(os.path.join(log.dir, f), "rb").read() for f in sorted(os.listdir(log.dir))
            if f.endswith((".log", ".index", ".timeindex", ".txnindex"))}


@pytest.fixture
def worker():
    w = CleanerWorker(CONFIG, "test-cleaner-worker-txn")
    yield w
    w.close()


def test_a_worker_cleans_transactions_exactly_as_a_thread_does(tmp_path, worker):
    in_thread, thread_cleaner = _setup(tmp_path / "thread")
    in_process, process_cleaner = _setup(tmp_path / "process")
    for log in (in_thread, in_process):
        _fill(log)
    before = _files(in_process)
    assert any(name.endswith(".txnindex") for name in before)

    assert thread_cleaner.clean_once(now=in_thread.clock.milliseconds()).committed
    job = process_cleaner.grab_filthiest(now=in_process.clock.milliseconds())
    job.prepare(worker.run)
    assert job.commit().committed and worker.jobs == 1

    after = _files(in_process)
    assert after == _files(in_thread) != before
    # the aborts whose data was met in this cleaning are indexed in the cleaned segments
    assert sum(len(v) for k, v in after.items() if k.endswith(".txnindex")) == \
        sum(len(v) for k, v in before.items() if k.endswith(".txnindex"))
