"""The side-by-side benchmark's memory figure with Kafka's heap sized to the workload too
(issue 15): ``make bench-memory``, writes bench/results/memory.md and .json.

Run: ``.venv/bin/python -m bench.suites.memory [--repetitions 3] [--heap 256m]``.

bench/suites/side_by_side.py reports the peak RSS of Kafka started as kafka-server-start.sh
starts it, ``-Xmx1G -Xms1G``: the JVM touches most of a pre-sized heap, so that figure is
mostly the heap setting.  Here each repetition runs the same throughput workloads
(side_by_side.throughput_workloads at its --quick volumes: confluent-kafka and Java
ProducerPerformance produces, both consumers) on three fresh brokers one after the other,
the order rotating per repetition:

* kbroker;
* Kafka with kafka-server-start.sh's heap (-Xmx1G -Xms1G);
* Kafka with ``-Xmx<heap> -Xms<heap>`` (default 256m), a heap sized to these volumes.

Figure: the broker process's VmHWM over the workloads (reset after start-up and an
unmeasured warm-up), MiB; throughput of each workload is recorded too, which tells
whether the smaller heap cost Kafka speed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import history, kafka_dist, machine, paired, workloads
from bench.harness.common import COMMON, RESULTS, compile_kbroker
from bench.harness.kafka_dist import KafkaProcess
from bench.suites import side_by_side
from bench.suites.side_by_side import QUICK
from tests.support.broker_process import BrokerProcess

MIB = 1024 * 1024


def one_broker(name: str, make: Any, tmp: Path) -> dict[str, Any]:
    broker = make(tmp / name.replace(" ", "_")).start()
    out: dict[str, Any] = {"throughput": {}}
    try:
        pid = broker.proc.pid
        side_by_side.warm_up(broker.bootstrap, QUICK)
        workloads.reset_peak_rss(pid)
        for w in side_by_side.throughput_workloads(QUICK):
            w.prepare(broker.bootstrap)
            out["throughput"].update(w.run(broker.bootstrap))
        out["peak_rss_mib"] = workloads.peak_rss(pid) / MIB
        paired.log(f"{name}: peak RSS {out['peak_rss_mib']:.0f} MiB")
    finally:
        broker.stop()
        shutil.rmtree(tmp / name.replace(" ", "_"), ignore_errors=True)
    return out


def markdown(results: dict[str, Any]) -> str:
    reps, names = results["repetitions"], results["brokers"]
    out = ["# Peak memory: kbroker vs Kafka with its default heap and with a heap sized to the workload", "",
           f"Made by `make bench-memory` (bench/suites/memory.py), finished {results['finished']}, "
           f"{len(reps)} repetition(s). Workloads: bench/suites/side_by_side.py's throughput workloads 1-3 at its "
           "--quick volumes (128 MiB consume source, 128 MiB per other 1 KiB produce, 300,000 records per 100 B "
           "produce), each broker fresh; VmHWM reset after start-up and a warm-up. Cells: median (min–max).", "",
           "| broker | peak RSS MiB | kbroker / this |", "|---|---|---|"]
    for n in names:
        rss = [r[n]["peak_rss_mib"] for r in reps if n in r]
        ratio = [r[names[0]]["peak_rss_mib"] / r[n]["peak_rss_mib"] for r in reps if n in r and names[0] in r]
        out.append(f"| {n} | {paired.cell(rss, '.0f')} | {paired.cell(ratio)} |")
    out += ["", "Throughput of each workload on each broker (records/s, median), to show what the smaller heap "
            "cost Kafka:", "", "| workload | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    fids = sorted({f for r in reps for n in names if n in r for f in r[n]["throughput"]})
    for fid in fids:
        cells = []
        for n in names:
            xs = [r[n]["throughput"][fid] for r in reps if fid in r.get(n, {}).get("throughput", {})]
            cells.append(f"{statistics.median(xs):,.0f}" if xs else "failed")
        out.append(f"| {fid} | " + " | ".join(cells) + " |")
    out += ["", "## Machine", ""] + [f"- {k}: {v}" for k, v in results["machine"].items()]
    return "\n".join(out) + "\n"


def history_row(results: dict[str, Any]) -> dict[str, str]:
    """This run's row of the history table: median peak RSS per broker, MiB."""
    reps = results["repetitions"]
    row = {"finished": results["finished"], "kbroker": history.commit_of(results["machine"]), "reps": str(len(reps))}
    for n in results["brokers"]:
        row[f"{n} MiB"] = history.median_cell([r[n]["peak_rss_mib"] for r in reps if n in r], ".0f")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--heap", default="256m", help="the sized Kafka heap (-Xmx and -Xms)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    sized = f"Kafka -Xmx{args.heap} -Xms{args.heap}"
    makers = {
        "kbroker": lambda d: BrokerProcess(d, overrides=COMMON),
        "Kafka -Xmx1G -Xms1G": lambda d: KafkaProcess(d, overrides=COMMON),
        sized: lambda d: KafkaProcess(d, overrides=COMMON, heap=[f"-Xmx{args.heap}", f"-Xms{args.heap}"]),
    }
    names = list(makers)
    results: dict[str, Any] = {"brokers": names, "repetitions": [], "machine": machine.facts(
        Path("/tmp"), kafka_dist.kafka_version(), kafka_dist.java_version())}
    compile_kbroker()
    args.out.mkdir(parents=True, exist_ok=True)
    for i in range(args.repetitions):
        order = names[i % 3:] + names[:i % 3]
        tmp = Path(tempfile.mkdtemp(prefix="kbroker-memory-"))
        rep: dict[str, Any] = {"order": order}
        try:
            for n in order:
                try:
                    rep[n] = one_broker(n, makers[n], tmp)
                except Exception as e:  # keep the others
                    paired.log(f"{n}: FAILED: {e}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        results["repetitions"].append(rep)
        results["finished"] = time.strftime("%Y-%m-%d %H:%M %Z")
        (args.out / "memory.json").write_text(json.dumps(results, indent=1) + "\n")
        history.write_report(args.out / "memory.md", markdown(results), history_row(results), same_run=i > 0)
    print((args.out / "memory.md").read_text())


if __name__ == "__main__":
    main()
