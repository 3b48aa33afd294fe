"""The data the Spark tests produce with confluent-kafka, and the exact expectations.

Records carry what Spark's Kafka source exposes: key, value, headers, partition, offset,
timestamp, timestampType.  Some keys and values are null or empty, some headers have
empty or null values or repeat a key, and timestamps are explicit and *not* monotonic
within a partition (they step back now and then and repeat), so a timestamp lookup must
do what Kafka's does: the first offset whose timestamp is >= the target.  Offsets are
never guessed: they come from confluent-kafka's delivery reports.
"""

from __future__ import annotations

import random
import time
from typing import NamedTuple

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

# An hour before the run, on a whole second: inside retention.ms (7 days) and clear of
# message.timestamp.after.max.ms (1 h), whenever the suite runs.
BASE_TIMESTAMP_MS = (int(time.time()) - 3600) * 1000

Header = tuple[str, bytes | None]


class Rec(NamedTuple):
    """One record as Spark's Kafka source returns it (timestamp in epoch ms)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp_ms: int
    timestamp_type: int = 0  # CreateTime


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def make_records(n: int, partitions: int, seed: int = 7) -> list[Rec]:
    """``n`` records spread unevenly over ``partitions`` (offset still unknown: -1)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        key = None if i % 97 == 0 else b"key-%06d" % i
        if i % 101 == 0:
            value: bytes | None = None
        elif i % 89 == 0:
            value = b""
        else:
            value = b"value-%d-" % i + rng.randbytes(rng.randint(0, 60))
        kind = i % 6
        if kind == 0:
            headers: tuple[Header, ...] = ()
        elif kind in (1, 2):
            headers = (("seq", b"%d" % i),)
        elif kind == 3:
            headers = (("trace-id", rng.randbytes(8)), ("empty", b""), ("null", None))
        elif kind == 4:
            headers = (("dup", b"first"), ("dup", b"second"), ("utf8-\u20ac", b"\xe2\x82\xac"))
        else:
            headers = (("seq", b"%d" % i), ("null", None))
        ts = BASE_TIMESTAMP_MS + i * 2 + rng.randint(-40, 40)
        partition = rng.choice((0, 0, 1, 2, 2, 2, 3)) % partitions
        out.append(Rec(partition, -1, key, value, headers, ts))
    return out


def produce(bootstrap: str, topic: str, records: list[Rec], timeout_s: float = 60.0) -> list[Rec]:
    """Produce ``records`` in order with confluent-kafka; return them with their offsets."""
    delivered: dict[int, int] = {}
    errors: list[str] = []

    def on_delivery(index: int):
        def report(err, msg) -> None:
            if err is not None:
                errors.append(f"record {index}: {err}")
            else:
                delivered[index] = msg.offset()
        return report

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    for i, r in enumerate(records):
        while True:
            try:
                p.produce(topic, key=r.key, value=r.value, partition=r.partition,
                          headers=list(r.headers) or None, timestamp=r.timestamp_ms,
                          on_delivery=on_delivery(i))
                break
            except BufferError:  # local queue full: let deliveries drain it
                p.poll(0.1)
    remaining = p.flush(timeout_s)
    assert remaining == 0 and not errors, (remaining, errors[:5])
    return [r._replace(offset=delivered[i]) for i, r in enumerate(records)]


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int,
                timeout_s: float = 60.0) -> list[Rec]:
    """Every record of ``topic`` read with assign() from offset 0, until ``expected`` arrived
    and each partition reached its high watermark (so extra records are seen too)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-it-check",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[Rec] = []
        at_eof: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(out) < expected or len(at_eof) < partitions:
            assert time.monotonic() < deadline, f"consumed {len(out)} of {expected} in {timeout_s}s"
            msg = c.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                at_eof.add(msg.partition())
                continue
            at_eof.discard(msg.partition())
            ts_type, ts = msg.timestamp()
            out.append(Rec(msg.partition(), msg.offset(), msg.key(), msg.value(),
                           tuple(msg.headers() or ()), ts, ts_type - 1))  # librdkafka: 1 = CreateTime
        return out
    finally:
        c.close()


def first_offset_at_or_after(records: list[Rec], partition: int, target_ms: int) -> int | None:
    """Brute force over every record: the first offset of ``partition`` whose timestamp is
    >= ``target_ms`` (what Kafka's ListOffsets by timestamp answers), or None."""
    for r in sorted(records, key=lambda r: r.offset):
        if r.partition == partition and r.timestamp_ms >= target_ms:
            return r.offset
    return None
