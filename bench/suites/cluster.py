"""Three kbroker brokers against three Apache Kafka brokers, replication factor 3 (issue 14):
``make bench-cluster``.

Run: ``.venv/bin/python -m bench.suites.cluster [--records N] [--out DIR]``.

- kbroker: one ZooKeeper (tests/support/zookeeper_process.py, tickTime 500) and three
  ``kbroker serve`` processes in cluster mode on loopback (tests/support/cluster_processes.py);
- Apache Kafka (the jars of ``make kafka-jars``, bench/kafka/pom.xml): three KRaft nodes,
  each broker and controller, with a static quorum (``controller.quorum.voters``), storage
  formatted with one cluster id (not timed), started with kafka-server-start.sh's JVM options.

Both clusters get ``default.replication.factor=3``, ``min.insync.replicas=2`` and
``offsets.topic.replication.factor=3``; everything else is each broker's default.  One run:
the kbroker cluster is started and measured, stopped, then Kafka's, one after the other on
this 2-core machine, and the report gives kbroker/Kafka ratios.  The workloads are
bench/harness/workloads.py's, on a topic of 8 partitions with 3 replicas each:

1. produce, confluent-kafka, 1 KiB values, acks=all (every record on the 2+ in-sync
   replicas before its acknowledgement), linger.ms=5, batch.size=1 MiB: MB/s;
2. consume it from the beginning, one confluent-kafka consumer (from the leaders, to the
   high watermark): MB/s;
3. end-to-end latency at 1,000 records/s (workloads.latency: 100 B, acks=1, linger.ms=5;
   the figure still includes replication, as a consumer sees a record only once the high
   watermark, i.e. the in-sync followers, passed it): p50/p99 ms.

Each cluster gets an unmeasured warm-up produce and consume first (the JVM's JIT, kbroker's
codecs).  The broker processes' CPU seconds during each workload are recorded, which says
where the time goes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness import history, kafka_dist, machine, workloads
from bench.harness.common import RESULTS
from bench.harness.kafka_dist import KafkaProcess, _cluster_id, _java
from tests.support.broker_process import free_port
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.zookeeper_process import ZooKeeperProcess

PARTITIONS = 8
REPLICATION = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "group.initial.rebalance.delay.ms": "0",
}


class KafkaClusterNode(KafkaProcess):
    """One of three KRaft broker+controller nodes with a static quorum."""

    def __init__(self, data_dir: Path, node_id: int, voters: str, controller_port: int, cluster_id: str):
        super().__init__(data_dir)
        self.controller_port = controller_port
        self.cluster_id = cluster_id
        del self.props["controller.quorum.bootstrap.servers"]
        self.props.update({
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "transaction.state.log.replication.factor": "3",
            "transaction.state.log.min.isr": "2",
            "share.coordinator.state.topic.replication.factor": "3",
            "share.coordinator.state.topic.min.isr": "2",
            **REPLICATION,
        })

    def format(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.properties_file.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        r = subprocess.run(_java("kafka.tools.StorageTool",
                                 ["format", "-t", self.cluster_id, "-c", str(self.properties_file)],
                                 kafka_dist.SERVER_HEAP), capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed:\n{r.stdout}\n{r.stderr}")
        self._formatted = True

    def start(self, timeout_s: float = 180.0) -> KafkaClusterNode:
        super().start(timeout_s)
        return self


def kafka_cluster(root: Path) -> list[KafkaClusterNode]:
    ports = {i: free_port() for i in (1, 2, 3)}
    voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in ports.items())
    cid = _cluster_id()
    nodes = [KafkaClusterNode(root / f"kafka-{i}", i, voters, ports[i], cid) for i in (1, 2, 3)]
    for n in nodes:
        n.format()
    # KRaft nodes wait for a quorum before they report "started": start all three at once
    errors: list[BaseException] = []

    def run(n: KafkaClusterNode) -> None:
        try:
            n.start()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for n in nodes:
            n.kill()
        raise errors[0]
    return nodes


def create_replicated_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wait_until(lambda: len(admin.list_topics(timeout=10).brokers) == 3, "three brokers in the metadata", 120)
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(120)

    def ready() -> bool:
        t = admin.list_topics(topic, timeout=10).topics.get(topic)
        return (t is not None and t.error is None and len(t.partitions) == PARTITIONS
                and all(p.leader >= 0 and len(p.isrs) == 3 for p in t.partitions.values()))

    wait_until(ready, f"{topic}: every partition led with an ISR of 3", 120)


def topic_bytes(data_dir: Path, topic: str) -> int:
    return sum(f.stat().st_size for f in data_dir.glob(f"{topic}-*/*.log"))


def measure(bootstrap: str, pids: list[int], data_dirs: list[Path], records: int, tag: str) -> dict[str, Any]:
    def cpu() -> float:
        return sum(workloads.cpu_seconds(p) for p in pids)

    out: dict[str, Any] = {}
    create_replicated_topic(bootstrap, f"warmup-{tag}")
    workloads.produce(bootstrap, f"warmup-{tag}", 20_000, 1024, acks="all")
    workloads.consume(bootstrap, f"warmup-{tag}", 20_000)

    create_replicated_topic(bootstrap, "produce")
    c0 = cpu()
    s = workloads.produce(bootstrap, "produce", records, 1024, acks="all")
    out["produce_acks_all_MBps"] = records * 1024 / s / 1e6
    out["produce_broker_cpu_s"] = cpu() - c0
    out["produce_s"] = s
    # the figure means something only if every broker holds a full copy: wait for it
    wait_until(lambda: all(topic_bytes(d, "produce") >= records * 1024 for d in data_dirs),
               "every broker to hold a copy of what was produced", 120)
    out["produce_bytes_per_broker"] = [topic_bytes(d, "produce") for d in data_dirs]

    c0 = cpu()
    s = workloads.consume(bootstrap, "produce", records)
    out["consume_MBps"] = records * 1024 / s / 1e6
    out["consume_broker_cpu_s"] = cpu() - c0
    out["consume_s"] = s

    create_replicated_topic(bootstrap, "latency")
    lat = workloads.latency(bootstrap, "latency", rate=1000, seconds=15, warmup_s=5)
    out["e2e_p50_ms"] = workloads.percentile(lat, 50)
    out["e2e_p99_ms"] = workloads.percentile(lat, 99)
    out["e2e_records"] = len(lat)
    return out


def run_kbroker(root: Path, records: int) -> dict[str, Any]:
    zk = ZooKeeperProcess(root / "zookeeper").start()
    cluster = Cluster(root / "kbroker", zk, **REPLICATION)
    try:
        cluster.start()
        brokers = list(cluster.brokers.values())
        return measure(cluster.bootstrap, [b.proc.pid for b in brokers], [b.data_dir for b in brokers], records,
                       "kbroker")
    finally:
        cluster.stop()
        zk.stop()


def run_kafka(root: Path, records: int) -> dict[str, Any]:
    nodes = kafka_cluster(root)
    try:
        bootstrap = ",".join(n.bootstrap for n in nodes)
        return measure(bootstrap, [n.proc.pid for n in nodes], [n.data_dir / "logs" for n in nodes], records,
                       "kafka")
    finally:
        for n in nodes:
            n.stop()


def report(results: dict[str, Any]) -> str:
    kb, ka = results["kbroker"], results["kafka"]
    rows = [("produce acks=all, 1 KiB, MB/s", "produce_acks_all_MBps", "higher"),
            ("consume, MB/s", "consume_MBps", "higher"),
            ("end-to-end p50 at 1,000 rec/s, ms", "e2e_p50_ms", "lower"),
            ("end-to-end p99 at 1,000 rec/s, ms", "e2e_p99_ms", "lower"),
            ("broker CPU s during produce (3 processes)", "produce_broker_cpu_s", "lower"),
            ("broker CPU s during consume (3 processes)", "consume_broker_cpu_s", "lower")]
    lines = ["# Three brokers, replication factor 3: kbroker vs Apache Kafka", "",
             f"One run, {results['records']} records of 1 KiB, {PARTITIONS} partitions x 3 replicas, "
             "min.insync.replicas=2. Ratio = kbroker / Kafka.", "",
             "| figure | kbroker | Kafka | ratio | better |", "|---|---|---|---|---|"]
    for name, key, better in rows:
        lines.append(f"| {name} | {kb[key]:.2f} | {ka[key]:.2f} | {kb[key] / ka[key]:.2f} | {better} |")
    lines += ["", "## Machine", ""] + [f"- {k}: {v}" for k, v in results["machine"].items()]
    return "\n".join(lines) + "\n"


def history_row(results: dict[str, Any]) -> dict[str, str]:
    """This run's row of the history table: the ratio kbroker/Kafka of the headline figures."""
    kb, ka = results["kbroker"], results["kafka"]
    row = {"finished": results.get("finished", ""), "kbroker": history.commit_of(results["machine"]),
           "records": f"{results['records']:,}"}
    for column, key in (("produce acks=all MB/s", "produce_acks_all_MBps"), ("consume MB/s", "consume_MBps"),
                        ("e2e p50", "e2e_p50_ms"), ("e2e p99", "e2e_p99_ms")):
        row[column] = history.ratio_cell(kb[key] / ka[key])
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cluster_bench")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--only", choices=["kbroker", "kafka"], help="measure one side (no report written)")
    args = parser.parse_args(argv)
    kafka_version = kafka_dist.kafka_version()
    root = Path(tempfile.mkdtemp(prefix="kbroker-cluster-bench-"))
    try:
        results: dict[str, Any] = {"records": args.records,
                                   "machine": machine.facts(root, kafka_version, kafka_dist.java_version())}
        steps: list[tuple[str, Callable[[Path, int], dict[str, Any]]]] = [("kbroker", run_kbroker),
                                                                           ("kafka", run_kafka)]
        for name, run in steps:
            if args.only and name != args.only:
                continue
            t0 = time.monotonic()
            results[name] = run(root, args.records)
            print(f"{name}: {results[name]} ({time.monotonic() - t0:.0f} s)", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.only:
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    results["finished"] = time.strftime("%Y-%m-%d %H:%M %Z")
    (args.out / "cluster_bench.json").write_text(json.dumps(results, indent=2) + "\n")
    history.write_report(args.out / "cluster_bench.md", report(results), history_row(results))
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
