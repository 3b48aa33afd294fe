"""Small produce requests and wide fetches, kbroker beside Apache Kafka (issue 15):
``make bench-small-wide``, writes bench/results/small_wide.md and .json.

Run: ``.venv/bin/python -m bench.suites.small_wide [--repetitions 3] [--quick]``.

The frame is bench/harness/paired.py's: every repetition starts both brokers fresh, warms them up,
runs each workload on one and then the other (order alternating per repetition); ratios
kbroker/Kafka within a repetition, median (min-max) of the repetitions.

1. **small produce**: confluent-kafka, ``linger.ms=0``, ``acks=all``,
   ``enable.idempotence=true``, 100-byte values round-robin over a topic of 64 partitions.
   a. unthrottled: records/s from the first ``produce()`` to the end of ``flush()``, and the
      delivery-report latency of every record (``produce()`` call to its delivery callback;
      at saturation this includes the time a record waits in the client's queue, at most
      ``queue.buffering.max.messages`` = 10,000 records);
   b. at a fixed 2,000 records/s for 5 s (after 2 s at that rate, unmeasured): delivery-report
      latency p50/p99, where the queue is empty and each record is a request or nearly so.
2. **wide fetch**: a topic of 500 partitions pre-filled (untimed) with 2,000 records of 100 B
   each, in batches of at most 4 KiB; one confluent-kafka consumer ``assign()``ed to all 500
   from the beginning reads all 1,000,000: records/s from the first record received to the
   last.  The consumer takes at most 16 KiB per partition per fetch
   (``max.partition.fetch.bytes``), so each Fetch names all 500 partitions and returns
   ~8 MB, and its queue is large enough never to pause fetching (WIDE_CONSUMER).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from bench.harness import history, kafka_dist, machine, paired, workloads
from bench.harness.common import RESULTS
from bench.harness.paired import KAFKA, KB

SMALL_PARTITIONS = 64
WIDE_PARTITIONS = 500


@dataclass(frozen=True)
class Sizes:
    repetitions: int
    small_records: int
    fixed_rate: int
    fixed_s: float
    wide_per_partition: int


FULL = Sizes(3, 300_000, 2_000, 5.0, 2_000)
QUICK = Sizes(1, 50_000, 2_000, 2.0, 200)


def _small_producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all",
                     "enable.idempotence": True, "queue.buffering.max.messages": 10_000})


def small_produce(bootstrap: str, topic: str, n: int) -> dict[str, float]:
    """Unthrottled idempotent produce of ``n`` 100-byte records: records/s and delivery p50/p99 ms."""
    value = os.urandom(100)
    lat: list[float] = []
    errors: list[str] = []

    def delivered(t0: float, err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))
        lat.append(time.perf_counter() - t0)

    p = _small_producer(bootstrap)
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % SMALL_PARTITIONS,
                          on_delivery=partial(delivered, time.perf_counter()))
                break
            except BufferError:
                p.poll(0.001)
        p.poll(0)
    left = p.flush(300)
    elapsed = time.perf_counter() - start
    if left or errors or len(lat) != n:
        raise RuntimeError(f"small produce: {left} undelivered, {len(lat)} reports, errors {errors[:3]}")
    ms = [x * 1e3 for x in lat]
    return {"small.records_s": n / elapsed, "small.p50_ms": workloads.percentile(ms, 50),
            "small.p99_ms": workloads.percentile(ms, 99)}


def small_fixed_rate(bootstrap: str, topic: str, rate: int, seconds: float, warmup_s: float = 2.0) -> dict[str, float]:
    """Idempotent produce at ``rate`` records/s: delivery-report p50/p99 ms after the warm-up."""
    value = os.urandom(100)
    lat: list[tuple[float, float]] = []
    errors: list[str] = []

    def delivered(t0: float, err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))
        lat.append((t0, time.perf_counter() - t0))

    p = _small_producer(bootstrap)
    n = int(rate * (warmup_s + seconds))
    begin = time.perf_counter()
    sent = 0
    while sent < n:
        due = min(n, int((time.perf_counter() - begin) * rate) + 1)
        while sent < due:
            p.produce(topic, value, partition=sent % SMALL_PARTITIONS,
                      on_delivery=partial(delivered, time.perf_counter()))
            sent += 1
        p.poll(0.0005)
    left = p.flush(120)
    if left or errors:
        raise RuntimeError(f"fixed-rate produce: {left} undelivered, errors {errors[:3]}")
    ms = [d * 1e3 for t0, d in lat if t0 - begin >= warmup_s]
    return {"fixed.p50_ms": workloads.percentile(ms, 50), "fixed.p99_ms": workloads.percentile(ms, 99)}


def wide_fill(bootstrap: str, topic: str, per_partition: int) -> None:
    """Pre-fill the wide topic: batches of at most 4 KiB (~35 records), as many producers
    writing many partitions make them, so that a 16 KiB partition fetch holds several whole
    batches (a batch larger than the limit would be returned only for the response's first
    partition, KIP-74, and every fetch would carry one partition)."""
    workloads.create_topic(bootstrap, topic, WIDE_PARTITIONS)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 4096, "acks": "1",
                  "queue.buffering.max.messages": 1_000_000})
    value = os.urandom(100)
    for i in range(per_partition * WIDE_PARTITIONS):
        while True:
            try:
                p.produce(topic, value, partition=i % WIDE_PARTITIONS)
                break
            except BufferError:
                p.poll(0.005)
    if p.flush(300):
        raise RuntimeError("wide fill: records left undelivered")


# The wide consumer: 16 KiB per partition per fetch, so each Fetch names all 500 partitions
# and carries ~8 MB (a fetch's per-partition work, not its bytes, is what is measured), and a
# client queue large enough that librdkafka never stops fetching for "queue full" (it then
# backs off fetch.queue.backoff.ms = 1 s, which decided the figure in a first version).
WIDE_CONSUMER = {"max.partition.fetch.bytes": 16_384, "queued.max.messages.kbytes": 1_048_576,
                 "queued.min.messages": 10_000_000}


def wide_fetch(bootstrap: str, topic: str, n: int) -> dict[str, float]:
    """One consumer assigned all partitions from the beginning reads ``n`` records: records/s,
    timed from the first record to the last (the ~0.5 s before the first record, librdkafka
    looking up 500 start offsets, is the client's own and would otherwise decide the figure)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "wide-unused", "enable.auto.commit": False,
                  **WIDE_CONSUMER})
    got, first = 0, 0
    t0 = 0.0
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(WIDE_PARTITIONS)])
    deadline = time.monotonic() + 300
    try:
        while got < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"wide fetch from {bootstrap} stalled at {got} of {n}")
            batch = c.consume(10_000, 1.0)
            if batch and not t0:
                t0, first = time.perf_counter(), len(batch)
            for m in batch:
                if m.error() is not None:
                    raise RuntimeError(f"consume error: {m.error()}")
                got += 1
        return {"wide.records_s": (n - first) / (time.perf_counter() - t0)}
    finally:
        c.close()


