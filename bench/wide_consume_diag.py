"""Issue 15 diagnosis of the cost curves' consume at many partitions: both brokers side by
side (bench/paired.py), each gets one topic of ``--partitions`` partitions holding ``--mib``
MiB of 1 KiB records produced round-robin (the cost curves' point), then a confluent-kafka
consumer assigned every partition at OFFSET_BEGINNING (bench/workloads.py ``consume``'s
settings) reads it ``--consumes`` times per broker, alternating.  Per consume:

* seconds, the time to the first record and to 10 / 50 / 90 % of the records;
* from librdkafka's statistics (one snapshot every ``--stats-ms``, the last one parsed; a
  stats JSON of 10,000 partitions is ~10 MB, so the interval is long): requests sent per
  API (Fetch, ListOffsets), the broker round-trip time (avg / p99 / max, ms), and the
  broker's own request counts and total-time sums from kbroker's /metrics when it is
  kbroker.

    python -m bench.wide_consume_diag [--partitions 10000] [--mib 32] [--reps 1] [--consumes 3]
        [--connect-first] [--offset-zero] [--debug protocol] [--stats-ms 3000]

What it showed (2026-11-24, 10,000 partitions, 32 MiB; bench/results/cost_curves.md, "Consume
at 10,000 partitions"): assigned at OFFSET_BEGINNING, librdkafka 2.16 asks for each
partition's offset with a ListOffsets request of its own, and some of those requests leave
its queue seconds after the others (``--debug protocol``: 9,936 sent at once, the last 64
14 s later on kbroker; 837 sent 12 s late on Kafka; 64-7,594 per consume, 1-14 s late, on
either broker, also with ``--connect-first``).  The records of those partitions arrive
last, so a consume took 3-15 s on either broker whatever the broker did; at offset 0
(``--offset-zero``, no ListOffsets) the same consume takes 0.7-1.5 s on both.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from bench import cost_curves, paired, workloads


def consume_timeline(bootstrap: str, topic: str, n: int, partitions: int, stats_ms: int,
                     debug: str = "", connect_first: bool = False,
                     offset: int = OFFSET_BEGINNING) -> dict[str, Any]:
    last_stats: list[str] = []
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": "bench-unused", "enable.auto.commit": False}
    if debug:
        conf["debug"] = debug
    if stats_ms:
        conf.update({"statistics.interval.ms": stats_ms, "stats_cb": lambda s: last_stats.append(s)})
    c = Consumer(conf)
    if connect_first:
        c.list_topics(topic, timeout=60)
    marks = {0.1: None, 0.5: None, 0.9: None}
    first = None
    t0 = time.perf_counter()
    c.assign([TopicPartition(topic, p, offset) for p in range(partitions)])
    got = 0
    timeline: list[tuple[float, int]] = []   # (seconds since assign, records so far)
    deadline = time.monotonic() + 600
    while got < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"consume from {bootstrap} stalled at {got} of {n}")
        ms = c.consume(min(10_000, n - got), 1.0)
        for m in ms:
            if m.error() is not None:
                raise RuntimeError(f"consume error: {m.error()}")
        if ms and first is None:
            first = time.perf_counter() - t0
        got += len(ms)
        if ms:
            timeline.append((round(time.perf_counter() - t0, 3), got))
        for k in marks:
            if marks[k] is None and got >= k * n:
                marks[k] = time.perf_counter() - t0
    elapsed = time.perf_counter() - t0
    out: dict[str, Any] = {"seconds": round(elapsed, 3), "first_s": round(first or 0, 3),
                           **{f"p{int(k * 100)}_s": round(v or 0, 3) for k, v in marks.items()},
                           "timeline": timeline}
    if stats_ms:
        k = len(last_stats)
        end = time.monotonic() + 2 * stats_ms / 1000 + 5
        while len(last_stats) == k and time.monotonic() < end:
            c.poll(0.05)
        if last_stats:
            s = json.loads(last_stats[-1])
            b = next(v for v in s["brokers"].values() if v["nodeid"] >= 0)
            out.update({"req": {k: v for k, v in b["req"].items() if v},
                        "rtt_avg_ms": round(b["rtt"]["avg"] / 1000, 2), "rtt_p99_ms": round(b["rtt"]["p99"] / 1000, 2),
                        "rtt_max_ms": round(b["rtt"]["max"] / 1000, 2),
                        "outbuf_latency_avg_ms": round(b["outbuf_latency"]["avg"] / 1000, 2),
                        "outbuf_latency_max_ms": round(b["outbuf_latency"]["max"] / 1000, 2)})
    c.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--mib", type=int, default=32)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--consumes", type=int, default=3, help="consumes per broker per repetition, alternating")
    ap.add_argument("--stats-ms", type=int, default=0, help="librdkafka statistics interval (0: none)")
    ap.add_argument("--connect-first", action="store_true",
                    help="the consumer fetches the topic's metadata before assign() and the clock")
    ap.add_argument("--offset-zero", action="store_true",
                    help="assign every partition at offset 0 (no ListOffsets) instead of OFFSET_BEGINNING")
    ap.add_argument("--debug", default="", help="librdkafka debug contexts (logged to stderr)")
    ap.add_argument("--out", default=str(cost_curves.RESULTS / "wide_consume_diag.json"))
    args = ap.parse_args()
    n = args.mib * paired.MIB // 1024
    topic = f"p{args.partitions}"

    def body(i: int, order: list[str], tmp: Path) -> dict[str, Any]:
        rep: dict[str, Any] = {"consumes": {b: [] for b in order}}
        with paired.both_brokers(tmp, order) as brokers:
            for b in order:
                rep.setdefault("create_s", {})[b] = cost_curves.create_topic(brokers[b].bootstrap, topic, args.partitions)
                workloads.produce(brokers[b].bootstrap, topic, n, 1024, acks="1", partitions=args.partitions)
            for _ in range(args.consumes):
                for b in order:
                    pid = brokers[b].proc.pid
                    cpu0 = workloads.cpu_seconds(pid)
                    r = consume_timeline(brokers[b].bootstrap, topic, n, args.partitions, args.stats_ms,
                                         args.debug, args.connect_first,
                                         0 if args.offset_zero else OFFSET_BEGINNING)
                    r["broker_cpu_s"] = round(workloads.cpu_seconds(pid) - cpu0, 2)
                    r["load"] = os.getloadavg()[0]
                    rep["consumes"][b].append(r)
                    paired.log(f"{b}: " + str({k: v for k, v in r.items() if k != "timeline"}))
                    paired.log(f"{b}: timeline (s, records) " + str(r["timeline"][:: max(1, len(r["timeline"]) // 30)]))
        return rep

    reps = paired.repetitions(args.reps, body)
    Path(args.out).write_text(json.dumps(reps, indent=1))
    for rep in reps:
        for k, (a, b) in enumerate(zip(rep["consumes"][paired.KB], rep["consumes"][paired.KAFKA], strict=True)):
            paired.log(f"consume {k}: kbroker/Kafka MB/s ratio {b['seconds'] / a['seconds']:.2f} "
                       f"(first record {a['first_s']} vs {b['first_s']} s)")


if __name__ == "__main__":
    main()
