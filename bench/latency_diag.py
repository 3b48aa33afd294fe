"""Issue 15 diagnosis of the end-to-end p99 at 10,000 records/s: both brokers side by side
(bench/paired.py), bench/workloads.py ``latency`` on each, alternating, several times per
start; besides p50/p99/p99.9 it reports the producer's Produce round trip (librdkafka
statistics, avg/p99 us per window) and the broker's event-loop stalls are left to
bench/loop_probe.py.

    python -m bench.latency_diag [--rate 10000] [--seconds 15] [--pairs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from bench import paired, workloads

_RTTS: list[tuple[float, float]] = []   # (avg, p99) ms of the producer's broker rtt per stats window
_REAL_PRODUCER = workloads.Producer


def _producer_with_stats(conf: dict[str, Any]) -> Producer:
    """workloads.latency's producer, with librdkafka statistics every 1 s into _RTTS."""
    def cb(s: str) -> None:
        for b in json.loads(s)["brokers"].values():
            if b["nodeid"] >= 0 and b["rtt"]["cnt"]:
                _RTTS.append((b["rtt"]["avg"] / 1000, b["rtt"]["p99"] / 1000))
    return _REAL_PRODUCER({**conf, "statistics.interval.ms": 1000, "stats_cb": cb})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--reps", type=int, default=1)
    args = ap.parse_args()
    workloads.Producer = _producer_with_stats  # type: ignore[assignment]

    def body(i: int, order: list[str], tmp: Path) -> dict[str, Any]:
        rep: dict[str, Any] = {b: [] for b in order}
        with paired.both_brokers(tmp, order) as brokers:
            for k in range(args.pairs):
                for b in (order if k % 2 == 0 else order[::-1]):
                    topic = f"lat-{k}"
                    workloads.create_topic(brokers[b].bootstrap, topic)
                    _RTTS.clear()
                    rtts = _RTTS
                    lat = workloads.latency(brokers[b].bootstrap, topic, args.rate, args.seconds, args.warmup)
                    r = {q: round(workloads.percentile(lat, q), 2) for q in (50, 99, 99.9)}
                    r["produce_rtt_avg_ms"] = round(statistics.median(a for a, _ in rtts), 3) if rtts else None
                    r["produce_rtt_p99_ms"] = round(statistics.median(p for _, p in rtts), 3) if rtts else None
                    r["load"] = os.getloadavg()[0]
                    rep[b].append(r)
                    paired.log(f"{b}: {r}")
        return rep

    reps = paired.repetitions(args.reps, body)
    print(json.dumps(reps, indent=1))


if __name__ == "__main__":
    main()
