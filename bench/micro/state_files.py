"""The background pass that makes new logs' small state files durable (log/durable_batch.py):
N logs created as a CreateTopics creates them (a LogManager on a temp dir: directory,
segment and indexes, partition.metadata with the topic id, a leader-epoch-checkpoint entry),
then ``os.sync()`` so that only the pass's own work is timed, then the scheduler's pending
tasks (the ``flush-state-files`` pass), timed.

    python -m bench.micro.state_files [--logs 10000]

Run it in two checkouts (before / after) one after the other and compare the pass's seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid

from log.clock import ManualClock
from log.config import LogConfig
from log.log_manager import LogManager
from log.scheduler import Scheduler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", type=int, default=10_000)
    n = ap.parse_args().logs
    d = tempfile.mkdtemp(prefix="state-file-sync-")
    clock = ManualClock()
    scheduler = Scheduler(clock)
    manager = LogManager([d], LogConfig(), clock, scheduler)
    manager.startup()
    topic_id = uuid.uuid4()
    try:
        t0 = time.perf_counter()
        for p in range(n):
            log = manager.get_or_create_log(("t", p))
            log.assign_topic_id(topic_id)
            log.maybe_assign_epoch_start_offset(0, 0)
        created = time.perf_counter() - t0
        os.sync()
        t1 = time.perf_counter()
        scheduler.run_pending()
        synced = time.perf_counter() - t1
        print(f"{n:,} logs: created in {created:.2f} s; background durable pass {synced:.2f} s")
    finally:
        manager.shutdown()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
