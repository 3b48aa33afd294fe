"""KIP-227 fetch sessions, what they save the broker: Kafka's Java ConsumerPerformance tails a
topic of many partitions while a trickle of records arrives, on two kbroker processes in
the same run: one granting sessions (the default) and one with
``max.incremental.fetch.session.cache.slots=0`` (every fetch full and sessionless, as kbroker
answered before sessions).

Per broker: a topic of ``--partitions`` partitions (1 KiB records; created untimed), then
ConsumerPerformance (a subscribed consumer in a fresh group, from the earliest offset)
reads ``--rate`` x ``--seconds`` records that one confluent-kafka producer sends spread
over all partitions at ``--rate`` records/s.  Figures: the broker process's CPU seconds
(utime+stime, /proc) from the consumer's start to its end, the Fetch requests it served
and, with sessions, the incremental ones and the session partitions not read (/metrics).
The load average is printed before and after each broker's run.

Run: ``.venv/bin/python -m bench.suites.fetch_sessions [--partitions 10000] [--rate 200] [--seconds 30]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from bench.harness import kafka_dist, workloads
from tests.support.broker_process import BrokerProcess, free_port


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if not s.labels:
                out[s.name] = s.value
            elif s.name == "kafka_network_requestmetrics_requests_total" and s.labels.get("request") == "Fetch":
                out["fetch_requests"] = s.value
    return out


def trickle(bootstrap: str, topic: str, partitions: int, rate: int, seconds: float, stop: threading.Event) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "1"})
    value = b"x" * 1024
    n = 0
    start = time.monotonic()
    total = int(rate * seconds)
    while n < total and not stop.is_set():
        due = int((time.monotonic() - start) * rate) + 1
        while n < min(due, total):
            p.produce(topic, value, partition=(n * 7919) % partitions)
            n += 1
        p.poll(0)
        time.sleep(0.01)
    p.flush(60)


def one(label: str, tmp: Path, partitions: int, rate: int, seconds: float, overrides: dict[str, str],
        profile: str | None = None) -> dict:
    port = free_port()
    b = BrokerProcess(tmp / label, overrides={"kbroker.metrics.port": str(port), **overrides},
                      python_args=("-m", "cProfile", "-o", profile) if profile else ()).start()
    try:
        topic = "sessions-bench"
        workloads.create_topic(b.bootstrap, topic, partitions)
        pid = b.proc.pid
        load0 = os.getloadavg()
        before = scrape(port)
        cpu0 = workloads.cpu_seconds(pid)
        t0 = time.monotonic()
        stop = threading.Event()
        producer = threading.Thread(target=trickle, args=(b.bootstrap, topic, partitions, rate, seconds, stop),
                                    daemon=True)
        producer.start()
        try:
            kafka_dist.consumer_performance(b.bootstrap, topic, int(rate * seconds), timeout_s=seconds + 600)
        finally:
            stop.set()
            producer.join(120)
        cpu = workloads.cpu_seconds(pid) - cpu0
        wall = time.monotonic() - t0
        after = scrape(port)
        diff = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
        return {"label": label, "cpu_s": cpu, "wall_s": wall, "load_before": load0, "load_after": os.getloadavg(),
                "fetches": diff.get("fetch_requests", 0.0),
                "incremental": diff.get("kbroker_fetchsessioncache_incrementalfetches_total", 0.0),
                "skipped": diff.get("kbroker_fetchsessioncache_partitionsskipped_total", 0.0)}
    finally:
        b.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--rate", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--order", default="sessions,sessionless")
    ap.add_argument("--profile", help="cProfile the brokers: <this>.<label>.prof, top functions printed")
    args = ap.parse_args()
    configs = {"sessions": {}, "sessionless": {"max.incremental.fetch.session.cache.slots": "0"}}
    with tempfile.TemporaryDirectory() as d:
        for label in args.order.split(","):
            prof = f"{args.profile}.{label}.prof" if args.profile else None
            r = one(label, Path(d), args.partitions, args.rate, args.seconds, configs[label], prof)
            print(f"{r['label']:>11}: broker CPU {r['cpu_s']:.1f} s over {r['wall_s']:.1f} s wall "
                  f"({r['cpu_s'] / r['wall_s'] * 100:.0f}% of a core), {r['fetches']:.0f} Fetch requests "
                  f"({r['cpu_s'] / max(r['fetches'], 1) * 1000:.1f} ms CPU each), {r['incremental']:.0f} incremental, "
                  f"{r['skipped']:.0f} session partitions not read; load average "
                  f"{r['load_before'][0]:.2f} -> {r['load_after'][0]:.2f}", flush=True)
            if prof:
                import pstats
                pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
