"""The broker process starts, answers a stock client, and shuts down cleanly."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition


def test_confluent_kafka_produces_and_consumes_one_record_through_a_real_broker_process(broker):
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce("smoke", key=b"k", value=b"v", headers=[("h", b"1")], timestamp=1_700_000_000_123)
    assert p.flush(15) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
    c.assign([TopicPartition("smoke", 0, 0)])
    msg = None
    for _ in range(20):
        msg = c.poll(1)
        if msg is not None:
            break
    c.close()
    assert msg is not None and msg.error() is None
    assert (msg.offset(), msg.key(), msg.value(), msg.headers(), msg.timestamp()) == (
        0, b"k", b"v", [("h", b"1")], (1, 1_700_000_000_123))
