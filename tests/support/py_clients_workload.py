"""The shared workload of the kafka-python and aiokafka compat tests: deterministic records
(keys, values, headers, explicit timestamps) and brute-force answers for offset lookups.

Records are plain tuples so each client's own record type can be compared to them after a
one-line conversion.  Timestamps are deliberately *not* monotonic within a partition and
repeat now and then: Kafka answers a timestamp lookup with the first offset whose
timestamp is >= the target (LogSegment.findOffsetByTimestamp scans batches from the time
index's lower bound), and a max-timestamp lookup with the first offset carrying the
largest timestamp (Batch.offsetOfMaxTimestamp), so a brute-force scan over the consumed
records is the exact expectation.
"""

from __future__ import annotations

import faulthandler
import random
import sys
import time
from typing import NamedTuple

import pytest

# An hour before the run, on a whole second: recent enough that retention.ms (7 days)
# never applies, far enough from now that message.timestamp.after.max.ms (1 h) never does.
BASE_TIMESTAMP_MS = (int(time.time()) - 3600) * 1000
NUM_PARTITIONS = 4
NUM_RECORDS = 50_000


@pytest.fixture(autouse=False)
def watchdog():
    """A hard bound per test (pytest-timeout is not installed): past 150 s dump every
    thread's stack and exit, rather than hang the suite."""
    faulthandler.dump_traceback_later(150, exit=True, file=sys.stderr)
    yield
    faulthandler.cancel_dump_traceback_later()


class Rec(NamedTuple):
    key: bytes
    value: bytes | None
    headers: list[tuple[str, bytes]]
    timestamp_ms: int


def make_records(n: int = NUM_RECORDS, seed: int = 4) -> list[Rec]:
    """``n`` records: unique keys, values of 0..~300 bytes (some empty, some null
    tombstones), zero to two headers (one with an empty value), timestamps that wander
    backwards by up to 40 ms and repeat."""
    rng = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"kafka", b"broker", b"\x00\xff", b"\xe2\x82\xac"]
    out = []
    for i in range(n):
        if i % 997 == 0:
            value = None
        elif i % 101 == 0:
            value = b""
        else:
            value = b"-".join(rng.choice(words) for _ in range(rng.randint(1, 40))) + b"#%d" % i
        if i % 5 == 0:
            headers: list[tuple[str, bytes]] = []
        elif i % 5 in (1, 2):
            headers = [("seq", b"%d" % i)]
        else:
            headers = [("trace-id", rng.randbytes(8)), ("empty", b"")]
        ts = BASE_TIMESTAMP_MS + i * 2 + rng.randint(-40, 40)
        out.append(Rec(b"key-%06d" % i, value, headers, ts))
    return out


def brute_force_offset_for_time(entries: list[tuple[int, int]], target_ms: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first entry (in offset order) whose timestamp >= target."""
    for offset, ts in entries:
        if ts >= target_ms:
            return offset, ts
    return None


def brute_force_max_timestamp(entries: list[tuple[int, int]]) -> tuple[int, int]:
    """(offset, timestamp) of the first entry carrying the largest timestamp."""
    best = entries[0]
    for offset, ts in entries:
        if ts > best[1]:
            best = (offset, ts)
    return best


def lookup_targets(entries: list[tuple[int, int]], rounds: int, seed: int) -> list[int]:
    """``rounds`` timestamps to look up in a partition: before the first, exactly the
    smallest and the largest, past the largest, and a seeded mix of stored timestamps,
    their neighbours and values in between."""
    rng = random.Random(seed)
    stamps = [ts for _, ts in entries]
    lo, hi = min(stamps), max(stamps)
    targets = [lo - 1, lo, hi, hi + 1, stamps[0], stamps[-1]]
    while len(targets) < rounds:
        pick = rng.choice(stamps)
        targets.append(rng.choice([pick, pick - 1, pick + 1, rng.randint(lo, hi)]))
    return targets[:rounds]
