"""kill -9 of a real process while it cleans a log: reopened, the log reads back exactly its
pre-clean or exactly its post-clean content."""

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

from log.clock import ManualClock
from log.config import CleanerConfig
from log.log import Log
from log.log_cleaner import LogCleaner
from log.scheduler import Scheduler

from .helpers import COMPACT, keyed, latest_per_key, read_records

CONFIG = replace(COMPACT, segment_bytes=1024)
T0 = 1_700_000_000_000
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

CHILD = """
import sys, time
from tests.unit.log.test_cleaner_kill import build_log, cleaner_for
log = build_log(sys.argv[1])
print("ready", flush=True)
job = cleaner_for(log).grab_filthiest()
job.prepare()
print("prepared", flush=True)
if sys.argv[2] == "pause":  # hold between prepare and commit until killed
    print("paused", flush=True)
    sys.stdin.read()
job.commit()
print("committed", flush=True)
time.sleep(30)
"""


def build_log(root: str) -> Log:
    clock = ManualClock(T0)
    log = Log.open(os.path.join(root, "topic-0"), CONFIG, clock, Scheduler(clock))
    for i in range(400):
        log.append_as_leader(keyed([(f"k{i % 37}", f"v{i}"), (f"u{i % 101}", None if i % 13 == 0 else f"w{i}")], ts=T0 + i))
    log.roll()
    log.flush()
    return log


def cleaner_for(log: Log) -> LogCleaner:
    return LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [os.path.dirname(log.dir)], {log.topic_partition: log}, log.clock)


def _reopen(root: str) -> Log:
    clock = ManualClock(T0)
    return Log.open(os.path.join(root, "topic-0"), CONFIG, clock, Scheduler(clock), recovery_point=0)


def test_kill_9_during_a_cleaning_leaves_the_pre_or_the_post_clean_log(tmp_path):
    ref = build_log(str(tmp_path / "ref"))
    pre = read_records(ref)
    cleaner_for(ref).clean_once()
    post = read_records(ref)
    assert pre != post and latest_per_key(pre) == latest_per_key(post)
    ref.close()
    outcomes = []
    # (line to wait for, then seconds before the kill): during prepare, then around the commit
    # (where these land depends on scheduling: either outcome is right), and two fixed points:
    # held between prepare and commit ("paused": must read pre) and after the commit (post)
    for i, (after, delay) in enumerate([("paused", 0), ("ready", 0.02), ("ready", 0.1), ("prepared", 0),
                                        ("prepared", 0.0005), ("prepared", 0.001), ("prepared", 0.002),
                                        ("prepared", 0.004), ("committed", 0)]):
        root = str(tmp_path / f"run{i}")
        child = subprocess.Popen([sys.executable, "-c", CHILD, root, "pause" if after == "paused" else "run"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "PYTHONPATH": REPO})
        try:
            for line in child.stdout:
                if line.strip() == after:
                    break
            time.sleep(delay)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
            child.stdin.close()
        log = _reopen(root)
        got = read_records(log)
        assert got in (pre, post), f"killed {delay}s after {after!r}"
        outcomes.append("pre" if got == pre else "post")
        assert not [f for f in os.listdir(log.dir) if f.endswith((".cleaned", ".swap"))]
        log.close()
    assert outcomes[0] == "pre" and outcomes[-1] == "post"
