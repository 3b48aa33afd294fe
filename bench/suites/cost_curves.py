"""Cost curves, kbroker beside Apache Kafka (issue 15): how produce and consume throughput
and the broker's CPU per GB move as partitions per broker grow (10, 100, 1,000, 10,000)
and as concurrent producer connections grow (1, 10, 100): ``make bench-curves``, writes
bench/results/cost_curves.md, .json and cost_curves.png.

Run: ``.venv/bin/python -m bench.suites.cost_curves [--repetitions 1] [--mib 32]``.

Partitions per broker: 10, 100, 1,000, 5,000 and 10,000; each point's topic is deleted once
it is measured, so the broker holds that point's partitions (plus the connections topic and
the internal ones).  See kbroker_fds_per_partition for what limits kbroker.

Frame: bench/harness/paired.py (both brokers fresh per repetition, each point measured on one
broker and then the other, the first alternating per repetition).  Every point is short:

* partitions P: a topic of P partitions (created untimed, waited for in the metadata), then
  ``--mib`` MiB of 1 KiB records produced round-robin over the P partitions by one
  confluent-kafka producer (acks=1, linger.ms=5, batch.size=1 MiB, bench/workloads.produce),
  then read back 3 times (CONSUME_READS, timed together), each by a new consumer assigned
  all P partitions at offset 0 and connected before its clock starts (bench/workloads.consume:
  with OFFSET_BEGINNING librdkafka sends one ListOffsets per partition, and at 10,000
  partitions some of them leave its queue 1-14 s late on either broker: the figure was that
  client's start-up, not the broker's reads; bench/results/diagnostics.md); after the point its
  topic is deleted on both brokers and the next point starts once the topic's files are gone
  (file.delete.delay.ms, 60 s);
* connections N: N confluent-kafka producers (one TCP connection to the broker each, all in
  this process, fed round-robin by one loop) produce ``--mib`` MiB of 1 KiB records to a
  topic of 10 partitions, each producer's records spread over all 10; timed from the first
  ``produce()`` to the last ``flush()``.

Figures per point and broker: MB/s of record values (10^6 B), and the broker process's CPU
seconds (utime+stime from /proc/<pid>/stat) per GB (10^9 B) of values.  The connections
points run first, so that the 10,000-partition topic does not sit in their broker.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from bench.harness import history, kafka_dist, machine, paired, workloads
from bench.harness.common import RESULTS
from bench.harness.paired import KAFKA, KB

PARTITION_POINTS = (10, 100, 1_000, 5_000, 10_000)
# Descriptors a kbroker partition holds: its active segment's .log, and once the segment has
# an index entry (more than index.interval.bytes = 4096 B written) the .index and .timeindex
# through their mmaps (CPython's mmap keeps a dup of the file's descriptor for the mapping's
# lifetime; ``trackfd=False`` exists only from Python 3.13; an index is mapped at its first
# entry, as Kafka's LazyIndex opens on first use).  Kafka holds 1 (a MappedByteBuffer keeps
# none).  A point needing more than the soft RLIMIT_NOFILE allows (20,000 on the machine of
# the committed results, not raisable there) is recorded as not measured rather than letting
# the broker fail its CreateTopics with EMFILE.
INDEX_INTERVAL_BYTES = 4096


def kbroker_fds_per_partition(bytes_per_partition: int) -> int:
    return 3 if bytes_per_partition > INDEX_INTERVAL_BYTES else 1
# KRaft refuses a controller operation of more than 10,000 records (QuorumController's
# MAX_RECORDS_PER_USER_OP): a topic of P partitions is 1 + P records, so a larger topic is
# created with this many partitions and grown with CreatePartitions.
KAFKA_CREATE_STEP = 5_000
CONNECTION_POINTS = (1, 10, 100)
CONNECTION_TOPIC_PARTITIONS = 10
# A consume point reads its topic this many times (each from offset 0, a new consumer), timed
# together: one read of 32 MiB is 0.1-2 s, short enough for one scheduling hiccup on either
# side to move the ratio (as bench/suites/side_by_side.py's CONSUME_READS).
CONSUME_READS = 3


def create_topic(bootstrap: str, topic: str, partitions: int, timeout_s: float = 600) -> float:
    """Create a topic and wait until the metadata shows every partition with a leader;
    returns the seconds that took (a figure of its own at 10,000 partitions)."""
    # socket.timeout.ms: librdkafka's per-request timeout (60 s default) would end a long
    # CreateTopics before the broker answers (300 s is its maximum)
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": min(300_000, int(timeout_s * 1000))})
    t0 = time.monotonic()
    first = min(partitions, KAFKA_CREATE_STEP)
    admin.create_topics([NewTopic(topic, first, 1)], request_timeout=timeout_s)[topic].result(timeout_s)
    while first < partitions:
        first = min(partitions, first + KAFKA_CREATE_STEP)
        admin.create_partitions([NewPartitions(topic, first)], request_timeout=timeout_s)[topic].result(timeout_s)
    deadline = t0 + timeout_s
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=60).topics.get(topic)
        if (md is not None and md.error is None and len(md.partitions) == partitions
                and all(p.leader >= 0 for p in md.partitions.values())):
            return time.monotonic() - t0
        time.sleep(0.2)
    raise RuntimeError(f"{topic} ({partitions} partitions) did not appear in {bootstrap}'s metadata")


def delete_topic(bootstrap: str, topic: str, timeout_s: float = 300) -> None:
    """Delete a point's topic once it is measured, and wait until the metadata has no trace."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": min(300_000, int(timeout_s * 1000))})
    admin.delete_topics([topic], request_timeout=timeout_s)[topic].result(timeout_s)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if topic not in admin.list_topics(timeout=60).topics:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{topic} still in {bootstrap}'s metadata {timeout_s} s after its deletion")


