"""Issue 15 diagnosis of the confluent-kafka consume and end-to-end latency ratios: both
brokers side by side (bench/paired.py), each gets two 1 KiB topics: "workload", written by
the bench's 1 KiB acks=1 produce (linger.ms=5: batches close on time, so their size depends
on the broker), and "fill", written by workloads.fill (batches closed on size, the same on
both); then for each topic and broker:

* the consumed topic's stored batches: count and mean size per partition, read from the
  segment files (a batch's length is bytes 8-11 of its header, v2 format);
* a consume of the topic (bench/workloads.py ``consume``'s settings) with librdkafka's
  statistics: Fetch requests, bytes received, broker round-trip time (avg/p99, us),
  and the seconds it took.

* fetch-queue back-offs: librdkafka stops fetching a partition for fetch.queue.backoff.ms
  (1 s) when its queue holds more than queued.max.messages.kbytes; each shows as the
  queue staying empty for >= 500 ms while records are still due (``backoffs``).

    python -m bench.consume_diag [--records N] [--reps R] [--consumes C]
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import time
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from bench import paired, workloads


def stored_batches(data_dir: Path, topic: str) -> dict[str, float]:
    """Batches and bytes of ``topic`` in the .log segments under ``data_dir`` (any depth)."""
    batches = size = 0
    for seg in data_dir.rglob("*.log"):
        if not seg.parent.name.startswith(topic + "-"):
            continue
        with open(seg, "rb") as f:
            data = f.read()
        pos = 0
        while pos + 12 <= len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            if length <= 0:
                break
            batches += 1
            size += 12 + length
            pos += 12 + length
    return {"batches": batches, "mean_batch_kib": size / max(batches, 1) / 1024, "stored_mib": size / 2**20}


def backoffs(fetchq_mib: list[int]) -> int:
    """Episodes of an empty fetch queue lasting >= 5 stats windows (500 ms) before the last
    window that held records: librdkafka's fetch-queue back-off (nothing is being fetched)."""
    last = max((i for i, q in enumerate(fetchq_mib) if q), default=0)
    n = i = 0
    while i < last:
        if fetchq_mib[i] == 0 and i > 0 and fetchq_mib[i - 1] > 0:
            j = i
            while j < len(fetchq_mib) and fetchq_mib[j] == 0:
                j += 1
            n += j - i >= 5 and j <= last
            i = j
        else:
            i += 1
    return n


def consume_with_stats(bootstrap: str, topic: str, n: int) -> dict[str, float]:
    stats: list[dict[str, Any]] = []
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused", "enable.auto.commit": False,
                  "statistics.interval.ms": 100, "stats_cb": lambda s: stats.append(json.loads(s))})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(workloads.PARTITIONS)])
    got = 0
    t0 = last = time.perf_counter()
    max_gap = 0.0   # the longest wait for a non-empty consume() (a stall in the stream)
    while got < n:
        ms = c.consume(min(10_000, n - got), 1.0)
        got += len(ms)
        now = time.perf_counter()
        if ms:
            max_gap = max(max_gap, now - last)
            last = now
    elapsed = time.perf_counter() - t0
    # one more stats tick so the counters include the end
    deadline = time.monotonic() + 5
    k = len(stats)
    while len(stats) == k and time.monotonic() < deadline:
        c.poll(0.05)
    c.close()
    last = stats[-1]
    b = next(v for v in last["brokers"].values() if v["nodeid"] >= 0)
    fetches = b["req"].get("Fetch", 0)
    # the rtt windows while records were flowing (the last ones are parked fetches at the end)
    windows = [next(v for v in s["brokers"].values() if v["nodeid"] >= 0)["rtt"] for s in stats[:k]]
    windows = [w for w in windows if w["cnt"] and w["avg"] < 400_000]
    fetchq = [sum(p["fetchq_size"] for t in s["topics"].values() for p in t["partitions"].values()
                  if p["partition"] >= 0) for s in stats[:k]]
    return {"backoffs": backoffs(fetchq), "max_gap_ms": round(max_gap * 1000, 1), "rtt_windows_avg_ms": [round(w["avg"] / 1000, 1) for w in windows],
            "fetchq_bytes_mib": [round(q / 2**20) for q in fetchq],
            "seconds": elapsed, "MB/s": n * 1024 / elapsed / 1e6, "fetches": fetches,
            "rx_mib": b["rxbytes"] / 2**20, "kib_per_fetch": b["rxbytes"] / max(fetches, 1) / 1024,
            "rtt_avg_ms": b["rtt"]["avg"] / 1000, "rtt_p99_ms": b["rtt"]["p99"] / 1000,
            "rtt_max_ms": b["rtt"]["max"] / 1000}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=262_144)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--consumes", type=int, default=1, help="consumes per broker per repetition, alternating")
    args = ap.parse_args()

    def body(i: int, order: list[str], tmp: Path) -> dict[str, Any]:
        # "workload": the 1 KiB acks=1 produce's batches (linger.ms=--linger-ms, 5 as the bench's
        # produce), "fill": workloads.fill's batches closed on size (what the bench now reads)
        rep: dict[str, Any] = {}
        with paired.both_brokers(tmp, order) as brokers:
            for b in order:
                for topic in ("workload", "fill"):
                    workloads.create_topic(brokers[b].bootstrap, topic)
                workloads.produce(brokers[b].bootstrap, "workload", args.records)
                workloads.fill(brokers[b].bootstrap, "fill", args.records)
            for topic in ("workload", "fill"):
                for b in order:
                    rep.setdefault(topic, {})[b] = [stored_batches(tmp / ("kbroker" if b == paired.KB else "kafka"),
                                                                   topic)]
                for _ in range(args.consumes):
                    for b in order:
                        time.sleep(1)
                        rep[topic][b].append(consume_with_stats(brokers[b].bootstrap, topic, args.records))
                        paired.log(f"{topic} {b}: {rep[topic][b][0]} {rep[topic][b][-1]} load {os.getloadavg()}")
        rep["order"] = order
        return rep

    reps = paired.repetitions(args.reps, body)
    print(json.dumps(reps, indent=1))


if __name__ == "__main__":
    main()
