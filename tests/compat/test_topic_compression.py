"""compression.type on a topic: the broker stores batches in the named codec, and
consumers read back exactly what producers sent."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from wire.record_batch import iter_batches

CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.parametrize("topic_codec,producer_codec", [("zstd", "lz4"), ("uncompressed", "gzip"), ("gzip", "none")])
def test_batches_are_stored_in_the_topics_codec_and_read_back_exactly(broker, topic_codec, producer_codec):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("z", 1, 1, config={"compression.type": topic_codec})])["z"].result(15)
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": producer_codec, "linger.ms": 20})
    sent = [(f"k{i}".encode(), f"value-{i}".encode() * 5, [("n", str(i).encode())], 1_700_000_000_000 + i)
            for i in range(500)]
    for k, v, h, ts in sent:
        p.produce("z", key=k, value=v, headers=h, timestamp=ts)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "z", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["z"])
    got = []
    while len(got) < len(sent):
        m = c.poll(10)
        assert m is not None, f"only {len(got)} records arrived"
        assert m.error() is None, m.error()
        got.append((m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1]))
    c.close()
    assert got == [(i, k, v, h, ts) for i, (k, v, h, ts) in enumerate(sent)]
    codecs = {b.compression for seg in (broker.data_dir / "z-0").glob("*.log")
              for b in iter_batches(seg.read_bytes())}
    assert codecs == {CODECS[topic_codec]}
