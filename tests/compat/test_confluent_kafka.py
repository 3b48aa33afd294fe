"""confluent-kafka (librdkafka 2.x) against a real broker process: bulk produce and consume
over every codec, acks setting and idempotence setting; offsets-for-times against a
brute-force scan; metadata; the Admin API's topic creation and deletion with Kafka's errors.

Consumers use assign()+seek (consumer groups are issue 5).  Every loop that waits on the
broker has a deadline, so a broken broker fails a test instead of hanging it.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

N_RECORDS = 50_000
PARTITIONS = 4
BASE_TS = 1_700_000_000_000


@dataclass(frozen=True)
class Rec:
    partition: int
    key: bytes | None
    value: bytes
    headers: list[tuple[str, bytes | None]]
    timestamp: int


def make_records(n: int, partitions: int = PARTITIONS, *, jitter: bool = False) -> list[Rec]:
    """Deterministic records: some null keys, empty values, empty and null header values.

    Timestamps grow by 1 ms per record; with ``jitter`` every 7th record steps 5 ms back,
    so per-partition timestamps are not monotonic (offsets-for-times must still find the
    first offset whose timestamp is >= the target, as Kafka's time index scan does)."""
    out = []
    for i in range(n):
        key = None if i % 97 == 0 else b"key-%d" % i
        value = b"" if i % 101 == 0 else b"value-%d-" % i + bytes([i % 251]) * (i % 40)
        headers: list[tuple[str, bytes | None]] = [("i", b"%d" % i)]
        if i % 3 == 0:
            headers.append(("empty", b""))
        if i % 5 == 0:
            headers.append(("null", None))
        ts = BASE_TS + i
        if jitter and i % 7 == 3:
            ts -= 5
        out.append(Rec(i % partitions, key, value, headers, ts))
    return out


def produce_all(bootstrap: str, topic: str, records: list[Rec], conf: dict, timeout_s: float = 60.0
                ) -> dict[int, list[int]]:
    """Produce ``records`` (explicit partitions) and return, per partition, the offsets the
    delivery reports gave, in produce order.  Fails on any delivery error."""
    errors: list[str] = []
    reported: dict[int, list[tuple[int, int]]] = {}

    def report(idx: int, err, msg) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            reported.setdefault(msg.partition(), []).append((idx, msg.offset()))

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    deadline = time.monotonic() + timeout_s
    for idx, r in enumerate(records):
        while True:
            try:
                p.produce(topic, key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp,
                          partition=r.partition, on_delivery=functools.partial(report, idx))
                break
            except BufferError:
                assert time.monotonic() < deadline, "producer queue never drained"
                p.poll(0.05)
    remaining = p.flush(max(1.0, deadline - time.monotonic()))
    assert remaining == 0, f"{remaining} records still undelivered"
    assert errors == []
    return {part: [off for _, off in sorted(pairs)] for part, pairs in reported.items()}


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int, timeout_s: float = 60.0,
                **conf) -> dict[int, list]:
    """assign() every partition, seek() each to the beginning, read until ``expected``
    records arrived (and a little more, to catch extras)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compat-unused", "enable.auto.commit": False,
                  "enable.partition.eof": True, **conf})
    got: dict[int, list] = {p: [] for p in range(partitions)}
    try:
        tps = [TopicPartition(topic, p, OFFSET_END) for p in range(partitions)]
        c.assign(tps)
        for p in range(partitions):
            c.seek(TopicPartition(topic, p, OFFSET_BEGINNING))
        n = 0
        eof: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not (n >= expected and len(eof) == partitions):
            for m in c.consume(10_000, 0.5):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                        continue
                    raise AssertionError(f"consume error: {err}")
                eof.discard(m.partition())
                got[m.partition()].append(m)
                n += 1
    finally:
        c.close()
    return got


def assert_consumed_exactly(got: dict[int, list], records: list[Rec], partitions: int = PARTITIONS) -> None:
    for p in range(partitions):
        want = [r for r in records if r.partition == p]
        msgs = got[p]
        assert [m.offset() for m in msgs] == list(range(len(want))), f"partition {p}: offsets"
        assert [(m.key(), m.value()) for m in msgs] == [(r.key, r.value) for r in want], f"partition {p}"
        assert [m.headers() for m in msgs] == [r.headers for r in want], f"partition {p}: headers"
        assert [m.timestamp() for m in msgs] == [(TIMESTAMP_CREATE_TIME, r.timestamp) for r in want]


def create_topic(bootstrap: str, name: str, partitions: int, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(name, partitions, 1, config=config)], operation_timeout=10,
                             request_timeout=15)
    assert fs[name].result(timeout=20) is None


# ---------------------------------------------------------------------------- bulk round trips

BULK_CASES = [
    # (compression, acks, idempotence): each codec, each acks and each idempotence setting at
    # least once; idempotence requires acks=all.
    pytest.param("none", "1", False, id="none-acks1"),
    pytest.param("gzip", "all", True, id="gzip-acksall-idempotent"),
    pytest.param("snappy", "1", False, id="snappy-acks1"),
    pytest.param("lz4", "all", False, id="lz4-acksall"),
    pytest.param("zstd", "all", True, id="zstd-acksall-idempotent"),
]


@pytest.mark.parametrize(("codec", "acks", "idempotent"), BULK_CASES)
def test_fifty_thousand_records_come_back_exactly_in_order_per_partition_with_contiguous_offsets(
        broker, codec, acks, idempotent):
    topic = f"bulk-{codec}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    records = make_records(N_RECORDS)
    delivered = produce_all(broker.bootstrap, topic, records,
                            {"compression.type": codec, "acks": acks, "enable.idempotence": idempotent})
    for p in range(PARTITIONS):
        n = sum(1 for r in records if r.partition == p)
        assert delivered[p] == list(range(n)), f"partition {p}: delivery report offsets"
    got = consume_all(broker.bootstrap, topic, PARTITIONS, N_RECORDS)
    assert sum(len(v) for v in got.values()) == N_RECORDS
    assert_consumed_exactly(got, records)
    assert {m.topic() for msgs in got.values() for m in msgs} == {topic}


def test_partitions_of_a_topic_made_by_num_partitions_auto_creation_round_trip(broker_factory):
    b = broker_factory(**{"num.partitions": "4"})
    records = make_records(2_000)
    produce_all(b.bootstrap, "auto-made", records, {"acks": "all"})
    got = consume_all(b.bootstrap, "auto-made", PARTITIONS, len(records))
    assert_consumed_exactly(got, records)


# ---------------------------------------------------------------------------- offsets for times

def _brute_force_offset(timestamps: list[int], target: int) -> int:
    for off, ts in enumerate(timestamps):
        if ts >= target:
            return off
    return -1


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_offsets_for_times_equal_a_brute_force_scan_of_the_consumed_records(broker, codec):
    topic = f"times-{codec}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    # batch.num.messages keeps batches small so lookups land inside, between and across batches
    records = make_records(8_000, jitter=True)
    produce_all(broker.bootstrap, topic, records,
                {"compression.type": codec, "acks": "all", "batch.num.messages": 97})
    got = consume_all(broker.bootstrap, topic, PARTITIONS, len(records))
    assert_consumed_exactly(got, records)
    stamps = {p: [m.timestamp()[1] for m in got[p]] for p in range(PARTITIONS)}

    targets: dict[int, list[int]] = {}
    for p in range(PARTITIONS):
        ts = stamps[p]
        lo, hi = min(ts), max(ts)
        targets[p] = [
            0, lo - 1000, lo - 1, lo, lo + 1,            # before the first, at the first
            ts[1], ts[2], ts[len(ts) // 2],              # exact hits
            ts[len(ts) // 2] + 1, ts[999] - 2,           # between records
            ts[3 + 7 * 40],                               # an exact hit on a stepped-back record
            hi - 1, hi, hi + 1, hi + 10**6,               # at and after the last
        ]
        want = [_brute_force_offset(ts, t) for t in targets[p]]
        assert want[0] == 0 and want[-1] == -1  # the targets do cover both ends
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "compat-unused"})
    try:
        # one ListOffsets per target: a partition may appear only once per request
        for k in range(len(targets[0])):
            answers = c.offsets_for_times([TopicPartition(topic, p, targets[p][k]) for p in range(PARTITIONS)],
                                          timeout=15)
            assert [(a.partition, a.error) for a in answers] == [(p, None) for p in range(PARTITIONS)]
            want = [_brute_force_offset(stamps[p], targets[p][k]) for p in range(PARTITIONS)]
            # librdkafka reports "no such offset" (-1 from the broker) as OFFSET_END (-1)
            assert [a.offset for a in answers] == [OFFSET_END if w == -1 else w for w in want], (
                f"targets {[targets[p][k] for p in range(PARTITIONS)]}")
        for p in range(PARTITIONS):
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=15, cached=False)
            assert (low, high) == (0, len(stamps[p]))
    finally:
        c.close()


def test_offsets_for_times_on_an_empty_partition_answer_end(broker):
    create_topic(broker.bootstrap, "empty-times", 2)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "compat-unused"})
    try:
        answers = c.offsets_for_times([TopicPartition("empty-times", p, BASE_TS) for p in range(2)], timeout=15)
        assert [(a.partition, a.offset, a.error) for a in answers] == [(0, OFFSET_END, None), (1, OFFSET_END, None)]
        assert c.get_watermark_offsets(TopicPartition("empty-times", 1), timeout=15, cached=False) == (0, 0)
    finally:
        c.close()


# ---------------------------------------------------------------------------- metadata

def test_list_topics_shows_this_broker_as_controller_and_leader_of_every_partition(broker):
    create_topic(broker.bootstrap, "meta-a", 3)
    create_topic(broker.bootstrap, "meta-b", 1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    md = admin.list_topics(timeout=15)
    assert sorted(md.topics) == ["meta-a", "meta-b"]
    assert md.controller_id == 1
    assert md.cluster_id
    assert {i: (b.host, b.port) for i, b in md.brokers.items()} == {1: ("127.0.0.1", broker.port)}
    for name, n in (("meta-a", 3), ("meta-b", 1)):
        t = md.topics[name]
        assert t.error is None
        assert sorted(t.partitions) == list(range(n))
        assert [(pm.id, pm.leader, pm.replicas, pm.isrs, pm.error) for pm in t.partitions.values()] == [
            (i, 1, [1], [1], None) for i in range(n)]
    one = admin.list_topics("meta-a", timeout=15)
    assert list(one.topics) == ["meta-a"]


def test_list_topics_of_an_unknown_topic_reports_unknown_topic_when_auto_creation_is_off(broker_factory):
    b = broker_factory(**{"auto.create.topics.enable": "false"})
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "compat-unused",
                  "allow.auto.create.topics": True})
    try:
        md = c.list_topics("no-such-topic", timeout=15)
        assert md.topics["no-such-topic"].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    finally:
        c.close()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    # The consumer's group.id made librdkafka look up its coordinator, which creates the
    # internal __consumer_offsets topic (as in Kafka); no other topic may exist.
    assert [t for t in admin.list_topics(timeout=15).topics if t != "__consumer_offsets"] == []


# ---------------------------------------------------------------------------- admin

def _create_errors(admin: AdminClient, topics: list[NewTopic], **kw) -> dict[str, int | None]:
    fs = admin.create_topics(topics, operation_timeout=10, request_timeout=15, **kw)
    out: dict[str, int | None] = {}
    for name, f in fs.items():
        try:
            f.result(timeout=20)
            out[name] = None
        except KafkaException as e:
            out[name] = e.args[0].code()
    return out


def test_admin_create_topics_answers_kafkas_error_per_topic(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert _create_errors(admin, [NewTopic("made", 2, 1), NewTopic("made-default", -1, -1)]) == {
        "made": None, "made-default": None}
    assert _create_errors(admin, [
        NewTopic("made", 2, 1),                      # already there
        NewTopic("zero-partitions", 0, 1),
        NewTopic("three-replicas", 1, 3),            # only one broker
        NewTopic("zero-replicas", 1, 0),
        NewTopic("bad/name", 1, 1),
        NewTopic("..", 1, 1),
        NewTopic("x" * 250, 1, 1),
        NewTopic("fine", 1, 1),
    ]) == {
        "made": KafkaError.TOPIC_ALREADY_EXISTS,
        "zero-partitions": KafkaError.INVALID_PARTITIONS,
        "three-replicas": KafkaError.INVALID_REPLICATION_FACTOR,
        "zero-replicas": KafkaError.INVALID_REPLICATION_FACTOR,
        "bad/name": KafkaError.TOPIC_EXCEPTION,
        "..": KafkaError.TOPIC_EXCEPTION,
        "x" * 250: KafkaError.TOPIC_EXCEPTION,
        "fine": None,
    }
    md = admin.list_topics(timeout=15)
    assert sorted(md.topics) == ["fine", "made", "made-default"]
    assert len(md.topics["made"].partitions) == 2
    assert len(md.topics["made-default"].partitions) == 1  # num.partitions=1 in the fixture
    assert len(md.topics["fine"].partitions) == 1


def test_admin_create_topics_with_validate_only_creates_nothing(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert _create_errors(admin, [NewTopic("dry", 3, 1)], validate_only=True) == {"dry": None}
    assert _create_errors(admin, [NewTopic("dry-bad", 0, 1)], validate_only=True) == {
        "dry-bad": KafkaError.INVALID_PARTITIONS}
    assert list(admin.list_topics(timeout=15).topics) == []


def test_admin_create_topics_with_an_unknown_config_answers_invalid_config(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert _create_errors(admin, [NewTopic("cfg", 1, 1, config={"no.such.config": "1"})]) == {
        "cfg": KafkaError.INVALID_CONFIG}
    assert _create_errors(admin, [NewTopic("cfg-ok", 1, 1, config={"cleanup.policy": "delete",
                                                                    "retention.ms": "60000"})]) == {
        "cfg-ok": None}
    assert list(admin.list_topics(timeout=15).topics) == ["cfg-ok"]


def test_admin_delete_topics_removes_the_topic_and_answers_unknown_topic_for_a_missing_one(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create_topic(broker.bootstrap, "doomed", 2)
    create_topic(broker.bootstrap, "kept", 1)
    produce_all(broker.bootstrap, "doomed", make_records(100, 2), {"acks": "all"})
    fs = admin.delete_topics(["doomed", "never-was"], operation_timeout=10, request_timeout=15)
    assert fs["doomed"].result(timeout=20) is None
    with pytest.raises(KafkaException) as e:
        fs["never-was"].result(timeout=20)
    assert e.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert list(admin.list_topics(timeout=15).topics) == ["kept"]
    # the name is free again, and the new topic starts empty
    create_topic(broker.bootstrap, "doomed", 1)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "compat-unused"})
    try:
        assert c.get_watermark_offsets(TopicPartition("doomed", 0), timeout=15, cached=False) == (0, 0)
    finally:
        c.close()
