"""kbroker and Apache Kafka measured side by side on this machine (issue 8): `make bench`
writes bench/results/side_by_side.md, .json and two PNG charts; `make bench-quick` the same as
side_by_side_quick.*.  Each report ends in the history table of the earlier runs.

Run: ``.venv/bin/python -m bench.suites.side_by_side [--quick] [--repetitions N] [--out DIR]``.

Each repetition starts both brokers fresh (empty data dirs; Kafka's storage formatted
first, outside the timing), one after the other, timing each cold start; warms each up
with an unmeasured produce and consume; then runs every throughput workload on one broker
and then on the other, alternating which goes first from one repetition to the next, so
both figures of a pair are taken within a minute of each other under the same background
load; reads both brokers' peak RSS; runs the latency
workloads the same way; stops both.  Timing on a shared 2-core machine is noisy, so what
the report leads with is the kbroker/Kafka ratio of each pair, summarised over
repetitions.

Workloads (bench/harness/workloads.py, bench/harness/kafka_dist.py):
 1. produce with confluent-kafka: 1 KiB and 100-byte values, 8 partitions, acks=1 and
    acks=all, linger.ms=5, batch.size=1 MiB;
 2. the same with Kafka's Java ProducerPerformance;
 3. consume: a confluent-kafka consumer reading 1 GiB of 1 KiB records from the beginning,
    and Java ConsumerPerformance reading the same topic; the topic is written before the
    first workload in batches closed on size (workloads.fill), so both brokers serve the
    same batches;
 4. end-to-end latency p50/p99/p99.9 at 1,000 and 10,000 records/s;
 5. cold start: process start to the first acknowledged produce;
 6. peak RSS of the broker process during 1-3 (VmHWM, reset after start-up).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import kafka_dist, machine, report, workloads
from bench.harness.common import COMMON, RESULTS, compile_kbroker
from bench.harness.kafka_dist import KafkaProcess
from bench.harness.report import KAFKA, KB
from tests.support.broker_process import BrokerProcess

MIB = 1024 * 1024


@dataclass(frozen=True)
class Sizes:
    mode: str
    repetitions: int
    consume_mib: int       # both consumers read this (CONSUME_SOURCE); the confluent 1 KiB acks=1 produce writes as much
    produce_mib: int       # every other 1 KiB produce workload
    small_records: int     # the 100-byte produce workloads
    latency_s: float       # per rate, measured
    warmup_s: float        # per rate, before latency_s at the same rate, not measured
    warmup_mib: int        # produced and consumed (1 KiB records) after start-up, not measured
    rates: tuple[int, ...] = (1_000, 10_000)


# the consume workloads' topic, written by warm_up (workloads.fill)
CONSUME_SOURCE = "consume-source"
FULL = Sizes("full", 3, 1024, 512, 2_000_000, 15.0, 5.0, 128)
QUICK = Sizes("quick", 1, 128, 128, 300_000, 4.0, 2.0, 32)


@dataclass
class Workload:
    """One workload: ``run(bootstrap)`` returns {figure id: value} for the figures it yields;
    ``prepare`` (untimed) runs first on the same broker."""
    name: str
    run: Callable[[str], dict[str, float]]
    prepare: Callable[[str], None] = lambda _b: None
    figures: list[dict[str, Any]] = field(default_factory=list)


# The confluent consume reads the topic this many times per repetition, each with a new
# consumer, and is timed over all of them: one read of 1 GiB takes ~1.5 s, and librdkafka's
# fetch-queue back-off (fetch.queue.backoff.ms, 1 s, when more than
# queued.max.messages.kbytes are queued) adds a whole second to a read at random, on either
# broker (bench/results/profile.md): over one read the figure was mostly that lottery.
CONSUME_READS = 3


def _throughput_figure(fid: str, group: str, label: str, short: str, record_bytes: int) -> dict[str, Any]:
    words = f"{group} throughput >= 1.0x Kafka's"
    return {"id": fid, "group": group, "label": label, "short": short, "unit": "records/s",
            "higher_is_better": True, "record_bytes": record_bytes, "goal": [">=", 1.0, words]}


def throughput_workloads(sizes: Sizes) -> list[Workload]:
    out = []
    consume_n = sizes.consume_mib * MIB // 1024
    for client in ("confluent", "java"):
        for size in (1024, 100):
            for acks in ("1", "all"):
                if size == 1024:
                    n = consume_n if (client, acks) == ("confluent", "1") else sizes.produce_mib * MIB // 1024
                else:
                    n = sizes.small_records
                topic = f"{client}-{size}-acks{acks}"
                fid = f"produce.{topic}"
                who = "confluent-kafka" if client == "confluent" else "Java ProducerPerformance"
                label = f"produce, {who}, {'1 KiB' if size == 1024 else '100 B'}, acks={acks} ({n:,} records)"
                short = f"{'py' if client == 'confluent' else 'java'} {size}B\nacks={acks}"

                def run(b: str, client: str = client, topic: str = topic, n: int = n, size: int = size,
                        acks: str = acks, fid: str = fid) -> dict[str, float]:
                    if client == "confluent":
                        return {fid: n / workloads.produce(b, topic, n, size, acks)}
                    props = {"acks": acks, "linger.ms": str(workloads.LINGER_MS),
                             "batch.size": str(workloads.BATCH_BYTES)}
                    return {fid: kafka_dist.producer_performance(b, topic, n, size, props)}

                out.append(Workload(fid, run, lambda b, t=topic: workloads.create_topic(b, t),
                                    [_throughput_figure(fid, "produce", label, short, size)]))
    source = CONSUME_SOURCE
    out.append(Workload(
        "consume.confluent",
        lambda b: {"consume.confluent": CONSUME_READS * consume_n
                   / sum(workloads.consume(b, source, consume_n) for _ in range(CONSUME_READS))},
        figures=[_throughput_figure("consume.confluent", "consume",
                                    f"consume, confluent-kafka, 1 KiB ({sizes.consume_mib} MiB read "
                                    f"{CONSUME_READS} times, assign)",
                                    "py consume", 1024)]))
    out.append(Workload(
        "consume.java",
        lambda b: {"consume.java": kafka_dist.consumer_performance(b, source, consume_n)[1]},
        figures=[_throughput_figure("consume.java", "consume",
                                    f"consume, Java ConsumerPerformance, 1 KiB ({sizes.consume_mib} MiB, group)",
                                    "java consume", 1024)]))
    return out


def latency_workloads(sizes: Sizes) -> list[Workload]:
    out = []
    for rate in sizes.rates:
        topic = f"latency-{rate}"
        figs = []
        for q in ("p50", "p99", "p99.9"):
            fig = {"id": f"latency.{rate}.{q}", "group": "latency", "unit": "ms", "higher_is_better": False,
                   "label": f"end-to-end {q} at {rate:,} records/s", "short": f"{q}\n@{rate // 1000}k/s"}
            if q == "p99":
                fig["goal"] = ["<=", 1.0, "end-to-end p99 <= Kafka's"]
            figs.append(fig)

        def run(b: str, rate: int = rate, topic: str = topic) -> dict[str, float]:
            lat = workloads.latency(b, topic, rate, sizes.latency_s, sizes.warmup_s)
            return {f"latency.{rate}.{q}": workloads.percentile(lat, float(q[1:]))
                    for q in ("p50", "p99", "p99.9")}

        out.append(Workload(f"latency.{rate}", run, lambda b, t=topic: workloads.create_topic(b, t), figs))
    return out


START_FIGURE = {"id": "start.cold", "group": "start", "unit": "s", "higher_is_better": False,
                "label": "cold start, process start to first acknowledged produce",
                "goal": ["<=", 0.2, "cold start <= 1/5 of Kafka's"]}
MEMORY_FIGURE = {"id": "memory.peak_rss", "group": "memory", "unit": "MiB", "higher_is_better": False,
                 "label": "peak RSS during workloads 1-3",
                 "goal": ["<=", 0.25, "peak RSS <= 1/4 of Kafka's"]}


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def repetition(i: int, sizes: Sizes, tmp: Path) -> dict[str, Any]:
    order = [KB, KAFKA] if i % 2 == 0 else [KAFKA, KB]
    rep: dict[str, Any] = {"order": order, "values": {}, "cpu": {}, "client_cpu": {}, "errors": {}}

    def record(fid: str, broker: str, value: float | None) -> None:
        rep["values"].setdefault(fid, {})[broker] = value

    def make_kafka() -> KafkaProcess:
        k = KafkaProcess(tmp / "kafka", overrides=COMMON)
        k.format()  # an install step, outside the cold-start timing
        return k

    makers: dict[str, Callable[[], workloads.Broker]] = {
        KB: lambda: BrokerProcess(tmp / "kbroker", overrides=COMMON),
        KAFKA: make_kafka,
    }
    brokers: dict[str, Any] = {}
    try:
        for b in order:
            secs, brokers[b] = workloads.cold_start(makers[b])
            record(START_FIGURE["id"], b, secs)
            _log(f"rep {i + 1} {b}: cold start {secs:.2f} s")
        pids = {b: brokers[b].proc.pid for b in order}
        for b in order:
            warm_up(brokers[b].bootstrap, sizes)
            workloads.reset_peak_rss(pids[b])
        for w in throughput_workloads(sizes):
            _run_pair(w, order, brokers, pids, rep, i)
        for b in order:
            record(MEMORY_FIGURE["id"], b, workloads.peak_rss(pids[b]) / MIB)
            _log(f"rep {i + 1} {b}: peak RSS {rep['values'][MEMORY_FIGURE['id']][b]:.0f} MiB")
        for w in latency_workloads(sizes):
            _run_pair(w, order, brokers, pids, rep, i)
    finally:
        for b in brokers.values():
            b.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return rep


def warm_up(bootstrap: str, sizes: Sizes) -> None:
    """Unmeasured produce and consume before the first measured workload, so that neither
    broker's first figures include its first-request costs (the JVM's JIT, kbroker's
    lazily compiled codecs); the latency workloads have their own warm-up at their rate."""
    n = sizes.warmup_mib * MIB // 1024
    workloads.create_topic(bootstrap, "warm-up")
    workloads.produce(bootstrap, "warm-up", n)
    workloads.consume(bootstrap, "warm-up", n)
    # the consume workloads' source, written in batches closed on size so both brokers store
    # the same batches (workloads.fill); the 1 KiB acks=1 produce wrote batches whose size
    # depended on how fast the broker acknowledged (smaller on the faster one)
    workloads.create_topic(bootstrap, CONSUME_SOURCE)
    workloads.fill(bootstrap, CONSUME_SOURCE, sizes.consume_mib * MIB // 1024)


def _run_pair(w: Workload, order: list[str], brokers: dict[str, Any], pids: dict[str, int],
              rep: dict[str, Any], i: int) -> None:
    for b in order:
        try:
            w.prepare(brokers[b].bootstrap)
            cpu0, client0 = workloads.cpu_seconds(pids[b]), workloads.client_cpu_seconds()
            values = w.run(brokers[b].bootstrap)
            cpu = workloads.cpu_seconds(pids[b]) - cpu0
            client = workloads.client_cpu_seconds() - client0
        except Exception as e:  # one failed measurement must not lose the run's others
            rep["errors"].setdefault(w.name, {})[b] = f"{type(e).__name__}: {str(e)[:300]}"
            _log(f"rep {i + 1} {b}: {w.name} FAILED: {e}")
            continue
        rep["cpu"].setdefault(w.name, {})[b] = cpu
        rep["client_cpu"].setdefault(w.name, {})[b] = client
        for fid, v in values.items():
            rep["values"].setdefault(fid, {})[b] = v
        shown = ", ".join(f"{fid.rsplit('.', 1)[-1] if fid.startswith('latency') else 'records/s'} "
                          f"{v:,.2f}" for fid, v in values.items())
        _log(f"rep {i + 1} {b}: {w.name}: {shown} (broker CPU {cpu:.1f} s, client {client:.1f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small volumes, 1 repetition (about 2 minutes)")
    ap.add_argument("--repetitions", type=int, help="override the mode's repetitions")
    ap.add_argument("--out", type=Path, help="results directory (default bench/results: side_by_side.md, or side_by_side_quick.md with --quick)")
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()),
                    help="where the brokers' temporary data dirs go")
    args = ap.parse_args()
    sizes = QUICK if args.quick else FULL
    if args.repetitions:
        sizes = Sizes(**{**sizes.__dict__, "repetitions": args.repetitions})
    out = args.out or RESULTS
    kafka_version = kafka_dist.kafka_version()
    compile_kbroker()
    figures = [START_FIGURE, MEMORY_FIGURE]
    for w in throughput_workloads(sizes) + latency_workloads(sizes):
        figures += w.figures
    results: dict[str, Any] = {
        "machine": machine.facts(args.data_dir, kafka_version, kafka_dist.java_version()),
        "settings": {
            "mode": sizes.mode,
            "sizes": (f"consume source {sizes.consume_mib} MiB (written by an unmeasured produce with "
                      f"linger.ms={workloads.FILL_LINGER_MS}: batches closed on size, the same on both brokers), "
                      f"other 1 KiB produce {sizes.produce_mib} MiB, "
                      f"100 B produce {sizes.small_records:,} records, latency {sizes.latency_s:g} s per rate "
                      f"after {sizes.warmup_s:g} s of warm-up at that rate; {sizes.warmup_mib} MiB "
                      "produced and consumed on each broker after start-up, unmeasured"),
            "both brokers": ", ".join(f"{k}={v}" for k, v in COMMON.items()),
            "Kafka only": ("KRaft combined broker+controller on loopback, share.coordinator.state.topic "
                           "replication 1 / min.isr 1, JVM options of kafka-server-start.sh "
                           f"({' '.join(kafka_dist.SERVER_HEAP)}, G1) ; everything else default"),
            "kbroker only": ("python -m kbroker serve (tests/support/broker_process.py), its modules "
                             "byte-compiled first as a wheel install does; everything else default"),
            "producers": ("confluent-kafka and ProducerPerformance: linger.ms=5, batch.size=1048576, "
                          "no compression, 8 partitions, unthrottled; latency producer linger.ms=5, acks=1, "
                          "100-byte values, consumer in a separate process"),
        },
        "figures": figures,
        "repetitions": [],
    }
    t0 = time.monotonic()
    for i in range(sizes.repetitions):
        tmp = Path(tempfile.mkdtemp(prefix="kbroker-vs-kafka-", dir=args.data_dir))
        results["repetitions"].append(repetition(i, sizes, tmp))
        results["finished"] = time.strftime("%Y-%m-%d %H:%M %Z")
        results["settings"]["wall time"] = f"{time.monotonic() - t0:.0f} s"
        # after every repetition: a crash later keeps what was measured (one history row per run)
        md = report.write(results, out, same_run=i > 0)
    _log(f"wrote {md}")
    print(md.read_text())


if __name__ == "__main__":
    main()
