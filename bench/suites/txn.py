"""Transactional produce, kbroker beside Apache Kafka (issue 16): ``make bench-txn``, writes
bench/results/txn.md and .json.

Run: ``.venv/bin/python -m bench.suites.txn [--repetitions 3] [--quick]``.

The frame is bench/harness/paired.py's: every repetition starts both brokers fresh, warms them up,
runs each workload on one and then the other (order alternating per repetition); ratios
kbroker/Kafka within a repetition, median (min-max) of the repetitions.

Workloads, both Kafka's Java ProducerPerformance (kafka-producer-perf-test.sh), unthrottled,
100-byte records to a topic of 8 partitions, ``linger.ms=5``, ``batch.size=65536``,
``acks=all``, its own records/s figure:

1. **transactional**: ``--transactional-id`` with ``--transaction-duration-ms 100``: a
   commit every 100 ms (InitProducerId, then per transaction AddPartitionsToTxn, the
   produce requests, EndTxn and the COMMIT markers on every partition);
2. **idempotent** (the same producer without transactions), for scale: what the
   transactions cost on each broker.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import history, kafka_dist, machine, paired, workloads
from bench.harness.common import RESULTS
from bench.harness.paired import KAFKA, KB

PARTITIONS = 8
RECORD_BYTES = 100
PRODUCER = {"linger.ms": "5", "batch.size": "65536", "acks": "all"}


@dataclass(frozen=True)
class Sizes:
    repetitions: int
    records: int


FULL = Sizes(3, 300_000)
QUICK = Sizes(1, 50_000)


def perf(bootstrap: str, topic: str, n: int, txn: bool) -> float:
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(n),
            "--record-size", str(RECORD_BYTES), "--throughput", "-1"]
    if txn:
        args += ["--transactional-id", f"perf-{topic}", "--transaction-duration-ms", "100"]
    args += ["--command-property", *(f"{k}={v}" for k, v in PRODUCER.items())]
    out = kafka_dist._run_tool("org.apache.kafka.tools.ProducerPerformance", args, 900)
    matches = [m for m in kafka_dist._PRODUCER_SUMMARY.finditer(out) if int(m.group(1)) == n]
    if not matches:
        raise RuntimeError(f"ProducerPerformance gave no summary for {n} records:\n{out[-3000:]}")
    return float(matches[-1].group(2))


def run(sizes: Sizes, data_dir: Path | None) -> list[dict[str, Any]]:
    def body(i: int, order: list[str], tmp: Path) -> dict[str, Any]:
        rep: dict[str, Any] = {}
        with paired.both_brokers(tmp, order) as brokers:
            for name, txn in (("transactional", True), ("idempotent", False)):
                topic = f"{name}-{i}"
                for b in order:
                    workloads.create_topic(brokers[b].bootstrap, topic, PARTITIONS)

                def measure(bootstrap: str, _pid: int, topic: str = topic, txn: bool = txn
                            ) -> dict[str, float]:
                    return {f"{topic.rsplit('-', 1)[0]} records/s": perf(bootstrap, topic,
                                                                         sizes.records, txn)}

                paired.run_pair(name, measure, order, brokers, rep)
        return rep

    return paired.repetitions(sizes.repetitions, body, data_dir)


def report(reps: list[dict[str, Any]], sizes: Sizes, facts: dict[str, str]) -> str:
    lines = ["# Transactional produce: kbroker beside Apache Kafka", "",
             f"Java ProducerPerformance, {sizes.records:,} records of {RECORD_BYTES} B, "
             f"{PARTITIONS} partitions, {', '.join(f'{k}={v}' for k, v in PRODUCER.items())}; "
             f"{len(reps)} repetition(s), median (min-max).  Produced by bench/suites/txn.py.", "",
             "| workload | kbroker records/s | Kafka records/s | kbroker/Kafka |",
             "|---|---|---|---|"]
    for fid, title in (("transactional records/s", "transactional (commit every 100 ms)"),
                       ("idempotent records/s", "idempotent, no transactions")):
        lines.append(f"| {title} | {paired.cell(paired.values(reps, fid, KB), ',.0f')} | "
                     f"{paired.cell(paired.values(reps, fid, KAFKA), ',.0f')} | "
                     f"{paired.cell(paired.ratios(reps, fid))} |")
    lines += ["", "Broker CPU seconds for the workload (user+system of the broker process):", "",
              "| workload | kbroker | Kafka |", "|---|---|---|"]
    for name in ("transactional", "idempotent"):
        cpu = {b: [r["cpu"][name][b] for r in reps if b in r.get("cpu", {}).get(name, {})]
               for b in (KB, KAFKA)}
        lines.append(f"| {name} | {paired.cell(cpu[KB])} | {paired.cell(cpu[KAFKA])} |")
    lines += ["", "Both producers are Kafka's Java client on the same 2 cores as the brokers; at "
              "these rates the client, not the broker, sets the pace (see the CPU seconds)."]
    failed = paired.failures(reps)
    if failed:
        lines += ["", "Failures:", *failed]
    lines += ["", "Machine:", *(f"- {k}: {v}" for k, v in facts.items()), ""]
    return "\n".join(lines)


def history_row(reps: list[dict[str, Any]], finished: str, facts: dict[str, str]) -> dict[str, str]:
    """This run's row of the history table: median ratios kbroker/Kafka of records/s."""
    return {"finished": finished, "kbroker": history.commit_of(facts), "reps": str(len(reps)),
            "transactional": history.median_cell(paired.ratios(reps, "transactional records/s")),
            "idempotent": history.median_cell(paired.ratios(reps, "idempotent records/s"))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--data-dir", type=Path)
    args = ap.parse_args()
    sizes = QUICK if args.quick else FULL
    if args.repetitions:
        sizes = Sizes(args.repetitions, sizes.records)
    facts = machine.facts(args.data_dir or Path("/tmp"), kafka_dist.kafka_version(),
                          kafka_dist.java_version())
    reps = run(sizes, args.data_dir)
    RESULTS.mkdir(exist_ok=True)
    finished = time.strftime("%Y-%m-%d %H:%M %Z")
    (RESULTS / "txn.json").write_text(json.dumps({"sizes": sizes.__dict__, "facts": facts, "finished": finished,
                                                  "repetitions": reps}, indent=2))
    text = report(reps, sizes, facts)
    history.write_report(RESULTS / "txn.md", text, history_row(reps, finished, facts))
    print(text)


if __name__ == "__main__":
    main()
