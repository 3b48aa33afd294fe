"""What freezing the garbage collector's long-lived objects buys (issue 15, kbroker/app/gc_freeze.py).

Two kbroker processes side by side, the same settings (bench/suites/side_by_side.py's COMMON) except
``kbroker.gc.freeze.enable`` (true / false).  Each gets a topic of ``--partitions`` partitions
holding ``--mib`` MiB of 1 KiB records (the cost curves' 10,000-partition point, produced by
one connection as bench/suites/cost_curves.py does), then waits until its CPU settles (below 0.05
s per second for 3 s; the background fsyncs of the new topic's leader-epoch checkpoints and
partition.metadata files, mostly waiting on the disk, may go on for both), then a
confluent-kafka consumer reads the whole
topic from offset 0 (``workloads.consume(offset=0, connect_first=True)``), ``--consumes``
times per broker, alternating between the two.  Per consume: seconds and broker CPU seconds
(/proc).  Ratios are freeze/no-freeze of medians (lower is better for both).

    python -m bench.suites.gc_freeze [--partitions 10000] [--mib 32] [--consumes 6]

Results: bench/results/gc_freeze.json (raw) and the figures printed; the findings are in
bench/results/profile.md ("Full garbage collections at 10,000 partitions").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import workloads
from bench.harness.common import COMMON, RESULTS, compile_kbroker
from bench.harness.paired import MIB, log
from bench.suites import cost_curves
from tests.support.broker_process import BrokerProcess

SETTINGS = {"freeze": "true", "no freeze": "false"}


def wait_quiet(pid: int, timeout_s: float = 600) -> float:
    """Seconds until the process used under 0.05 CPU-seconds per second for 3 s in a row."""
    t0 = time.monotonic()
    quiet = 0
    while time.monotonic() - t0 < timeout_s and quiet < 3:
        c0 = workloads.cpu_seconds(pid)
        time.sleep(1)
        quiet = quiet + 1 if workloads.cpu_seconds(pid) - c0 < 0.05 else 0
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--mib", type=int, default=32)
    ap.add_argument("--consumes", type=int, default=6, help="consumes per broker, alternating")
    ap.add_argument("--out", type=Path, default=RESULTS / "gc_freeze.json")
    args = ap.parse_args()
    compile_kbroker()
    n = args.mib * MIB // 1024
    tmp = Path(tempfile.mkdtemp(prefix="kbroker-gc-freeze-", dir=os.environ.get("BENCH_DATA_DIR")))
    brokers: dict[str, BrokerProcess] = {}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in SETTINGS}
    try:
        for name, enable in SETTINGS.items():
            brokers[name] = BrokerProcess(tmp / name.replace(" ", "-"),
                                          overrides={**COMMON, "kbroker.gc.freeze.enable": enable}).start()
        for name, b in brokers.items():
            created = cost_curves.create_topic(b.bootstrap, "wide", args.partitions)
            produced = cost_curves.produce_many(b.bootstrap, "wide", n, 1, args.partitions)
            log(f"{name}: {args.partitions:,} partitions created in {created:.1f} s, {args.mib} MiB produced "
                f"in {produced:.1f} s")
        for name, b in brokers.items():
            log(f"{name}: CPU settled after {wait_quiet(b.proc.pid):.0f} s")
        for i in range(args.consumes):
            for name in (list(SETTINGS) if i % 2 == 0 else list(reversed(SETTINGS))):
                b = brokers[name]
                cpu0 = workloads.cpu_seconds(b.proc.pid)
                s = workloads.consume(b.bootstrap, "wide", n, args.partitions, offset=0, connect_first=True)
                run = {"seconds": s, "broker_cpu_s": workloads.cpu_seconds(b.proc.pid) - cpu0,
                       "load": os.getloadavg()[0]}
                runs[name].append(run)
                log(f"{name}: consume {i}: {s:.3f} s, broker CPU {run['broker_cpu_s']:.2f} s, load {run['load']:.1f}")
    finally:
        for b in brokers.values():
            b.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    summary: dict[str, Any] = {}
    for figure in ("seconds", "broker_cpu_s"):
        med = {name: statistics.median(r[figure] for r in rs) for name, rs in runs.items()}
        summary[figure] = {**med, "freeze/no freeze": med["freeze"] / med["no freeze"]}
        log(f"{figure}: median freeze {med['freeze']:.3f}, no freeze {med['no freeze']:.3f}, "
            f"ratio {summary[figure]['freeze/no freeze']:.2f}")
    args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "runs": runs,
                                    "summary": summary, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())},
                                   indent=1) + "\n")


if __name__ == "__main__":
    main()
