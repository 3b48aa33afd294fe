"""Using more than one core (issue 15): one kbroker broker, two kbroker brokers in one
cluster on the same machine, and one Apache Kafka process, under the same client load:
``make bench-cores``, writes bench/results/cores.md and .json.

Run: ``.venv/bin/python -m bench.suites.cores [--repetitions 3] [--mib 256]``.

A kbroker process handles requests on one event loop, i.e. one core; Kafka spreads its
network and I/O threads over all of them.  The way kbroker uses several cores today is
several broker processes in one cluster (cluster mode: ZooKeeper, ``make cluster``), each
leading a share of the partitions.  Configurations, each started fresh, the order
rotating per repetition:

* ``kbroker x1``: one kbroker broker in cluster mode (ZooKeeper, as the x2 case, so the
  only difference is the number of brokers);
* ``kbroker x2``: two kbroker brokers in one cluster on this machine; the topic's
  partitions (replication factor 1) are spread over both by the controller;
* ``Kafka x1``: one Apache Kafka KRaft process (kafka-server-start.sh's JVM options).

Load, the same for all: a topic of 16 partitions, replication factor 1; ``--mib`` MiB of
1 KiB records produced by 2 client processes at once (bench/workloads.produce: acks=1,
linger.ms=5, batch.size=1 MiB, each process writing all 16 partitions), then read back by
2 consumer processes at once, each assigned 8 of the partitions.  Figures: aggregate MB/s
(total bytes / the wall time until both processes finished) and the broker processes'
total CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from bench.harness import history, kafka_dist, machine, paired, workloads
from bench.harness.common import COMMON, RESULTS
from bench.harness.kafka_dist import KafkaProcess
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.zookeeper_process import ZooKeeperProcess

PARTITIONS = 16
CLIENTS = 2
CONFIGS = ("kbroker x1", "kbroker x2", "Kafka x1")


def _produce_child(bootstrap: str, topic: str, n: int, out: Any) -> None:
    out.put(workloads.produce(bootstrap, topic, n, 1024, acks="1", partitions=PARTITIONS))


def _consume_child(bootstrap: str, topic: str, partitions: list[int], n: int, out: Any) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "cores-unused", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    got, t0, deadline = 0, time.perf_counter(), time.monotonic() + 600
    while got < n and time.monotonic() < deadline:
        for m in c.consume(10_000, 1.0):
            if m.error() is None:
                got += 1
    c.close()
    out.put(time.perf_counter() - t0 if got >= n else -1.0)


def _parallel(target: Any, args_per_child: list[tuple[Any, ...]]) -> float:
    """Run ``target(*args, queue)`` in one spawned process per args; wall seconds until all
    finished (each child reports its own seconds, -1 for a failure)."""
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, q), daemon=True) for a in args_per_child]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    results = [q.get(timeout=900) for _ in procs]
    wall = time.perf_counter() - t0
    for p in procs:
        p.join(30)
    if any(r < 0 for r in results):
        raise RuntimeError(f"a client failed: {results}")
    return wall


def measure(bootstrap: str, pids: list[int], mib: int) -> dict[str, float]:
    n = mib * paired.MIB // 1024

    def cpu() -> float:
        return sum(workloads.cpu_seconds(p) for p in pids)

    workloads.create_topic(bootstrap, "warm-up", PARTITIONS)
    workloads.produce(bootstrap, "warm-up", 20_000, partitions=PARTITIONS)
    workloads.consume(bootstrap, "warm-up", 20_000, partitions=PARTITIONS)
    workloads.create_topic(bootstrap, "load", PARTITIONS)
    out: dict[str, float] = {}
    c0 = cpu()
    wall = _parallel(_produce_child, [(bootstrap, "load", n // CLIENTS)] * CLIENTS)
    out["produce.MBps"] = (n // CLIENTS) * CLIENTS * 1024 / wall / 1e6
    out["produce.cpu_s"] = cpu() - c0
    shares = [list(range(i, PARTITIONS, CLIENTS)) for i in range(CLIENTS)]
    # each consumer reads exactly what its partitions hold: every producer wrote i % 16
    per = (n // CLIENTS) // PARTITIONS
    extra = (n // CLIENTS) % PARTITIONS
    counts = [CLIENTS * sum(per + (1 if p < extra else 0) for p in share) for share in shares]
    c0 = cpu()
    wall = _parallel(_consume_child, [(bootstrap, "load", share, k) for share, k in zip(shares, counts, strict=True)])
    out["consume.MBps"] = sum(counts) * 1024 / wall / 1e6
    out["consume.cpu_s"] = cpu() - c0
    return out


def run_kbroker(root: Path, size: int, mib: int) -> dict[str, float]:
    zk = ZooKeeperProcess(root / "zookeeper").start()
    cluster = Cluster(root / "kbroker", zk, size=size, **COMMON)
    try:
        cluster.start()
        pids = [b.proc.pid for b in cluster.brokers.values()]
        out = measure(cluster.bootstrap, pids, mib)
        if size > 1:  # the partitions really were spread: each broker leads some
            from confluent_kafka.admin import AdminClient
            md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics("load", timeout=30)
            leaders = {p.leader for p in md.topics["load"].partitions.values()}
            wait_until(lambda: len(leaders) == size, f"partitions led by all {size} brokers", 1)
        return out
    finally:
        cluster.stop()
        zk.stop()


def run_kafka(root: Path, mib: int) -> dict[str, float]:
    k = KafkaProcess(root / "kafka", overrides=COMMON).start()
    try:
        return measure(k.bootstrap, [k.proc.pid], mib)
    finally:
        k.stop()


def markdown(results: dict[str, Any]) -> str:
    reps = results["repetitions"]
    out = ["# Using more than one core: 1 vs 2 kbroker brokers on one machine, vs one Kafka", "",
           f"Made by `make bench-cores` (bench/suites/cores.py), finished {results['finished']}, "
           f"{len(reps)} repetition(s), {results['mib']} MiB of 1 KiB records, topic of {PARTITIONS} partitions "
           f"(RF 1), {CLIENTS} producer processes then {CLIENTS} consumer processes at once. "
           "Cells: median (min–max). Ratios are taken within a repetition.", "",
           "| configuration | produce MB/s | consume MB/s | broker CPU s, produce | broker CPU s, consume |",
           "|---|---|---|---|---|"]
    for cfg in CONFIGS:
        def xs(fid: str, cfg: str = cfg) -> list[float]:
            return [r[cfg][fid] for r in reps if cfg in r]
        out.append(f"| {cfg} | {paired.cell(xs('produce.MBps'), '.1f')} | {paired.cell(xs('consume.MBps'), '.1f')} | "
                   f"{paired.cell(xs('produce.cpu_s'), '.1f')} | {paired.cell(xs('consume.cpu_s'), '.1f')} |")
    out += ["", "| ratio | produce | consume |", "|---|---|---|"]
    for a, b in (("kbroker x2", "kbroker x1"), ("kbroker x1", "Kafka x1"), ("kbroker x2", "Kafka x1")):
        cells = []
        for fid in ("produce.MBps", "consume.MBps"):
            cells.append(paired.cell([r[a][fid] / r[b][fid] for r in reps if a in r and b in r]))
        out.append(f"| {a} / {b} | {cells[0]} | {cells[1]} |")
    errors = [f"- repetition {i + 1}, {cfg}: {e}" for i, r in enumerate(reps) for cfg, e in r.get("errors", {}).items()]
    if errors:
        out += ["", "## Failures", "", *errors]
    out += ["", "## Machine", ""] + [f"- {k}: {v}" for k, v in results["machine"].items()]
    return "\n".join(out) + "\n"


def history_row(results: dict[str, Any]) -> dict[str, str]:
    """This run's row of the history table: median throughput ratios, produce / consume."""
    reps = results["repetitions"]
    row = {"finished": results["finished"], "kbroker": history.commit_of(results["machine"]), "reps": str(len(reps))}
    for a, b in (("kbroker x2", "kbroker x1"), ("kbroker x1", "Kafka x1"), ("kbroker x2", "Kafka x1")):
        row[f"{a} / {b}, produce / consume"] = " / ".join(
            history.median_cell([r[a][fid] / r[b][fid] for r in reps if a in r and b in r])
            for fid in ("produce.MBps", "consume.MBps"))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    results: dict[str, Any] = {"mib": args.mib, "repetitions": [], "machine": machine.facts(
        Path("/tmp"), kafka_dist.kafka_version(), kafka_dist.java_version())}
    runs = {"kbroker x1": lambda root: run_kbroker(root, 1, args.mib),
            "kbroker x2": lambda root: run_kbroker(root, 2, args.mib),
            "Kafka x1": lambda root: run_kafka(root, args.mib)}
    from bench.harness.common import compile_kbroker
    compile_kbroker()
    args.out.mkdir(parents=True, exist_ok=True)
    for i in range(args.repetitions):
        order = list(CONFIGS[i % 3:] + CONFIGS[:i % 3])
        rep: dict[str, Any] = {"order": order}
        for cfg in order:
            root = Path(tempfile.mkdtemp(prefix="kbroker-cores-"))
            try:
                rep[cfg] = runs[cfg](root)
                paired.log(f"{cfg}: {rep[cfg]}")
            except Exception as e:  # keep the others
                rep.setdefault("errors", {})[cfg] = f"{type(e).__name__}: {str(e)[:300]}"
                paired.log(f"{cfg}: FAILED: {e}")
            finally:
                shutil.rmtree(root, ignore_errors=True)
        results["repetitions"].append(rep)
        results["finished"] = time.strftime("%Y-%m-%d %H:%M %Z")
        (args.out / "cores.json").write_text(json.dumps(results, indent=1) + "\n")
        history.write_report(args.out / "cores.md", markdown(results), history_row(results), same_run=i > 0)
    print((args.out / "cores.md").read_text())


if __name__ == "__main__":
    main()
