"""End-to-end latency (bench/workloads.py ``latency``) on two kbroker checkouts and Apache
Kafka started side by side, the three measured in turn (order rotating per round) so that
each round's figures are taken under the same background load: issue 15's before/after of
a change on the e2e p99 at 10,000 records/s.

    python -m bench.latency_before_after --before DIR --after DIR [--rate 10000] [--rounds 3]

DIR: a tree of kbroker (``git archive REV | tar -x -C DIR``).  Prints one line per
measurement and, at the end, the JSON of every figure and the ratios per round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench import kafka_dist, workloads
from bench.kafka_dist import KafkaProcess
from bench.paired import log
from bench.side_by_side import COMMON, compile_kbroker
from bench.zero_copy_bench import CheckoutBroker


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, required=True)
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    compile_kbroker()
    tmp = Path(tempfile.mkdtemp(prefix="kbroker-lat-ba-"))
    names = ["before", "after", "Kafka"]
    brokers: dict[str, Any] = {}
    rounds: list[dict[str, Any]] = []
    try:
        brokers["before"] = CheckoutBroker(args.before.resolve(), tmp / "before", overrides=COMMON).start()
        brokers["after"] = CheckoutBroker(args.after.resolve(), tmp / "after", overrides=COMMON).start()
        brokers["Kafka"] = KafkaProcess(tmp / "kafka", overrides=COMMON, heap=kafka_dist.SERVER_HEAP).start()
        for b in names:   # warm-up: the JIT, kbroker's lazily compiled codecs
            workloads.create_topic(brokers[b].bootstrap, "warm-up")
            workloads.produce(brokers[b].bootstrap, "warm-up", 20_000)
            workloads.consume(brokers[b].bootstrap, "warm-up", 20_000)
        for r in range(args.rounds):
            order = names[r % 3:] + names[:r % 3]
            figs: dict[str, Any] = {"order": order}
            for b in order:
                topic = f"lat-{r}"
                workloads.create_topic(brokers[b].bootstrap, topic)
                lat = workloads.latency(brokers[b].bootstrap, topic, args.rate, args.seconds, args.warmup)
                figs[b] = {str(q): round(workloads.percentile(lat, q), 3) for q in (50, 99, 99.9)}
                figs[b]["load"] = round(os.getloadavg()[0], 2)
                log(f"round {r + 1} {b}: {figs[b]}")
            rounds.append(figs)
    finally:
        for b in brokers.values():
            b.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    out: dict[str, Any] = {"rounds": rounds, "ratios": {}}
    for q in ("50", "99", "99.9"):
        for a, b in (("before", "Kafka"), ("after", "Kafka"), ("after", "before")):
            xs = [r[a][q] / r[b][q] for r in rounds]
            out["ratios"][f"p{q} {a}/{b}"] = {"median": round(statistics.median(xs), 3),
                                              "all": [round(x, 3) for x in xs]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