FIGURES = [  # (id, label, format, higher is better)
    ("small.records_s", "small produce, unthrottled, records/s", ",.0f", True),
    ("small.p50_ms", "small produce, unthrottled, delivery p50 ms", ".2f", False),
    ("small.p99_ms", "small produce, unthrottled, delivery p99 ms", ".2f", False),
    ("fixed.p50_ms", "small produce at {rate:,} records/s, delivery p50 ms", ".2f", False),
    ("fixed.p99_ms", "small produce at {rate:,} records/s, delivery p99 ms", ".2f", False),
    ("wide.records_s", "wide fetch, 500 partitions, records/s", ",.0f", True),
]


def body(sizes: Sizes) -> Any:
    def run(i: int, order: list[str], tmp: Path) -> dict[str, Any]:
        rep: dict[str, Any] = {}
        with paired.both_brokers(tmp, order) as brokers:
            for b in order:
                workloads.create_topic(brokers[b].bootstrap, "small", SMALL_PARTITIONS)
                workloads.create_topic(brokers[b].bootstrap, "fixed", SMALL_PARTITIONS)
            paired.run_pair("small produce", lambda bs, _pid: small_produce(bs, "small", sizes.small_records),
                            order, brokers, rep)
            paired.run_pair("fixed-rate produce",
                            lambda bs, _pid: small_fixed_rate(bs, "fixed", sizes.fixed_rate, sizes.fixed_s),
                            order, brokers, rep)
            for b in order:
                wide_fill(brokers[b].bootstrap, "wide", sizes.wide_per_partition)
            paired.run_pair("wide fetch",
                            lambda bs, _pid: wide_fetch(bs, "wide", sizes.wide_per_partition * WIDE_PARTITIONS),
                            order, brokers, rep)
        return rep
    return run


