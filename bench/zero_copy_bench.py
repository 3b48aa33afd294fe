"""Consume throughput before and after zero-copy Fetch (issue 15), beside Apache Kafka.

Run: ``.venv/bin/python -m bench.zero_copy_bench --before ROOT [--after ROOT] [--mib N]
[--repetitions N] [--out FILE]``.

``--before`` / ``--after`` are checkouts of kbroker (``git worktree add /tmp/wt-before
<commit>``), each run with this venv's interpreter and the checkout first on ``sys.path``
(the default ``--after`` is this checkout).  Three brokers run at once, fresh data dirs:
kbroker before, kbroker after, Kafka (bench/kafka_dist.py, the same single-node settings as
``make bench``).  Each gets the same topic (8 partitions, ``--mib`` MiB of 1 KiB records,
produced once by confluent-kafka, unmeasured); then, per repetition and in an order rotated
each repetition, the two consume workloads of ``make bench`` run on each broker one after
the other: a confluent-kafka consumer (assign, from the beginning) and Java
``ConsumerPerformance`` (a group).  Figures: records/s and the broker's CPU seconds per
workload; the report gives medians (min-max) and the ratios after/before and after/Kafka of
each repetition, summarised.  Everything reads from the page cache (the data was just
written), as in ``make bench``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import kafka_dist, machine, workloads
from bench.kafka_dist import KafkaProcess
from bench.side_by_side import COMMON
from tests.compat.broker_process import BrokerProcess

MIB = 1 << 20
TOPIC = "zero-copy"


class CheckoutBroker(BrokerProcess):
    """kbroker from another checkout: ``python -c`` puts it first on sys.path, then runs
    ``-m kbroker`` as BrokerProcess does."""

    def __init__(self, root: Path, *args: Any, **kw: Any):
        super().__init__(*args, **kw)
        self.root = root

    def command(self) -> list[str]:
        args = super().command()
        boot = (f"import sys, runpy; sys.path.insert(0, {str(self.root)!r}); "
                "runpy.run_module('kbroker', run_name='__main__', alter_sys=True)")
        return [args[0], "-c", boot, *args[args.index("serve"):]]


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _consume_workloads(n: int) -> dict[str, Any]:
    return {
        "consume.confluent": lambda b: n / workloads.consume(b, TOPIC, n),
        "consume.java": lambda b: kafka_dist.consumer_performance(b, TOPIC, n)[1],
    }


def run(before: Path, after: Path, mib: int, repetitions: int, tmp: Path) -> dict[str, Any]:
    for root in (before, after):
        for package in ("kbroker", "wire", "log", "groups", "cluster"):
            if (root / package).is_dir():
                compileall.compile_dir(str(root / package), quiet=1)
    n = mib * MIB // 1024
    brokers: dict[str, Any] = {}
    results: dict[str, Any] = {"records": n, "mib": mib, "values": {}, "cpu": {}, "order": []}
    try:
        brokers["kbroker-before"] = CheckoutBroker(before, tmp / "before", overrides=COMMON).start()
        brokers["kbroker-after"] = CheckoutBroker(after, tmp / "after", overrides=COMMON).start()
        kafka = KafkaProcess(tmp / "kafka", overrides=COMMON)
        kafka.format()
        brokers["kafka"] = kafka.start()
        for name, b in brokers.items():
            workloads.create_topic(b.bootstrap, TOPIC)
            secs = workloads.produce(b.bootstrap, TOPIC, n)
            _log(f"{name}: produced {mib} MiB in {secs:.1f} s (unmeasured)")
        names = list(brokers)
        for i in range(repetitions):
            order = names[i % 3:] + names[:i % 3]
            results["order"].append(order)
            for wname, work in _consume_workloads(n).items():
                for name in order:
                    pid = brokers[name].proc.pid
                    cpu0 = workloads.cpu_seconds(pid)
                    value = work(brokers[name].bootstrap)
                    cpu = workloads.cpu_seconds(pid) - cpu0
                    results["values"].setdefault(wname, {}).setdefault(name, []).append(value)
                    results["cpu"].setdefault(wname, {}).setdefault(name, []).append(cpu)
                    _log(f"rep {i + 1} {wname} {name}: {value:,.0f} records/s, broker CPU {cpu:.1f} s")
    finally:
        for b in brokers.values():
            b.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def _cell(values: list[float], fmt: str = "{:,.0f}") -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def report(results: dict[str, Any], before_commit: str, after_commit: str) -> str:
    lines = [
        "# Zero-copy Fetch: consume before and after, beside Kafka (issue 15)",
        "",
        f"`python -m bench.zero_copy_bench`, {len(results['order'])} repetitions, one topic of 8 partitions "
        f"holding {results['mib']} MiB of 1 KiB records ({results['records']:,} records) per broker, read "
        "from the page cache. kbroker before = "
        f"`{before_commit}`, after = `{after_commit}`; Kafka {kafka_dist.kafka_version()} (KRaft, -Xmx1G). "
        "The three brokers ran at once, each workload on one broker at a time, order rotated per repetition. "
        f"Machine: {machine.describe() if hasattr(machine, 'describe') else 'see bench/results/side_by_side.md'}; "
        "it was loaded by other developers' test runs throughout, so single figures are noisy: read the "
        "ratios of a repetition (taken within a minute of each other).",
        "",
        "| workload | kbroker before (records/s) | kbroker after | Kafka | after/before | after/Kafka "
        "| before/Kafka |",
        "|---|---|---|---|---|---|---|",
    ]
    for wname, per in results["values"].items():
        b, a, k = per["kbroker-before"], per["kbroker-after"], per["kafka"]
        ab = [x / y for x, y in zip(a, b, strict=True)]
        ak = [x / y for x, y in zip(a, k, strict=True)]
        bk = [x / y for x, y in zip(b, k, strict=True)]
        lines.append(f"| {wname} | {_cell(b)} | {_cell(a)} | {_cell(k)} | {_cell(ab, '{:.2f}')} "
                     f"| {_cell(ak, '{:.2f}')} | {_cell(bk, '{:.2f}')} |")
    lines += ["", "Broker CPU seconds per workload (median (min-max)):", "",
              "| workload | kbroker before | kbroker after | Kafka |", "|---|---|---|---|"]
    for wname, per in results["cpu"].items():
        lines.append(f"| {wname} | {_cell(per['kbroker-before'], '{:.1f}')} | {_cell(per['kbroker-after'], '{:.1f}')} "
                     f"| {_cell(per['kafka'], '{:.1f}')} |")
    return "\n".join(lines) + "\n"


def _commit(root: Path) -> str:
    import subprocess
    r = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="checkout of kbroker before the change")
    ap.add_argument("--after", type=Path, default=machine.ROOT, help="checkout after (default: this one)")
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--out", type=Path, default=machine.ROOT / "bench" / "results" / "zero_copy_consume")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="zero-copy-bench-"))
    results = run(args.before.resolve(), args.after.resolve(), args.mib, args.repetitions, tmp)
    results["before"], results["after"] = _commit(args.before), _commit(args.after)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    text = report(results, results["before"], results["after"])
    args.out.with_suffix(".md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
