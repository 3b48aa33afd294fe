"""Record batches written by real clients decode exactly, and real clients accept our
ApiVersions, Metadata, InitProducerId and Produce encodings.

A capture broker (``tests/unit/wire/capture_broker.py``, our codec over a plain socket on
127.0.0.1) answers just enough protocol for a producer; each test produces a fixed set of
messages with confluent-kafka (librdkafka) or kafka-python 3, flushes with a timeout, and
checks that ``wire.record_batch`` decodes the captured records fields to exactly the keys,
values, headers and timestamps sent, in order per partition, with valid CRC-32Cs, the
requested codec, and (idempotent producers) the producer id/epoch the broker handed out and
per-partition sequences from 0.

Notes:
* kafka-python needs python-snappy, lz4 and zstandard for those codecs, which are not
  project dependencies; as in test_record_batch.py, aiokafka's implementations (on cramjam)
  are plugged into kafka-python's codec hooks (``kafka_python_codecs``).  The batch
  framing, record encoding and CRC are kafka-python's own.
* kafka-python's ``send`` rejects a None header value (it wants (str, bytes)) and a record
  whose key and value are both None; those cases are covered by the confluent-kafka tests.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaProducer

from tests.unit.wire.capture_broker import PRODUCER_EPOCH, PRODUCER_ID, CaptureState, capture_broker
from tests.unit.wire.kafka_python_codecs import kafka_python_codecs
from wire.compression import Compression
from wire.errors import CorruptRecordError
from wire.record_batch import NO_PRODUCER_ID, NO_SEQUENCE, RecordBatch, iter_batches

PARTITIONS = 3
FLUSH_TIMEOUT_S = 10
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000

Sent = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]], int]


def messages(kafka_python: bool = False) -> list[Sent]:
    """(partition, key, value, headers, timestamp_ms): nulls, empties, unicode, big, many."""
    null = b"" if kafka_python else None
    text = b"the quick brown fox jumps over the lazy dog " * 8  # compressible
    out: list[Sent] = [
        (0, b"k0", text, [], T0),
        (0, None, text + b"null key", [("h", b"1")], T0 + 1),
        (0, b"tombstone", None, [], T0 + 2),
        (1, b"", b"", [("empty", b""), ("null", null)], T0 - 86_400_000),  # older than base
        (1, "ключ".encode(), "значение ☃".encode(), [("ü-header", "wört".encode())], T0 + 5),
        (1, b"dup", text, [("a", b"1"), ("a", b"2"), ("b", b"3")], T0 + 5),
        (2, b"big", bytes(range(256)) * 80, [], T0 + 10),
    ]
    if not kafka_python:
        out.append((2, None, None, [], T0 + 11))
    out += [(i % PARTITIONS, b"key-%d" % i, text + b"%d" % i, [("i", b"%d" % i)], T0 + 100 + i)
            for i in range(30)]
    return out


def by_partition(sent: list[Sent]) -> dict[int, list[tuple[Any, ...]]]:
    out: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for p, key, value, headers, ts in sent:
        out[p].append((key, value, headers, ts))
    return dict(out)


def check_capture(state: CaptureState, topic: str, sent: list[Sent], codec: str,
                  idempotent: bool) -> list[RecordBatch]:
    assert state.unexpected == []
    captured = [c for c in state.produced if c.topic == topic]
    assert captured, "nothing was produced"
    assert {c.produce_version for c in captured} == {9}  # the newest we advertise
    got: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    batches = []
    for c in captured:
        if idempotent:
            assert c.acks == -1
        for batch in iter_batches(c.records):
            batch.validate()  # CRC-32C and structure
            assert batch.magic == 2
            assert batch.compression == Compression[codec.upper()]
            assert not batch.is_transactional and not batch.is_control
            records = list(batch.records())
            assert batch.record_count == len(records) == batch.last_offset_delta + 1
            if idempotent:
                assert (batch.producer_id, batch.producer_epoch) == (PRODUCER_ID, PRODUCER_EPOCH)
                assert batch.base_sequence == len(got[c.partition])
            else:
                assert (batch.producer_id, batch.base_sequence) == (NO_PRODUCER_ID, NO_SEQUENCE)
            assert batch.max_timestamp == max(r.timestamp for r in records)
            got[c.partition] += [(r.key, r.value, r.headers, r.timestamp) for r in records]
            batches.append(batch)
    assert dict(got) == by_partition(sent)
    return batches


def assert_a_flipped_bit_fails_the_crc(batch: RecordBatch) -> None:
    raw = bytearray(batch.view())
    raw[len(raw) // 2] ^= 0x10
    with pytest.raises(CorruptRecordError, match="CRC"):
        RecordBatch(raw).validate()


# ------------------------------------------------------------------ confluent-kafka


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_batches_decode_to_exactly_what_was_produced(codec, idempotent):
    sent = messages()
    topic = f"cc-{codec}"
    with capture_broker(partitions=PARTITIONS) as state:
        producer = Producer({
            "bootstrap.servers": f"127.0.0.1:{state.port}",
            "compression.type": codec,
            "enable.idempotence": idempotent,
            "linger.ms": 20,
            "message.timeout.ms": FLUSH_TIMEOUT_S * 1000,
            "socket.timeout.ms": 5000,
            "log_level": 3,
        })
        errors: list[Any] = []
        for p, key, value, headers, ts in sent:
            producer.produce(topic, value=value, key=key, partition=p, headers=headers,
                             timestamp=ts, on_delivery=lambda err, _msg: errors.append(err))
        assert producer.flush(FLUSH_TIMEOUT_S) == 0
        assert errors == [None] * len(sent)
        batches = check_capture(state, topic, sent, codec, idempotent)
        if idempotent:
            assert (22, 4) in state.requests  # InitProducerId at the newest we advertise
    assert_a_flipped_bit_fails_the_crc(batches[0])


def test_confluent_kafka_stamps_the_current_time_when_no_timestamp_is_given():
    with capture_broker() as state:
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{state.port}", "linger.ms": 5,
                             "message.timeout.ms": FLUSH_TIMEOUT_S * 1000})
        before = int(time.time() * 1000)
        producer.produce("now", value=b"v", key=b"k", partition=0)
        assert producer.flush(FLUSH_TIMEOUT_S) == 0
        after = int(time.time() * 1000)
    (c,) = state.produced
    (batch,) = iter_batches(c.records)
    (record,) = batch.records()
    assert before <= record.timestamp <= after
    assert batch.base_timestamp == batch.max_timestamp == record.timestamp


# ------------------------------------------------------------------ kafka-python


@pytest.fixture
def kafka_python_all_codecs(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Let KafkaProducer accept snappy/lz4/zstd, with aiokafka's codecs plugged in."""
    monkeypatch.setattr(KafkaProducer, "_COMPRESSORS", {
        k: ((lambda: True), attrs) for k, (_check, attrs) in KafkaProducer._COMPRESSORS.items()
    })
    with kafka_python_codecs():
        yield


