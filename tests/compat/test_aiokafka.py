"""aiokafka 0.14 against a real kbroker process: produce/consume round trips per codec,
acks and idempotence setting, on the non-flexible versions aiokafka speaks (Produce 7,
Fetch 11, ListOffsets 3, Metadata 5, CreateTopics/DeleteTopics 3); offset lookups against
a brute-force scan; admin topic calls; a parked fetch woken by an append.

Consumer groups are not implemented yet (issue 5), so consumers run with group_id=None
and assign()/seek.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import aiokafka.errors as Errors
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.codec import has_gzip, has_lz4, has_snappy, has_zstd
from aiokafka.protocol.api import Request

from tests.support.py_clients_workload import (
    NUM_PARTITIONS,
    brute_force_offset_for_time,
    lookup_targets,
    make_records,
    watchdog,  # noqa: F401  (fixture, used via pytestmark)
)

pytestmark = pytest.mark.usefixtures("watchdog")

TOPIC = "aio-load"
RECORDS = make_records(seed=5)

# (codec, acks, enable_idempotence): every codec once (aiokafka's codecs all come from
# cramjam, a runtime dependency of the project); acks=1/all and idempotence on/off each
# covered by more than one codec.  aiokafka rejects idempotence with acks=1.
RUNS = [
    ("none", "all", True, has_gzip),
    ("gzip", 1, False, has_gzip),
    ("snappy", "all", False, has_snappy),
    ("lz4", "all", True, has_lz4),
    ("zstd", 1, False, has_zstd),
]

# The request versions aiokafka negotiates with this broker: the highest it implements
# inside the advertised range (aiokafka 0.14 ships Produce 0-7 and ListOffsets 0-3).
EXPECTED_VERSIONS = {"ProduceRequest": 7, "FetchRequest": 11, "OffsetRequest": 3,
                     "MetadataRequest": 5, "InitProducerIdRequest": 0, "ApiVersionRequest": 0,
                     "CreateTopicsRequest": 3, "DeleteTopicsRequest": 3}


def run(coro, timeout_s: float = 120.0):
    return asyncio.run(asyncio.wait_for(coro, timeout_s))


@pytest.fixture
def negotiated(monkeypatch):
    """Every (request class, version) aiokafka prepares during the test."""
    seen: Counter[tuple[str, int]] = Counter()
    original = Request.prepare

    def spy(self, versions):
        struct = original(self, versions)
        seen[(type(self).__name__, struct.API_VERSION)] += 1
        return struct

    monkeypatch.setattr(Request, "prepare", spy)
    return seen


def versions_of(seen: Counter[tuple[str, int]]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for name, version in seen:
        out.setdefault(name, set()).add(version)
    return out


async def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    await admin.start()
    try:
        resp = await admin.create_topics([NewTopic(name, partitions, 1)])
        assert [(t[0], t[1]) for t in resp.topic_errors] == [(name, 0)]
    finally:
        await admin.close()


async def _produce(bootstrap: str, codec: str, acks, idempotent: bool):
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=acks, enable_idempotence=idempotent,
                                compression_type=None if codec == "none" else codec,
                                linger_ms=5, max_batch_size=64 * 1024, request_timeout_ms=30_000)
    await producer.start()
    try:
        futures = [await producer.send(TOPIC, key=r.key, value=r.value, headers=r.headers,
                                       timestamp_ms=r.timestamp_ms) for r in RECORDS]
        metas = await asyncio.gather(*futures)
        pid = producer._txn_manager.producer_id if idempotent else None
    finally:
        await producer.stop()
    return metas, pid


async def _consume_and_look_up(bootstrap: str, expected_total: int):
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                request_timeout_ms=30_000)
    await consumer.start()
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(NUM_PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning()
        got: dict[int, list] = {p: [] for p in range(NUM_PARTITIONS)}
        total = 0
        deadline = time.monotonic() + 60
        while total < expected_total and time.monotonic() < deadline:
            for tp, recs in (await consumer.getmany(timeout_ms=500, max_records=100_000)).items():
                got[tp.partition].extend(recs)
                total += len(recs)
        for tp, recs in (await consumer.getmany(timeout_ms=300)).items():
            got[tp.partition].extend(recs)
    finally:
        await consumer.stop()

    # Lookups from a consumer with nothing assigned: on the fetching consumer each
    # ListOffsets would queue behind a parked Fetch on the same connection (responses
    # leave in request order, as in Kafka), costing fetch_max_wait_ms per call.
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                request_timeout_ms=30_000)
    await consumer.start()
    try:
        beginning = await consumer.beginning_offsets(tps)
        end = await consumer.end_offsets(tps)
        scans = {tp: [(m.offset, m.timestamp) for m in got[tp.partition]] for tp in tps}
        targets = {tp: lookup_targets(scans[tp], rounds=16, seed=100 + tp.partition) for tp in tps}
        lookups = []
        for i in range(16):
            asked = {tp: targets[tp][i] for tp in tps}
            lookups.append((asked, await consumer.offsets_for_times(asked)))
        return got, beginning, end, scans, lookups
    finally:
        await consumer.stop()


@pytest.mark.parametrize(("codec", "acks", "idempotent", "available"), RUNS,
                         ids=[f"{c}-acks_{a}-{'idempotent' if i else 'plain'}" for c, a, i, _ in RUNS])
def test_aiokafka_produces_50k_records_and_consumes_exactly_them_in_order(
        broker, negotiated, codec, acks, idempotent, available):
    assert available(), f"aiokafka's {codec} codec needs cramjam, a runtime dependency"
    run(_create_topic(broker.bootstrap, TOPIC, NUM_PARTITIONS))
    metas, pid = run(_produce(broker.bootstrap, codec, acks, idempotent))
    if idempotent:
        assert pid >= 0

    # Each partition's acknowledged offsets are 0, 1, 2, ... in send order.  (aiokafka
    # reports the first record's timestamp for every record of a CreateTime batch, a
    # client bug, so only the timestamp type is checked here.)
    expected: dict[int, list] = {p: [] for p in range(NUM_PARTITIONS)}
    for rec, meta in zip(RECORDS, metas, strict=True):
        assert (meta.topic, meta.offset, meta.timestamp_type, meta.log_start_offset) == (
            TOPIC, len(expected[meta.partition]), 0, 0)
        expected[meta.partition].append(rec)
    assert all(expected[p] for p in range(NUM_PARTITIONS)), {p: len(v) for p, v in expected.items()}

    got, beginning, end, scans, lookups = run(_consume_and_look_up(broker.bootstrap, len(RECORDS)))
    for p in range(NUM_PARTITIONS):
        assert [(m.offset, m.key, m.value, list(m.headers), m.timestamp, m.timestamp_type) for m in got[p]] == [
            (i, r.key, r.value, r.headers, r.timestamp_ms, 0) for i, r in enumerate(expected[p])]
    tps = [TopicPartition(TOPIC, p) for p in range(NUM_PARTITIONS)]
    assert beginning == {tp: 0 for tp in tps}
    assert end == {tp: len(expected[tp.partition]) for tp in tps}
    for asked, answer in lookups:
        want = {tp: brute_force_offset_for_time(scans[tp], asked[tp]) for tp in tps}
        assert {tp: None if a is None else (a.offset, a.timestamp) for tp, a in answer.items()} == want, asked

    used = versions_of(negotiated)
    want_versions = {k: {v} for k, v in EXPECTED_VERSIONS.items()
                     if k not in ("DeleteTopicsRequest",) and (idempotent or k != "InitProducerIdRequest")}
    assert used == want_versions


def test_aiokafka_admin_creates_lists_describes_and_deletes_topics(broker, negotiated):
    async def scenario():
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
        await admin.start()
        try:
            created = await admin.create_topics([NewTopic("adm-a", 3, 1), NewTopic("adm-b", 1, 1)])
            already = await admin.create_topics([NewTopic("adm-a", 1, 1)])
            zero = await admin.create_topics([NewTopic("adm-zero", 0, 1)])
            rf2 = await admin.create_topics([NewTopic("adm-rf2", 1, 2)])
            rf0 = await admin.create_topics([NewTopic("adm-rf0", 1, 0)])
            dry = await admin.create_topics([NewTopic("adm-dry", 2, 1)], validate_only=True)
            listed = sorted(await admin.list_topics())
            described = await admin.describe_topics(["adm-a"])
            cluster = await admin.describe_cluster()
            deleted = await admin.delete_topics(["adm-a"])
            deleted_again = await admin.delete_topics(["adm-a"])
            listed_after = await admin.list_topics()
            return (created, already, zero, rf2, rf0, dry, listed, described, cluster, deleted,
                    deleted_again, listed_after)
        finally:
            await admin.close()

    (created, already, zero, rf2, rf0, dry, listed, described, cluster, deleted, deleted_again,
     listed_after) = run(scenario(), 60)

    def codes(resp) -> list[tuple[str, type]]:
        return [(t[0], Errors.for_code(t[1])) for t in resp.topic_errors]

    assert codes(created) == [("adm-a", Errors.NoError), ("adm-b", Errors.NoError)]
    assert codes(already) == [("adm-a", Errors.TopicAlreadyExistsError)]
    assert codes(zero) == [("adm-zero", Errors.InvalidPartitionsError)]
    assert codes(rf2) == [("adm-rf2", Errors.InvalidReplicationFactorError)]
    assert codes(rf0) == [("adm-rf0", Errors.InvalidReplicationFactorError)]
    assert codes(dry) == [("adm-dry", Errors.NoError)]
    assert listed == ["adm-a", "adm-b"]
    [topic] = described
    assert (topic["topic"], topic["error_code"], topic["is_internal"]) == ("adm-a", 0, False)
    assert sorted((p["partition"], p["error_code"], p["leader"], p["replicas"], p["isr"])
                  for p in topic["partitions"]) == [(i, 0, 1, [1], [1]) for i in range(3)]
    assert (cluster["controller_id"], [(b["node_id"], b["host"], b["port"]) for b in cluster["brokers"]]) == (
        1, [(1, "127.0.0.1", broker.port)])
    assert [(name, Errors.for_code(code)) for name, code in deleted.topic_error_codes] == [
        ("adm-a", Errors.NoError)]
    assert [(name, Errors.for_code(code)) for name, code in deleted_again.topic_error_codes] == [
        ("adm-a", Errors.UnknownTopicOrPartitionError)]
    assert listed_after == ["adm-b"]
    used = versions_of(negotiated)
    assert (used["CreateTopicsRequest"], used["DeleteTopicsRequest"], used["MetadataRequest"]) == ({3}, {3}, {5})


def test_an_aiokafka_consumer_waiting_at_the_end_of_a_partition_gets_a_new_record_long_before_its_max_wait(broker):
    """fetch_max_wait_ms is 60 s, so only the append waking the parked fetch explains a
    delivery within half of it (however busy the machine, a wake takes far less)."""
    async def scenario():
        await _create_topic(broker.bootstrap, "tail", 1)
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None,
                                    fetch_max_wait_ms=60_000, request_timeout_ms=90_000)
        await producer.start()
        await consumer.start()
        try:
            tp = TopicPartition("tail", 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            assert await consumer.getmany(timeout_ms=500) == {}  # a fetch is parked now
            getter = asyncio.ensure_future(consumer.getone())
            await asyncio.sleep(0.3)
            assert not getter.done()
            await producer.send_and_wait("tail", key=b"k", value=b"woken")
            acked_at = time.monotonic()
            record = await asyncio.wait_for(getter, 30)
            return record, time.monotonic() - acked_at
        finally:
            await consumer.stop()
            await producer.stop()

    record, delay_s = run(scenario())
    assert (record.offset, record.key, record.value) == (0, b"k", b"woken")
    assert delay_s < 30, delay_s
