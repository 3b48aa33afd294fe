"""Where kbroker's time goes under the side-by-side benchmark's produce and consume workloads
(issue 8): `make bench-profile`, writes bench/results/profile.md.

Run: ``.venv/bin/python -m bench.suites.profile [--mib 256] [--small-records 1000000]``.

Each part runs a fresh ``python -m cProfile -o ... -m kbroker serve`` (BrokerProcess's
``python_args``), drives one workload against it, stops it cleanly (cProfile writes its
file at exit) and tabulates the top functions by cumulative and by own time:

* produce: bench/workloads.produce, confluent-kafka, 1 KiB and 100 B values, acks=1 and
  acks=all (workload 1);
* produce, Java idempotent: ProducerPerformance 100 B acks=all (workload 2; the Java
  producer is idempotent by default with acks=all, so this is the sequence-checking path);
* consume: the data of the first part read back by a confluent-kafka consumer from a broker
  restarted on the same data dir (workload 3), so its profile holds no produce;
* consume, Java: the same topic read by ConsumerPerformance (a subscribed group member);
* latency: records at 10,000/s read back as they arrive (workload 4), where the broker
  handles many small produce requests and wakes a parked fetch for each;
* small produce (bench/suites/small_wide.py): idempotent, acks=all, linger.ms=0, 100 B
  records over 64 partitions, unthrottled: the per-request path of small requests;
* wide fetch (bench/suites/small_wide.py): one consumer reading a topic of 500 partitions
  pre-filled with small records: the per-partition path of Fetch;
* cost-curve produce / consume (bench/suites/cost_curves.py's partitions point, ``--curve-partitions``
  P, default 1,000): ``--curve-mib`` MiB of 1 KiB records produced round-robin over P
  partitions (acks=1, linger.ms=5), then, from a broker restarted on the same data dir, read
  back by one consumer assigned all P partitions: the per-partition cost of Produce and Fetch.

``--only small,wide`` runs only the named parts (data, java, consume, consume-java,
latency, small, wide, curve-produce, curve-consume); the report then holds those parts.

cProfile sees the event-loop (main) thread only, where every request is handled; the
background thread (retention, flushes, checkpoints) is idle in these runs.  Its overhead
inflates the cost of many small Python calls, so read the shares, not the absolute times.
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.harness import kafka_dist, workloads
from bench.harness.common import COMMON, RESULTS
from bench.suites import small_wide
from tests.support.broker_process import ROOT, BrokerProcess

MIB = 1024 * 1024
TOP = 25
FINDINGS_START, FINDINGS_END = "<!-- findings -->", "<!-- /findings -->"


def _where(key: tuple[str, int, str]) -> str:
    file, line, func = key
    if file == "~":
        return func  # a built-in: "<method 'write' of ...>"
    for prefix in (str(ROOT) + os.sep, os.path.dirname(os.__file__) + os.sep):
        if file.startswith(prefix):
            file = file[len(prefix):]
            break
    if "site-packages" + os.sep in file:
        file = file.split("site-packages" + os.sep, 1)[1]
    return f"{file}:{line} {func}"


def table(stats: pstats.Stats, key: int, n: int = TOP) -> list[str]:
    """The top ``n`` rows sorted by index ``key`` of pstats' (cc, nc, tt, ct) tuples."""
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][key], reverse=True)[:n]  # type: ignore[attr-defined]
    out = ["| function | calls | own s | cumulative s |", "|---|---:|---:|---:|"]
    for k, (_cc, nc, tt, ct, _callers) in rows:
        out.append(f"| `{_where(k)}` | {nc:,} | {tt:.2f} | {ct:.2f} |")
    return out