@pytest.mark.usefixtures("kafka_python_all_codecs")
@pytest.mark.parametrize(("codec", "idempotent"),
                         [(c, False) for c in CODECS] + [("gzip", True), ("zstd", True)])
def test_kafka_python_batches_decode_to_exactly_what_was_produced(codec, idempotent):
    sent = messages(kafka_python=True)
    topic = f"kp-{codec}"
    with capture_broker(partitions=PARTITIONS) as state:
        producer = KafkaProducer(
            bootstrap_servers=f"127.0.0.1:{state.port}",
            compression_type=None if codec == "none" else codec,
            enable_idempotence=idempotent,
            linger_ms=20, request_timeout_ms=5000, max_block_ms=5000,
        )
        try:
            futures = [producer.send(topic, value=value, key=key, partition=p,
                                     headers=headers, timestamp_ms=ts)
                       for p, key, value, headers, ts in sent]
            producer.flush(timeout=FLUSH_TIMEOUT_S)
            metas = [f.get(timeout=FLUSH_TIMEOUT_S) for f in futures]
        finally:
            producer.close(timeout=5)
        # kafka-python read our Produce responses: offsets per partition from 0
        for p in range(PARTITIONS):
            assert [m.offset for m in metas if m.partition == p] == list(
                range(sum(1 for s in sent if s[0] == p)))
        batches = check_capture(state, topic, sent, codec, idempotent)
        # kafka-python asks for ApiVersions v4 first and steps down on our v0 error answer
        assert state.requests[:2] == [(18, 4), (18, 3)]
    assert_a_flipped_bit_fails_the_crc(batches[-1])
