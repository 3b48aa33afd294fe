"""The workloads the benchmarks drive, each a function of a bootstrap address, so the same
code runs against kbroker and against Apache Kafka (bench/suites/side_by_side.py) and against
kbroker alone (bench/suites/produce_consume.py).

* ``produce``: confluent-kafka, values of ``record_bytes`` random bytes, no key, no
  compression, round-robin over the topic's partitions, ``linger.ms=5``,
  ``batch.size=1048576``; timed from the first ``produce()`` to the end of ``flush()``.
* ``consume``: one confluent-kafka consumer ``assign()``ed to every partition from the
  beginning, timed until the last record arrived.
* ``fill``: ``produce`` untimed with ``linger.ms=FILL_LINGER_MS``, so every batch closes on
  size (librdkafka caps one at message.max.bytes, 1,000,000) and the stored batches do not
  depend on how fast the broker acknowledged: what the consume workloads read is the same
  on both brokers (bench/results/profile.md, "consume ratio").
* ``latency``: records produced at a fixed rate, each carrying its send time, read by a
  consumer in another process; produce-to-consume latency per record.
* ``cold_start``: process start until the first acknowledged produce.
* ``peak_rss`` / ``reset_peak_rss`` / ``cpu_seconds``: what /proc says about a process;
  ``client_cpu_seconds``: what this process and its children have used (the client side).
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import struct
import time
from array import array
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Protocol

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 8
LINGER_MS = 5
BATCH_BYTES = 1_048_576
LATENCY_LINGER_MS = 5
# linger.ms of ``fill``: long enough that a 1 MB batch fills before it expires at any broker
# speed measured here (1 KiB records arrive at > 100 MB/s), short enough to end the topic
FILL_LINGER_MS = 100


class Broker(Protocol):
    """What the workloads need of a broker process: tests/compat's BrokerProcess and
    bench/kafka_dist's KafkaProcess both have it."""

    @property
    def bootstrap(self) -> str: ...

    def start(self, timeout_s: float = ...) -> Broker: ...

    def stop(self, timeout_s: float = ...) -> int: ...


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    # The topic is in the broker's metadata once a Metadata request sees its partitions
    # (Kafka's brokers learn it from the controller a moment after CreateTopics answers).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions:
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {topic} did not appear in {bootstrap}'s metadata")


def fill(bootstrap: str, topic: str, n: int, record_bytes: int = 1024) -> None:
    """``n`` records into ``topic`` in batches closed on size, not on time (see the module
    docstring): the consume workloads' source, the same batches on either broker."""
    produce(bootstrap, topic, n, record_bytes, linger_ms=FILL_LINGER_MS)


def produce(bootstrap: str, topic: str, n: int, record_bytes: int = 1024, acks: str = "1",
            partitions: int = PARTITIONS, linger_ms: int | None = None) -> float:
    """Produce ``n`` records; returns the seconds it took (first produce() to flush's end)."""
    value = os.urandom(record_bytes)
    errors: list[str] = []

    def report(err: object, _msg: object) -> None:
        errors.append(str(err))

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": LINGER_MS if linger_ms is None else linger_ms,
                  "batch.size": BATCH_BYTES,
                  "acks": acks, "queue.buffering.max.kbytes": 1_048_576,
                  "queue.buffering.max.messages": 1_000_000,
                  # a delivery report only for a failed record: the Python callback per record
                  # would otherwise cost the client more than the broker spends on it
                  "delivery.report.only.error": True, "on_delivery": report})
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.005)
        if i % 10_000 == 0:
            p.poll(0)
    left = p.flush(600)
    elapsed = time.perf_counter() - t0
    if left or errors:
        raise RuntimeError(f"produce to {bootstrap} failed: {left} undelivered, errors {errors[:3]}")
    return elapsed