def wait_files_deleted(data_dir: Path, topic: str, timeout_s: float = 300) -> float:
    """Wait until no partition directory of ``topic`` is left under ``data_dir`` (a deleted
    topic's directories are renamed ``<topic>-<p>.<id>-delete`` and removed after
    file.delete.delay.ms, 60 s on both brokers); returns the seconds waited.  The next point
    must not share the machine with the previous point's file deletion."""
    t0 = time.monotonic()
    prefix = topic + "-"
    while any(d.name.startswith(prefix) for d in data_dir.rglob(prefix + "*") if d.is_dir()):
        if time.monotonic() - t0 > timeout_s:
            raise RuntimeError(f"{topic}'s directories still under {data_dir} {timeout_s} s after its deletion")
        time.sleep(1)
    return time.monotonic() - t0


def produce_many(bootstrap: str, topic: str, n: int, connections: int, partitions: int) -> float:
    """``n`` 1 KiB records through ``connections`` producers; seconds from first produce to last flush."""
    value = os.urandom(1024)
    errors: list[str] = []

    def report(err: object, _msg: object) -> None:
        errors.append(str(err))

    conf = {"bootstrap.servers": bootstrap, "linger.ms": workloads.LINGER_MS, "batch.size": workloads.BATCH_BYTES,
            "acks": "1", "delivery.report.only.error": True, "on_delivery": report,
            "queue.buffering.max.kbytes": max(1024, 1_048_576 // connections)}
    producers = [Producer(conf) for _ in range(connections)]
    for p in producers:  # connect (and fetch metadata) before the clock starts
        p.list_topics(topic, timeout=60)
    t0 = time.perf_counter()
    for i in range(n):
        p = producers[i % connections]
        while True:
            try:
                p.produce(topic, value, partition=(i // connections) % partitions)
                break
            except BufferError:
                p.poll(0.005)
        if i % 1000 == 0:
            p.poll(0)
    left = sum(p.flush(600) for p in producers)
    elapsed = time.perf_counter() - t0
    if left or errors:
        raise RuntimeError(f"produce through {connections} connections: {left} undelivered, errors {errors[:3]}")
    return elapsed


def body(mib: int, partition_points: tuple[int, ...] = PARTITION_POINTS,
         connection_points: tuple[int, ...] = CONNECTION_POINTS) -> Any:
    n = mib * paired.MIB // 1024
    gb = n * 1024 / 1e9

    def point(prefix: str, times: int = 1) -> Any:
        """``times``: how often the point moved its ``n`` records in ``seconds``."""
        def fold(seconds: float, pid: int, cpu0: float) -> dict[str, float]:
            return {f"{prefix}.MBps": times * n * 1024 / seconds / 1e6,
                    f"{prefix}.cpu_s_per_GB": (workloads.cpu_seconds(pid) - cpu0) / (times * gb)}
        return fold

    def run(i: int, order: list[str], tmp: Path) -> dict[str, Any]:
        rep: dict[str, Any] = {"create_s": {}}
        with paired.both_brokers(tmp, order) as brokers:
            for b in order if connection_points else []:
                create_topic(brokers[b].bootstrap, "connections", CONNECTION_TOPIC_PARTITIONS)
            for c in connection_points:
                def conns(bs: str, pid: int, c: int = c) -> dict[str, float]:
                    cpu0 = workloads.cpu_seconds(pid)
                    s = produce_many(bs, "connections", n, c, CONNECTION_TOPIC_PARTITIONS)
                    return point(f"conn{c}.produce")(s, pid, cpu0)
                paired.run_pair(f"{c} connections", conns, order, brokers, rep)
            soft_nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            for parts in partition_points:
                topic = f"p{parts}"
                # each point's topic is deleted after it (below): what the broker holds is this
                # topic, the connections topic and the internal ones (~100)
                per_partition = kbroker_fds_per_partition(n * 1024 // parts)
                fds = parts * per_partition + (CONNECTION_TOPIC_PARTITIONS + 100) * 3
                for b in order:
                    if b == KB and fds > soft_nofile:
                        why = (f"not measured: {parts:,} partitions x {per_partition} descriptors + the other "
                               f"topics' > RLIMIT_NOFILE {soft_nofile:,}")
                        rep.setdefault("errors", {}).setdefault(f"create {topic}", {})[b] = why
                        paired.log(f"{b}: {topic} {why}")
                        continue
                    try:
                        rep["create_s"].setdefault(topic, {})[b] = create_topic(brokers[b].bootstrap, topic, parts)
                        paired.log(f"{b}: {topic} created in {rep['create_s'][topic][b]:.1f} s")
                    except Exception as e:
                        rep.setdefault("errors", {}).setdefault(f"create {topic}", {})[b] = str(e)[:300]
                        paired.log(f"{b}: creating {topic} FAILED: {e}")

                def prod(bs: str, pid: int, parts: int = parts, topic: str = topic) -> dict[str, float]:
                    cpu0 = workloads.cpu_seconds(pid)
                    s = workloads.produce(bs, topic, n, 1024, acks="1", partitions=parts)
                    return point(f"p{parts}.produce")(s, pid, cpu0)

                def cons(bs: str, pid: int, parts: int = parts, topic: str = topic) -> dict[str, float]:
                    cpu0 = workloads.cpu_seconds(pid)
                    s = sum(workloads.consume(bs, topic, n, partitions=parts, offset=0, connect_first=True)
                            for _ in range(CONSUME_READS))
                    return point(f"p{parts}.consume", CONSUME_READS)(s, pid, cpu0)

                measurable = [b for b in order if b in rep["create_s"].get(topic, {})]
                paired.run_pair(f"{parts} partitions produce", prod, measurable, brokers, rep)
                paired.run_pair(f"{parts} partitions consume", cons, measurable, brokers, rep)
                for b in measurable:   # the next point measures its own partitions only
                    delete_topic(brokers[b].bootstrap, topic)
                for b in measurable:   # ... and runs once their files are gone
                    waited = wait_files_deleted(brokers[b].data_dir, topic)
                    paired.log(f"{b}: {topic}'s files deleted after {waited:.0f} s")
        return rep
    return run


def run_points(results: dict[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(partition points, connection points) the run measured (``--partitions``,
    ``--connections``; results from before the key: all)."""
    chosen = results.get("points", {})
    return (tuple(chosen.get("partitions", PARTITION_POINTS)), tuple(chosen.get("connections", CONNECTION_POINTS)))


def rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(axis label, point label, figure prefix) of the points the run measured."""
    parts, conns = run_points(results)
    out = [("connections", f"{c}", f"conn{c}.produce") for c in conns]
    for p in parts:
        out += [("partitions, produce", f"{p:,}", f"p{p}.produce"), ("partitions, consume", f"{p:,}", f"p{p}.consume")]
    return out


def markdown(results: dict[str, Any]) -> str:
    reps = results["repetitions"]
    out = ["# Cost curves: kbroker vs Apache Kafka as partitions and connections grow", "",
           f"Made by `make bench-curves` (bench/suites/cost_curves.py), finished {results['finished']}, "
           f"{len(reps)} repetition(s), orders {', '.join('→'.join(r['order']) for r in reps)}; "
           f"{results['mib']} MiB of 1 KiB records per point. Cells: median (min–max) over repetitions; "
           "ratio = kbroker/Kafka within a repetition. MB/s ratios > 1 and CPU ratios < 1 favour kbroker. "
           "CPU s/GB = the broker process's user+system seconds per 10^9 B of record values.",
           "", "![cost curves](cost_curves.png)", "",
           "| curve | point | kbroker MB/s | Kafka MB/s | ratio | kbroker CPU s/GB | Kafka CPU s/GB | CPU ratio |",
           "|---|---|---|---|---|---|---|---|"]
    for axis, label, prefix in rows(results):
        mb, cpu = f"{prefix}.MBps", f"{prefix}.cpu_s_per_GB"
        out.append(f"| {axis} | {label} | {paired.cell(paired.values(reps, mb, KB), '.1f')} | "
                   f"{paired.cell(paired.values(reps, mb, KAFKA), '.1f')} | {paired.cell(paired.ratios(reps, mb))} | "
                   f"{paired.cell(paired.values(reps, cpu, KB), '.1f')} | {paired.cell(paired.values(reps, cpu, KAFKA), '.1f')} | "
                   f"{paired.cell(paired.ratios(reps, cpu))} |")
    out += ["", "Topic creation (CreateTopics until every partition has a leader in Metadata), seconds:", "",
            "| partitions | kbroker | Kafka |", "|---|---|---|"]
    for p in run_points(results)[0]:
        per = {b: [r["create_s"][f"p{p}"][b] for r in reps if b in r.get("create_s", {}).get(f"p{p}", {})]
               for b in (KB, KAFKA)}
        out.append(f"| {p:,} | {paired.cell(per[KB])} | {paired.cell(per[KAFKA])} |")
    if paired.failures(reps):
        out += ["", "## Failures", "", *paired.failures(reps)]
    out += ["", "## Machine", ""] + [f"- {k}: {v}" for k, v in results["machine"].items()]
    return "\n".join(out) + "\n"


def history_row(results: dict[str, Any]) -> dict[str, str]:
    """This run's row of the history table: median MB/s ratios kbroker/Kafka per point ("—":
    not measured in this run)."""
    reps = results["repetitions"]

    def ratios(prefixes: list[str]) -> str:
        return " / ".join(history.median_cell(paired.ratios(reps, f"{p}.MBps")) for p in prefixes)
    parts = " / ".join(f"{p:,}" for p in PARTITION_POINTS)
    return {"finished": results["finished"], "kbroker": history.commit_of(results["machine"]),
            "reps": str(len(reps)), "MiB per point": str(results["mib"]),
            f"produce at {parts} partitions": ratios([f"p{p}.produce" for p in PARTITION_POINTS]),
            f"consume at {parts} partitions": ratios([f"p{p}.consume" for p in PARTITION_POINTS]),
            "produce with " + " / ".join(map(str, CONNECTION_POINTS)) + " connections":
                ratios([f"conn{c}.produce" for c in CONNECTION_POINTS])}


def chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reps = results["repetitions"]
    colors = {KB: "#1f77b4", KAFKA: "#d62728"}
    panels = [("produce MB/s vs partitions", PARTITION_POINTS, "p{}.produce.MBps"),
              ("consume MB/s vs partitions", PARTITION_POINTS, "p{}.consume.MBps"),
              ("produce MB/s vs connections", CONNECTION_POINTS, "conn{}.produce.MBps"),
              ("produce CPU s/GB vs partitions", PARTITION_POINTS, "p{}.produce.cpu_s_per_GB"),
              ("consume CPU s/GB vs partitions", PARTITION_POINTS, "p{}.consume.cpu_s_per_GB"),
              ("produce CPU s/GB vs connections", CONNECTION_POINTS, "conn{}.produce.cpu_s_per_GB")]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    for ax, (title, xs, pattern) in zip(axes.flat, panels, strict=True):
        for b in (KB, KAFKA):
            pts = [(x, paired.median(paired.values(reps, pattern.format(x), b))) for x in xs]
            pts = [(x, y) for x, y in pts if y is not None]
            ax.plot([x for x, _ in pts], [y for _, y in pts], "o-", color=colors[b], label=b)
        ax.set_xscale("log")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"{x:,}" for x in xs])
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("kbroker vs Apache Kafka: cost as the work grows (medians; 1 KiB records)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=1)
    ap.add_argument("--mib", type=int, default=32, help="MiB of 1 KiB records per point")
    ap.add_argument("--partitions", help="comma-separated partition points (default all)")
    ap.add_argument("--connections", help="comma-separated connection points (default all; 'none')")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    def points(arg: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
        if arg is None:
            return default
        return () if arg == "none" else tuple(int(x) for x in arg.split(","))
    parts, conns = points(args.partitions, PARTITION_POINTS), points(args.connections, CONNECTION_POINTS)
    results: dict[str, Any] = {"mib": args.mib, "points": {"partitions": parts, "connections": conns}, "machine": machine.facts(
        Path("/tmp"), kafka_dist.kafka_version(), kafka_dist.java_version())}
    args.out.mkdir(parents=True, exist_ok=True)

    def save(reps: list[dict[str, Any]]) -> None:
        results["repetitions"] = reps
        results["finished"] = time.strftime("%Y-%m-%d %H:%M %Z")
        (args.out / "cost_curves.json").write_text(json.dumps(results, indent=1) + "\n")
        history.write_report(args.out / "cost_curves.md", markdown(results), history_row(results),
                             same_run=len(reps) > 1)
        chart(results, args.out / "cost_curves.png")

    paired.repetitions(args.repetitions, body(args.mib, parts, conns), after_each=save)
    print((args.out / "cost_curves.md").read_text())


if __name__ == "__main__":
    main()