def markdown(results: dict[str, Any]) -> str:
    reps, sizes = results["repetitions"], results["sizes"]
    out = ["# Small produce requests and wide fetches: kbroker vs Apache Kafka", "",
           f"Made by `make bench-small-wide` (bench/suites/small_wide.py), finished {results['finished']}, "
           f"{len(reps)} repetition(s), orders {', '.join('→'.join(r['order']) for r in reps)}. "
           "Each cell: median (min–max) over repetitions; ratio = kbroker/Kafka within a repetition. "
           "Throughput ratios > 1 and latency ratios < 1 favour kbroker.", "",
           f"- small produce: confluent-kafka, linger.ms=0, acks=all, enable.idempotence=true, 100 B values, "
           f"{SMALL_PARTITIONS} partitions; unthrottled {sizes['small_records']:,} records (delivery latency "
           "includes up to 10,000 records of client queue), and at a fixed "
           f"{sizes['fixed_rate']:,} records/s for {sizes['fixed_s']:g} s after 2 s of warm-up;",
           f"- wide fetch: {WIDE_PARTITIONS} partitions × {sizes['wide_per_partition']:,} records of 100 B in batches "
           "of at most 4 KiB, pre-filled; one confluent-kafka consumer (default isolation.level=read_committed, "
           "max.partition.fetch.bytes=16384, so every Fetch names all 500 partitions) assigned all partitions "
           "reads everything; records/s from the first record received to the last.", "",
           "| figure | kbroker | Kafka | ratio kbroker/Kafka |", "|---|---|---|---|"]
    for fid, label, fmt, _hib in FIGURES:
        out.append(f"| {label.format(rate=sizes['fixed_rate'])} | {paired.cell(paired.values(reps, fid, KB), fmt)} | "
                   f"{paired.cell(paired.values(reps, fid, KAFKA), fmt)} | {paired.cell(paired.ratios(reps, fid))} |")
    out += ["", "Broker CPU seconds (user+system of the broker process) during each workload:", "",
            "| workload | kbroker | Kafka |", "|---|---|---|"]
    for name in ("small produce", "fixed-rate produce", "wide fetch"):
        cpu = {b: [r["cpu"][name][b] for r in reps if b in r.get("cpu", {}).get(name, {})] for b in (KB, KAFKA)}
        out.append(f"| {name} | {paired.cell(cpu[KB])} | {paired.cell(cpu[KAFKA])} |")
    if paired.failures(reps):
        out += ["", "## Failures", "", *paired.failures(reps)]
    out += ["", "## Machine", ""] + [f"- {k}: {v}" for k, v in results["machine"].items()]
    return "\n".join(out) + "\n"


def history_row(results: dict[str, Any]) -> dict[str, str]:
    """This run's row of the history table: the median ratio kbroker/Kafka of every figure."""
    reps, sizes = results["repetitions"], results["sizes"]
    row = {"finished": results["finished"], "kbroker": history.commit_of(results["machine"]), "reps": str(len(reps))}
    for fid, label, _fmt, _hib in FIGURES:
        row[label.format(rate=sizes["fixed_rate"])] = history.median_cell(paired.ratios(reps, fid))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repetitions", type=int)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    sizes = QUICK if args.quick else FULL
    if args.repetitions:
        sizes = Sizes(**{**sizes.__dict__, "repetitions": args.repetitions})
    results: dict[str, Any] = {"sizes": sizes.__dict__, "machine": machine.facts(
        Path("/tmp"), kafka_dist.kafka_version(), kafka_dist.java_version())}
    name = "small_wide_quick" if args.quick else "small_wide"
    args.out.mkdir(parents=True, exist_ok=True)

    def save(reps: list[dict[str, Any]]) -> None:
        results["repetitions"] = reps
        results["finished"] = time.strftime("%Y-%m-%d %H:%M %Z")
        (args.out / f"{name}.json").write_text(json.dumps(results, indent=1) + "\n")
        history.write_report(args.out / f"{name}.md", markdown(results), history_row(results),
                             same_run=len(reps) > 1)

    paired.repetitions(sizes.repetitions, body(sizes), after_each=save)
    print((args.out / f"{name}.md").read_text())


if __name__ == "__main__":
    main()