def consume(bootstrap: str, topic: str, n: int, partitions: int = PARTITIONS,
            offset: int = OFFSET_BEGINNING, connect_first: bool = False) -> float:
    """Read ``n`` records from ``offset`` (default the beginning) of every partition; returns
    the seconds it took, from just after ``assign()`` to the last record.

    ``connect_first``: the consumer fetches the topic's metadata (connecting to the broker)
    before the clock starts, as ``cost_curves.produce_many`` connects its producers.  With
    ``offset`` a real offset the consumer sends no ListOffsets: librdkafka asks for a logical
    offset (BEGINNING) with one ListOffsets request per partition, and at thousands of
    partitions some of those leave its queue seconds late on either broker
    (bench/results/cost_curves.md, "Consume at 10,000 partitions")."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused", "enable.auto.commit": False})
    if connect_first:
        c.list_topics(topic, timeout=60)
    c.assign([TopicPartition(topic, p, offset) for p in range(partitions)])
    got = 0
    t0 = time.perf_counter()
    deadline = time.monotonic() + 600
    try:
        while got < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consume from {bootstrap} stalled at {got} of {n}")
            # never ask for more than is left: consume(k, 1.0) waits out its 1 s timeout when
            # fewer than k records remain, and that second was timed (both brokers alike)
            for m in c.consume(min(10_000, n - got), 1.0):
                if m.error() is not None:
                    raise RuntimeError(f"consume error: {m.error()}")
                got += 1
        return time.perf_counter() - t0
    finally:
        c.close()


# ---------------------------------------------------------------- end-to-end latency

_STAMP = struct.Struct(">q")


def _latency_reader(bootstrap: str, topic: str, n: int, partitions: int, conn: Connection) -> None:
    """In a child process (so the producer's pacing loop and this loop never wait for each
    other's GIL): read ``n`` records, send back each one's latency in ns.  Both processes
    stamp with CLOCK_MONOTONIC, one clock for the whole machine."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    c.poll(0.5)  # connect and start fetching before the producer starts
    conn.send("ready")
    lat = array("q")
    deadline = time.monotonic() + 600
    while len(lat) < n and time.monotonic() < deadline:
        m = c.poll(0.5)  # poll, not consume(k): consume waits for k records or its timeout
        if m is None:
            continue
        now = time.monotonic_ns()
        if m.error() is not None:
            continue
        lat.append(now - _STAMP.unpack_from(m.value())[0])
    c.close()
    conn.send_bytes(lat.tobytes())


def latency(bootstrap: str, topic: str, rate: int, seconds: float, warmup_s: float = 1.0,
            record_bytes: int = 100, partitions: int = PARTITIONS) -> list[float]:
    """Produce at ``rate`` records/s for ``warmup_s`` and then ``seconds``; returns the
    produce-to-consume latency in ms of each record after the warm-up, in the order they
    arrived.  The pacing loop sends what is due every 0.5 ms, so the offered rate is exact
    to within a few records.

    The producer has acks=1 and the clients' default linger.ms=5, as ``produce`` has.  With
    linger.ms=1 or 0 librdkafka sends a request per record or two; at 10,000 records/s that
    kept Kafka's request handlers and JIT busier than this 2-core machine allows, and the
    figures measured its backlog (seconds).  The warm-up is there for the JVM too: Kafka's
    request path runs interpreted until the JIT has compiled it, seconds of traffic here."""
    n = int(rate * (warmup_s + seconds))
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    reader = ctx.Process(target=_latency_reader, args=(bootstrap, topic, n, partitions, child), daemon=True)
    reader.start()
    if not parent.poll(60):
        reader.kill()
        raise RuntimeError("latency reader did not start")
    parent.recv()
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": LATENCY_LINGER_MS, "acks": "1"})
    pad = os.urandom(record_bytes - _STAMP.size)
    t0 = time.monotonic()
    sent = 0
    while sent < n:
        due = min(n, int((time.monotonic() - t0) * rate) + 1)
        while sent < due:
            p.produce(topic, _STAMP.pack(time.monotonic_ns()) + pad, partition=sent % partitions)
            sent += 1
        p.poll(0)
        time.sleep(0.0005)
    p.flush(60)
    if not parent.poll(120):
        reader.kill()
        raise RuntimeError("latency reader did not finish")
    lat = array("q")
    lat.frombytes(parent.recv_bytes())
    reader.join(10)
    if len(lat) < n:
        raise RuntimeError(f"latency: {len(lat)} of {n} records came back")
    return [x / 1e6 for x in lat[int(rate * warmup_s):]]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of unsorted values."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100 * len(s) + 0.5)) - 1))
    return s[k]


# ---------------------------------------------------------------- start-up

def cold_start(make: Callable[[], Broker], topic: str = "cold-start") -> tuple[float, Broker]:
    """Seconds from launching the broker process until its first acknowledged produce (to a
    topic it auto-creates), and the running broker.  The producer is created once the
    broker logged that it listens; its back-offs are shortened so that client retry timers
    do not round the figure up."""
    broker = make()
    t0 = time.monotonic()
    broker.start()
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0,
                  "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50,
                  "retry.backoff.ms": 10, "retry.backoff.max.ms": 50,
                  "message.timeout.ms": 120_000})
    results: list[object] = []
    p.produce(topic, b"x", on_delivery=lambda err, _msg: results.append(err))
    p.flush(130)
    if results != [None]:
        broker.stop()
        raise RuntimeError(f"no acknowledged produce after start: {results}")
    return time.monotonic() - t0, broker


# ---------------------------------------------------------------- /proc

def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def peak_rss(pid: int) -> int:
    """Bytes: the process's resident-set high-water mark (VmHWM) since start or the last reset."""
    return _status(pid, "VmHWM")


def reset_peak_rss(pid: int) -> bool:
    """Reset VmHWM to the current RSS (writing 5 to clear_refs, Linux >= 4.0); False when not
    permitted, and then the peak counts from the process's start."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def client_cpu_seconds() -> float:
    """User + system CPU time so far of this process (the confluent-kafka clients run in it,
    librdkafka's threads included) and of its waited-for children (the Java tools, the latency
    reader): the client side of a workload, as a difference of two calls around it."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