def profiled(data_dir: Path, prof: Path, drive: Callable[[str], str]) -> tuple[str, float, float]:
    """Run ``drive(bootstrap)`` against a broker under cProfile; (what drive said, broker CPU
    seconds during it, wall seconds)."""
    broker = BrokerProcess(data_dir, overrides=COMMON, python_args=("-m", "cProfile", "-o", str(prof)))
    broker.start(timeout_s=60)
    try:
        cpu0, t0 = workloads.cpu_seconds(broker.proc.pid), time.monotonic()
        said = drive(broker.bootstrap)
        return said, workloads.cpu_seconds(broker.proc.pid) - cpu0, time.monotonic() - t0
    finally:
        broker.stop(timeout_s=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=256, help="MiB of 1 KiB records per 1 KiB produce run")
    ap.add_argument("--small-records", type=int, default=1_000_000, help="records per 100 B produce run")
    ap.add_argument("--latency-s", type=float, default=10.0, help="seconds of the latency part")
    ap.add_argument("--wide-per-partition", type=int, default=1_000, help="records per partition, wide fetch")
    ap.add_argument("--curve-partitions", type=int, default=1_000, help="partitions of the cost-curve parts")
    ap.add_argument("--curve-mib", type=int, default=32, help="MiB of 1 KiB records, cost-curve parts")
    ap.add_argument("--only", help="comma-separated part names (default: all)")
    ap.add_argument("--out", type=Path, default=RESULTS / "profile.md")
    ap.add_argument("--keep-prof", type=Path, help="copy each part's cProfile file (partN.prof) here")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kbroker-profile-"))
    n_big = args.mib * MIB // 1024
    source = "p-1024-acks1"

    def produce_all(b: str) -> str:
        said = []
        for size, acks, n in ((1024, "1", n_big), (1024, "all", n_big), (100, "1", args.small_records),
                              (100, "all", args.small_records)):
            topic = f"p-{size}-acks{acks}"
            workloads.create_topic(b, topic)
            secs = workloads.produce(b, topic, n, size, acks)
            said.append(f"{size} B acks={acks}: {n:,} records, {n / secs:,.0f} records/s")
        return "; ".join(said)

    def produce_java(b: str) -> str:
        workloads.create_topic(b, "java-100-acksall")
        rps = kafka_dist.producer_performance(b, "java-100-acksall", args.small_records, 100,
                                              {"acks": "all", "linger.ms": str(workloads.LINGER_MS),
                                               "batch.size": str(workloads.BATCH_BYTES)})
        return f"{args.small_records:,} records, {rps:,.0f} records/s"

    def consume(b: str) -> str:
        secs = workloads.consume(b, source, n_big)
        return f"{n_big:,} records of 1 KiB, {n_big / secs:,.0f} records/s"

    def consume_java(b: str) -> str:
        _mbs, rps = kafka_dist.consumer_performance(b, source, n_big)
        return f"{n_big:,} records of 1 KiB, {rps:,.0f} records/s (its fetch phase)"

    def latency(b: str) -> str:
        workloads.create_topic(b, "latency")
        lat = workloads.latency(b, "latency", 10_000, args.latency_s)
        return (f"{len(lat):,} records at 10,000/s, p50 {workloads.percentile(lat, 50):.1f} ms, "
                f"p99 {workloads.percentile(lat, 99):.1f} ms")

    def small(b: str) -> str:
        workloads.create_topic(b, "small", small_wide.SMALL_PARTITIONS)
        f = small_wide.small_produce(b, "small", args.small_records)
        return (f"{args.small_records:,} records of 100 B over {small_wide.SMALL_PARTITIONS} partitions, "
                f"{f['small.records_s']:,.0f} records/s, delivery p99 {f['small.p99_ms']:.1f} ms")

    def wide(b: str) -> str:
        small_wide.wide_fill(b, "wide", args.wide_per_partition)
        n = args.wide_per_partition * small_wide.WIDE_PARTITIONS
        f = small_wide.wide_fetch(b, "wide", n)
        return (f"{n:,} records of 100 B over {small_wide.WIDE_PARTITIONS} partitions (the fill is in the "
                f"profile too), read at {f['wide.records_s']:,.0f} records/s")

    curve_n = args.curve_mib * MIB // 1024
    curve_topic = f"p{args.curve_partitions}"

    def curve_produce(b: str) -> str:
        from bench.suites import cost_curves
        cost_curves.create_topic(b, curve_topic, args.curve_partitions)
        secs = workloads.produce(b, curve_topic, curve_n, 1024, acks="1", partitions=args.curve_partitions)
        return (f"{curve_n:,} records of 1 KiB round-robin over {args.curve_partitions:,} partitions "
                f"(topic creation in the profile too), {curve_n * 1024 / secs / 1e6:.1f} MB/s")

    def curve_consume(b: str) -> str:
        secs = workloads.consume(b, curve_topic, curve_n, partitions=args.curve_partitions)
        return (f"{curve_n:,} records of 1 KiB from {args.curve_partitions:,} partitions, "
                f"{curve_n * 1024 / secs / 1e6:.1f} MB/s")

    parts = [("Workload 1: produce, confluent-kafka (1 KiB and 100 B, acks=1 and all)", "data", produce_all),
             ("Workload 2: produce, Java ProducerPerformance 100 B acks=all (idempotent)", "java", produce_java),
             ("Workload 3: consume, confluent-kafka, the 1 KiB acks=1 topic from the beginning", "data", consume),
             ("Workload 3: consume, Java ConsumerPerformance, the same topic", "data", consume_java),
             ("Workload 4: end-to-end latency at 10,000 records/s (small requests, parked fetches)", "lat",
              latency),
             ("Small produce: idempotent, acks=all, linger.ms=0, 100 B, 64 partitions", "small", small),
             ("Wide fetch: one consumer, 500 partitions of 100 B records", "wide", wide),
             (f"Cost curve: produce round-robin over {args.curve_partitions:,} partitions", "curve", curve_produce),
             (f"Cost curve: consume {args.curve_partitions:,} partitions (broker restarted)", "curve",
              curve_consume)]
    names = {produce_all: "data", produce_java: "java", consume: "consume", consume_java: "consume-java",
             latency: "latency", small: "small", wide: "wide", curve_produce: "curve-produce",
             curve_consume: "curve-consume"}
    if args.only:
        wanted = set(args.only.split(","))
        if "consume" in wanted or "consume-java" in wanted:
            wanted.add("data")  # the consume parts read what it produced
        if "curve-consume" in wanted:
            wanted.add("curve-produce")
        parts = [p for p in parts if names[p[2]] in wanted]
    md = ["# Where kbroker's time goes (cProfile)", "",
          f"Made by `make bench-profile` (bench/suites/profile.py) on {time.strftime('%Y-%m-%d %H:%M %Z')}. "
          "cProfile sees the broker's event-loop thread, where every request is handled; its "
          "per-call overhead inflates small Python functions, so read shares, not absolute times. "
          "`calls` counts every call, own s excludes callees.", ""]
    try:
        for i, (title, sub, drive) in enumerate(parts):
            prof = tmp / f"part{i}.prof"
            said, cpu, wall = profiled(tmp / sub, prof, drive)
            print(f"{title}: {said} (broker CPU {cpu:.1f} s, wall {wall:.1f} s)", flush=True)
            stats = pstats.Stats(str(prof))
            if args.keep_prof:
                args.keep_prof.mkdir(parents=True, exist_ok=True)
                shutil.copy(prof, args.keep_prof / prof.name)
            md += [f"## {title}", "", f"{said}; broker CPU {cpu:.1f} s over {wall:.1f} s wall (under cProfile).",
                   "", "### Top functions by cumulative time", ""]
            md += table(stats, 3)
            md += ["", "### Top functions by own time", ""]
            md += table(stats, 2)
            md.append("")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    old = args.out.read_text() if args.out.exists() else ""
    if FINDINGS_START in old and FINDINGS_END in old:  # hand-written findings survive a re-run
        kept = old[old.index(FINDINGS_START):old.index(FINDINGS_END) + len(FINDINGS_END)]
        md[4:4] = [kept, ""]  # after the title and the intro
    args.out.write_text("\n".join(md))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
