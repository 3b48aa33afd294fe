"""The broker process compacts in worker processes of its own (kbroker/app/cleaner_processes.py):
a kill -9 of the worker costs at most that cleaning, a new worker finishes the job and the
consumers see exactly the compacted topic; a clean stop ends the workers with the broker."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.compat.test_compaction import BROKER, alter, assert_view, compact, expected, fill
from tests.support.admin_helpers import wait_until


def worker_pids(broker_pid: int) -> list[int]:
    """The broker's cleaner worker processes (its children running ``worker_entry``)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        if ppid == broker_pid and b"worker_entry" in cmdline:
            pids.append(int(name))
    return pids


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # exited, not yet reaped
    except OSError:
        return True


@pytest.mark.timeout(300)
def test_a_killed_cleaner_worker_is_replaced_and_the_topic_still_ends_exactly_compacted(broker_factory):
    # throttled so that the first cleaning lasts a while: the kill most likely lands while it
    # writes; if it lands later, the worker is killed idle: either way the next is a new one
    b = broker_factory(**BROKER, **{"log.cleaner.io.max.bytes.per.second": "1000000"})
    topic, partitions = "compacted-worker", 1
    records, offsets = fill(b.bootstrap, topic, partitions)
    alter(b.bootstrap, topic, cleanup_policy="compact")
    part_dir = b.data_dir / f"{topic}-0"
    assert wait_until(lambda: any(part_dir.glob("*.cleaned")), bool, 60, 0.01), "the cleaner never started"
    [first] = wait_until(lambda: worker_pids(b.proc.pid), bool, 60)
    os.kill(first, signal.SIGKILL)
    assert wait_until(lambda: gone(first), bool, 60)

    sentinels = compact(b, topic, partitions)  # waits for both of its cleanings

    assert_view(b.bootstrap, topic, partitions, expected(records, offsets, sentinels))
    assert not list(part_dir.glob("*.cleaned")) and not list(part_dir.glob("*.swap"))
    [second] = worker_pids(b.proc.pid)
    assert second != first and b.alive()
    assert f"Started log cleaner worker process 0 (pid {second})" in b.log_text()

    assert b.stop() == 0
    deadline = time.monotonic() + 60
    while not gone(second) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(second), "the worker outlived its broker"
