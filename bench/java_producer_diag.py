"""Issue 15 diagnosis of make bench's Java ProducerPerformance workloads: is the broker or
the client setting the pace?  Both brokers side by side (as make bench starts them); for
each repetition, on each broker in alternating order, a fresh topic of 8 partitions and one
ProducerPerformance run (100-byte records, linger.ms=5, batch.size=1 MiB, as make bench),
reporting records/s, the client JVM's CPU-seconds (start-up included), the broker's, and
the producer's own metrics (``--print-metrics``: batch size, records per request, request
latency, time records waited in the accumulator).

    python -m bench.java_producer_diag [--records 2000000] [--repetitions 3] [--acks 1]
                                       [--prefill-mib 0]

``--prefill-mib`` writes that much (1 KiB records, confluent-kafka) to each broker first, as
the workloads before these in make bench do.
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench import kafka_dist, workloads
from bench.side_by_side import COMMON
from tests.compat.broker_process import BrokerProcess

METRICS = ("batch-size-avg", "records-per-request-avg", "request-latency-avg", "record-queue-time-avg",
           "bufferpool-wait-time-ns-total")


def run_tool(bootstrap: str, topic: str, n: int, acks: str) -> tuple[float, float, dict[str, float]]:
    """(records/s as the tool reports it, the tool's CPU-seconds, its metrics)."""
    props = {"acks": acks, "linger.ms": str(workloads.LINGER_MS), "batch.size": str(workloads.BATCH_BYTES)}
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(n), "--record-size", "100",
            "--throughput", "-1", "--print-metrics",
            "--command-property", *(f"{k}={v}" for k, v in props.items())]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(kafka_dist._java("org.apache.kafka.tools.ProducerPerformance", args, kafka_dist.TOOL_HEAP),
                       capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = r.stdout + r.stderr
    summary = [m for m in kafka_dist._PRODUCER_SUMMARY.finditer(out) if int(m.group(1)) == n]
    if r.returncode != 0 or not summary:
        raise RuntimeError(f"ProducerPerformance failed:\n{out[-3000:]}")
    metrics = {}
    for name in METRICS:
        m = re.search(r"producer-metrics:" + re.escape(name) + r":\{client-id=[^}]*\}\s*:\s*([\d.E-]+)", out)
        if m:
            metrics[name] = float(m.group(1))
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return float(summary[-1].group(2)), cpu, metrics


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--acks", default="1")
    ap.add_argument("--prefill-mib", type=int, default=0)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="java-producer-diag-"))
    kb = BrokerProcess(tmp / "kbroker", overrides=COMMON)
    kafka = kafka_dist.KafkaProcess(tmp / "kafka", overrides=COMMON)
    brokers = {"kbroker": kb, "Kafka": kafka}
    try:
        kb.start()
        kafka.format()
        kafka.start()
        for b in brokers.values():   # JVM and codec warm-up on both, unmeasured
            workloads.create_topic(b.bootstrap, "warm-up")
            run_tool(b.bootstrap, "warm-up", a.records // 4, a.acks)
            if a.prefill_mib:
                workloads.create_topic(b.bootstrap, "prefill")
                workloads.produce(b.bootstrap, "prefill", a.prefill_mib * 1024)
        for i in range(a.repetitions):
            for name in (["kbroker", "Kafka"] if i % 2 == 0 else ["Kafka", "kbroker"]):
                b = brokers[name]
                workloads.create_topic(b.bootstrap, f"diag-{i}")
                cpu0 = workloads.cpu_seconds(b.proc.pid)
                rate, client_cpu, metrics = run_tool(b.bootstrap, f"diag-{i}", a.records, a.acks)
                broker_cpu = workloads.cpu_seconds(b.proc.pid) - cpu0
                print(f"[{time.strftime('%H:%M:%S')}] rep {i + 1} {name:8s} {rate:>10,.0f} records/s  "
                      f"client CPU {client_cpu:5.2f} s  broker CPU {broker_cpu:4.2f} s  "
                      + "  ".join(f"{k} {v:,.4g}" for k, v in metrics.items()), flush=True)
    finally:
        kb.stop()
        kafka.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
