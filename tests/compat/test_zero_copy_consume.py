"""Stock consumers read large fetches that the broker process sends with sendfile.

A broker at DEBUG (its "sent N record slices ... with sendfile" line proves the path ran);
~8 MiB of 64 KiB values over four partitions produced by confluent-kafka, then read back
from the beginning by a confluent-kafka consumer and by kafka-python: every value arrives,
once, identical, in order per partition.
"""

from __future__ import annotations

import hashlib
import re
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

TOPIC = "zero-copy"
PARTITIONS = 4
PER_PARTITION = 32
VALUE_BYTES = 64 * 1024
DEADLINE_S = 60.0
SENDFILE_LINE = re.compile(r"sent (\d+) record slices \((\d+) bytes\) to \S+ with sendfile")


def value(partition: int, i: int) -> bytes:
    seed = hashlib.sha256(b"%d-%d" % (partition, i)).digest()
    return (seed * (VALUE_BYTES // len(seed) + 1))[:VALUE_BYTES]


def _fill(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(DEADLINE_S) is None
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20,
                  "compression.type": "none"})
    errors = []
    for partition in range(PARTITIONS):
        for i in range(PER_PARTITION):
            p.produce(TOPIC, value(partition, i), key=b"%d" % i, partition=partition,
                      on_delivery=lambda err, _m: errors.append(err) if err else None)
            p.poll(0)
    assert p.flush(DEADLINE_S) == 0 and errors == []


def _sendfile_bytes(broker) -> int:
    return sum(int(m.group(2)) for line in broker.output for m in [SENDFILE_LINE.search(line)] if m)


def _check(got: dict[int, list[tuple[int, bytes]]]) -> None:
    for partition in range(PARTITIONS):
        offsets = [o for o, _ in got[partition]]
        assert offsets == list(range(PER_PARTITION)), (partition, offsets[:5])
        assert all(v == value(partition, o) for o, v in got[partition])


def test_confluent_kafka_and_kafka_python_read_sendfile_fetches_value_for_value(broker_factory):
    broker = broker_factory(log_level="DEBUG")
    _fill(broker.bootstrap)
    total = PARTITIONS * PER_PARTITION

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "zc", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + DEADLINE_S
    try:
        while sum(map(len, got.values())) < total:
            assert time.monotonic() < deadline, {p: len(v) for p, v in got.items()}
            for m in c.consume(100, 1.0):
                assert m.error() is None, m.error()
                got[m.partition()].append((m.offset(), m.value()))
    finally:
        c.close()
    _check(got)
    assert broker.wait_for_output(lambda _lines: _sendfile_bytes(broker) >= total * VALUE_BYTES, DEADLINE_S)

    before = _sendfile_bytes(broker)
    kc = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                       max_partition_fetch_bytes=4 << 20, fetch_max_bytes=16 << 20)
    kc.assign([KpTopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    kc.seek_to_beginning()
    got = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + DEADLINE_S
    try:
        while sum(map(len, got.values())) < total:
            assert time.monotonic() < deadline, {p: len(v) for p, v in got.items()}
            for tp, msgs in kc.poll(timeout_ms=1000).items():
                got[tp.partition] += [(m.offset, m.value) for m in msgs]
    finally:
        kc.close()
    _check(got)
    assert broker.wait_for_output(lambda _lines: _sendfile_bytes(broker) - before >= total * VALUE_BYTES,
                                  DEADLINE_S)
