"""Produce and consume throughput of a real kbroker process with confluent-kafka (issue 4).

Run: ``.venv/bin/python -m bench.suites.produce_consume [--mb 200] [--profile]``.

* produce: 1 KiB values (no key, no compression) round-robin over 8 partitions, producer
  ``linger.ms=5``, ``batch.size=1048576``, ``acks=1``; timed from the first ``produce()``
  to the end of ``flush()``.  Reports MB/s (value bytes, 10^6) and records/s.
* consume: one consumer ``assign()``ed to all 8 partitions from the beginning, timed until
  every record arrived.  Reports MB/s and records/s.

The broker runs as ``python -m kbroker serve`` on 127.0.0.1 with a temporary data dir, as
the compat tests start it; the workloads are bench/harness/workloads.py's, which
bench/suites/side_by_side.py also runs against Apache Kafka.  ``--profile`` runs it under cProfile and prints where the
broker's (event-loop thread's) time went.  Figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import pstats
import shutil
import tempfile
from pathlib import Path

from bench.harness.workloads import PARTITIONS, consume, cpu_seconds, create_topic, produce
from tests.support.broker_process import BrokerProcess

RECORD_BYTES = 1024
TOPIC = "bench"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200.0, help="value megabytes to produce (10^6)")
    ap.add_argument("--profile", action="store_true", help="run the broker under cProfile")
    ap.add_argument("--top", type=int, default=25, help="profile lines to print")
    args = ap.parse_args()
    n = int(args.mb * 1_000_000 / RECORD_BYTES)
    mb = n * RECORD_BYTES / 1e6
    tmp = Path(tempfile.mkdtemp(prefix="kbroker-bench-"))
    prof = tmp / "broker.prof"
    python_args = ("-m", "cProfile", "-o", str(prof)) if args.profile else ()
    broker = BrokerProcess(tmp / "data", python_args=python_args).start()
    try:
        create_topic(broker.bootstrap, TOPIC)
        print(f"records: {n} x {RECORD_BYTES} B over {PARTITIONS} partitions = {mb:.1f} MB"
              f"{' (broker under cProfile)' if args.profile else ''}")
        pid = broker.proc.pid
        cpu0 = cpu_seconds(pid)
        t = produce(broker.bootstrap, TOPIC, n, RECORD_BYTES)
        cpu1 = cpu_seconds(pid)
        print(f"produce: {t:6.2f} s  {mb / t:7.1f} MB/s  {n / t:9.0f} records/s  "
              f"broker CPU {cpu1 - cpu0:5.2f} s  (linger.ms=5, batch.size=1 MiB, acks=1)")
        t = consume(broker.bootstrap, TOPIC, n)
        cpu2 = cpu_seconds(pid)
        print(f"consume: {t:6.2f} s  {mb / t:7.1f} MB/s  {n / t:9.0f} records/s  "
              f"broker CPU {cpu2 - cpu1:5.2f} s  (assign, 8 partitions)")
        data_bytes = sum(f.stat().st_size for f in (tmp / "data").rglob("*.log"))
        print(f"on disk: {data_bytes / 1e6:.1f} MB of .log segments")
    finally:
        broker.stop(timeout_s=120)
    if args.profile:
        if prof.exists():
            print()
            pstats.Stats(str(prof)).sort_stats("tottime").print_stats(args.top)
        else:
            print("no profile written (the broker did not exit cleanly)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
