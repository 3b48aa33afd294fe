"""Log cleaner benchmark: MB/s of log cleaned, and what a cleaning costs the log's owner.

Run: ``.venv/bin/python -m bench.micro.cleaner [--records 100000] [--keys 1000] [--dir DIR]``.

For each row a compacted log is written with ``--records`` records over ``--keys`` keys
(100-byte values, 1 % tombstones, 1 MiB segments) in producer batches of the given size and
codec, the active segment is rolled, and one cleaning runs through the broker's API:
``grab_filthiest()`` (owner thread), ``prepare()`` (the part a worker thread runs: offset map
+ rewrite, fsyncs included) and ``commit()`` (owner thread: swap + checkpoint).  Throughput =
bytes of log read by the cleaning / prepare time (krec/s: records read / prepare time).  grab
and commit are what the event loop pays.  The page cache is warm (the log was just written).

Second table: latency of ``Log.append_as_leader`` (one 100-byte record, another log) on the
owner thread, alone and while one cleaning (``prepare`` + ``commit``) runs on a cleaner thread
of the same process, the way the broker runs it:

* ``prepare in a worker thread``: the old way (``job.prepare()`` on that thread): the GIL is
  shared, so this is what a cleaning cost request handling.  CPython hands the GIL to a
  waiting thread after ``sys.getswitchinterval()`` (5 ms by default); the next row sets it to
  0.5 ms, the knob a broker running the cleaner in a thread could turn;
* ``prepare in a worker process``: the broker's way (kbroker/app/cleaner_processes.py): the
  thread sends the plan to a worker process (started beforehand, as the broker
  keeps its workers) and waits; only grab, the reopening of the cleaned segments and the
  commit run in this process.

``x alone`` is each row's p99 over the p99 of the alone row before it, in the same run; the
alone and worker-process rows alternate ``--rounds`` times (each alone row as long as the
cleaning before it), as a shared machine's load drifts.  The control row runs no cleaning but
a CPU-bound process at the workers' niceness for as long as the cleaning took: what any extra
busy process costs the owner thread on this machine, GIL or not.  ``--latency-only`` skips the
throughput table.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

from kbroker.app.cleaner_processes import CleanerWorker
from log.clock import SystemClock
from log.config import CleanerConfig, LogConfig
from log.log import Log
from log.log_cleaner import LogCleaner
from log.scheduler import Scheduler
from wire.compression import Compression
from wire.record_batch import build_batch

MIB = 1024 * 1024


def build(root: str, records: int, keys: int, per_batch: int, codec: Compression) -> Log:
    clock = SystemClock()
    cfg = LogConfig(segment_bytes=MIB, cleanup_policy=("compact",), max_message_bytes=8 * MIB)
    log = Log.open(os.path.join(root, "bench-0"), cfg, clock, Scheduler(clock))
    rnd = random.Random(42)
    value = bytes(rnd.getrandbits(8) for _ in range(100))
    now = clock.milliseconds()
    for start in range(0, records, per_batch):
        recs = []
        for _ in range(min(per_batch, records - start)):
            key = b"key-%06d" % rnd.randrange(keys)
            recs.append((key, None if rnd.random() < 0.01 else value, None, now))
        log.append_as_leader(bytearray(build_batch(recs, compression=codec)))
    log.roll()
    return log


def run(root: str, records: int, keys: int, per_batch: int, codec: Compression) -> dict:
    log = build(root, records, keys, per_batch, codec)
    size_before = log.size()
    cleaner = LogCleaner(CleanerConfig(), [root], {log.topic_partition: log}, log.clock)
    t0 = time.perf_counter()
    job = cleaner.grab_filthiest()
    t1 = time.perf_counter()
    job.prepare()
    t2 = time.perf_counter()
    result = job.commit()
    t3 = time.perf_counter()
    assert result.committed, result
    stats = result.stats
    out = {
        "batch": per_batch, "codec": codec.name.lower(), "log_mb": size_before / MIB, "after_kb": log.size() / 1024,
        "segments": result.segments_replaced, "prepare_s": t2 - t1, "mb_s": stats.bytes_read / MIB / (t2 - t1),
        "krec_s": stats.messages_read / 1000 / (t2 - t1),
        "map_s": stats.map_done_s - stats.start_s, "grab_ms": (t1 - t0) * 1000, "commit_ms": (t3 - t2) * 1000,
    }
    log.close()
    shutil.rmtree(log.dir)
    for name in os.listdir(root):
        os.remove(os.path.join(root, name))
    return out


def append_latencies(root: str, records: int, keys: int, mode: str | None, alone_s: float = 2.0) -> tuple[list[float], float]:
    """Per-append latency (ms) of 1-record batches on the owner thread, for as long as one
    cleaning (prepare + commit) runs on a cleaner thread, its prepare there (``mode`` "thread")
    or in a worker process ("process"); for ``alone_s`` without one (None).  Also returns how
    long the cleaning took (s)."""
    clock = SystemClock()
    hot = Log.open(os.path.join(root, "hot-0"), LogConfig(), clock, Scheduler(clock))
    batch = bytearray(build_batch([(b"k", b"v" * 100, None, None)]))
    worker = process = burner = None
    if mode == "burner":  # control: no cleaning, a CPU-bound process at the workers' niceness
        burner = subprocess.Popen([sys.executable, "-c", "import os\nos.nice(10)\nwhile True: pass"])
    elif mode is not None:
        log = build(root, records, keys, 10, Compression.NONE)
        cleaner = LogCleaner(CleanerConfig(), [root], {log.topic_partition: log}, log.clock)
        if mode == "process":
            process = CleanerWorker(CleanerConfig(), "bench-cleaner-worker")
        job = cleaner.grab_filthiest()

        def clean() -> None:
            job.prepare(process.run if process else None)
            assert job.commit().committed

        worker = threading.Thread(target=clean)
        started = time.perf_counter()
        worker.start()
    lat = []
    deadline = time.perf_counter() + alone_s
    while (worker.is_alive() if worker else time.perf_counter() < deadline):
        struct.pack_into(">q", batch, 0, 0)
        t = time.perf_counter()
        hot.append_as_leader(batch)
        lat.append((time.perf_counter() - t) * 1000)
        time.sleep(0.0005)  # a request every ~0.5 ms, not a busy loop
    took = alone_s
    if burner:
        burner.kill()
        burner.wait()
    if worker:
        worker.join()
        took = time.perf_counter() - started
        if process:
            process.close()
        log.close()
    hot.close()
    for name in os.listdir(root):
        path = os.path.join(root, name)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    return lat, took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--latency-only", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="alternating alone / worker-process rows")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="cleaner-bench-", dir=args.dir)
    rows = [(1, Compression.NONE), (10, Compression.NONE), (100, Compression.NONE), (100, Compression.LZ4),
            (100, Compression.ZSTD)]
    print(f"{args.records:,} records over {args.keys:,} keys, 100-byte values, 1% tombstones, 1 MiB segments")
    print(f"{'batch':>5} {'codec':>5} {'log MB':>7} {'after KB':>8} {'segs':>4} {'prepare s':>9} {'MB/s':>6} "
          f"{'krec/s':>6} {'of it map s':>11} {'grab ms':>7} {'commit ms':>9}")
    try:
        for per_batch, codec in ([] if args.latency_only else rows):
            r = run(root, args.records, args.keys, per_batch, codec)
            print(f"{r['batch']:>5} {r['codec']:>5} {r['log_mb']:>7.1f} {r['after_kb']:>8.0f} {r['segments']:>4} "
                  f"{r['prepare_s']:>9.2f} {r['mb_s']:>6.1f} {r['krec_s']:>6.0f} {r['map_s']:>11.2f} "
                  f"{r['grab_ms']:>7.1f} {r['commit_ms']:>9.1f}")
        print()
        print(f"{'append latency (ms)':<29} {'n':>6} {'p50':>6} {'p99':>6} {'max':>6} {'x alone':>7} {'cleaning s':>10}")
        default_interval = sys.getswitchinterval()

        def row(label: str, mode: str | None, interval: float, alone_p99: float | None, alone_s: float = 2.0):
            sys.setswitchinterval(interval)
            lat, took = append_latencies(root, args.records, args.keys, mode, alone_s)
            sys.setswitchinterval(default_interval)
            q = statistics.quantiles(lat, n=100)
            ratio = q[98] / alone_p99 if alone_p99 else 1.0
            print(f"{label:<29} {len(lat):>6} {q[49]:>6.3f} {q[98]:>6.3f} {max(lat):>6.2f} {ratio:>7.2f} "
                  f"{took if mode else 0:>10.2f}")
            return q[98], took, ratio

        alone_p99, _, _ = row("owner thread alone", None, default_interval, None)
        row("prepare in a worker thread", "thread", default_interval, alone_p99)
        row("  same, switchinterval 0.5ms", "thread", 0.0005, alone_p99)
        # the machine may be shared: alone and process rows alternate, each alone row as long
        # as the cleaning before it, and each process row is compared with the alone row just
        # before it
        ratios, controls, took = [], [], 2.0
        for _ in range(args.rounds):
            alone_p99, _, _ = row("owner thread alone", None, default_interval, None, took)
            _, took, ratio = row("prepare in a worker process", "process", default_interval, alone_p99)
            ratios.append(ratio)
            controls.append(row("  control: a nice-10 CPU burner", "burner", default_interval, alone_p99, took)[2])
        for label, rs in (("worker process", ratios), ("CPU burner (control)", controls)):
            print(f"{label} p99 / alone p99: median {statistics.median(rs):.2f} over {len(rs)} rounds "
                  f"({', '.join(f'{r:.2f}' for r in rs)})")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
