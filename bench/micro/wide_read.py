"""CPU time per partition of one Fetch naming many partitions (issue 15), in this process.

Run: ``.venv/bin/python -m bench.micro.wide_read [--partitions 2000] [--profile]``.

``--partitions`` partition logs (Kafka's default segment and index settings) of one topic,
each holding one batch of 3 records of 1 KiB (what a consumer of the 10,000-partition cost
curve finds: ~3 KiB per partition), behind a minimal broker state; then Fetch's
``_read_all`` (kbroker/handlers/fetch.py) for a read_committed v12 request naming them all,
as librdkafka sends it:

* first read: every partition from offset 0 (each partition's first read since its log was
  opened: an offset-index lookup and a header scan, the data copied into the answer);
* empty read: every partition at its end (the common case of a wide fetch: nothing new);

then the answers are encoded (v12).  Thread CPU time (so the figure does not count time
the machine's other work took the CPU away), median of ``--rounds`` (first reads: a fresh
set of logs each round).  ``--profile`` prints the top of a cProfile of one round's reads and encodes instead.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import statistics
import tempfile
import time
from types import SimpleNamespace

from kbroker.handlers.fetch import _read_all
from kbroker.replica.fetch_waiters import FetchWaiters
from kbroker.replica.partition import Partition
from log.config import LogConfig
from log.log import Log
from tests.log.helpers import batch, open_log
from wire.codec import encode_parts
from wire.messages import FetchRequest


def _partitions(n: int, where: str) -> tuple[dict[int, Partition], list[Log]]:
    """(the partitions by index, their logs: the bench opened them, so it closes them)."""
    parts, logs = {}, []
    b = batch(3, value_size=1024)
    for i in range(n):
        lg = open_log(where, LogConfig(), name=f"wide-{i}", high_watermark_follows_log_end=True)
        p = Partition("wide", i, lg, FetchWaiters())
        p.append_records_as_leader(memoryview(bytearray(b)))
        parts[i] = p
        logs.append(lg)
    return parts, logs


def _request(offsets: dict[int, int]) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52_428_800, isolation_level=1,
                        session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic="wide", partitions=[
                            FetchRequest.FetchPartition(partition=i, current_leader_epoch=0, fetch_offset=o,
                                                        last_fetched_epoch=-1, log_start_offset=-1,
                                                        partition_max_bytes=1_048_576)
                            for i, o in offsets.items()])],
                        forgotten_topics_data=[], rack_id="")


def _round(n: int, prof: cProfile.Profile | None = None) -> dict[str, float]:
    where = tempfile.mkdtemp(prefix="wide-read-")
    try:
        parts, logs = _partitions(n, where)
        ctx = SimpleNamespace(broker=SimpleNamespace(partition=lambda t, i: parts.get(i)), api_version=12)
        first, at_end = _request({i: 0 for i in parts}), _request({i: 3 for i in parts})
        if prof is not None:
            prof.enable()
        t0 = time.thread_time()
        resp, total, _ = _read_all(ctx, first)
        t1 = time.thread_time()
        encode_parts(resp, 12)
        t2 = time.thread_time()
        empty, _, _ = _read_all(ctx, at_end)
        t3 = time.thread_time()
        encode_parts(empty, 12)
        t4 = time.thread_time()
        if prof is not None:
            prof.disable()
        assert total == n * len(batch(3, value_size=1024))
        for lg in logs:
            lg.close()
        return {"first read": t1 - t0, "first encode": t2 - t1, "empty read": t3 - t2, "empty encode": t4 - t3}
    finally:
        shutil.rmtree(where, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.profile:
        prof = cProfile.Profile()
        _round(args.partitions, prof)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return
    rounds = [_round(args.partitions) for _ in range(args.rounds)]
    for figure in rounds[0]:
        values = [r[figure] * 1e6 / args.partitions for r in rounds]
        print(f"{figure}: {statistics.median(values):.1f} us per partition "
              f"({min(values):.1f}-{max(values):.1f}, {args.rounds} rounds of {args.partitions:,})")


if __name__ == "__main__":
    main()
