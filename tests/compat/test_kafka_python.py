"""kafka-python 3 against a real kbroker process: produce/consume round trips per codec,
acks and idempotence setting; offset lookups against a brute-force scan; the admin calls
that work without consumer groups; the broker version kafka-python infers; long-poll
fetches that neither block other connections nor outwait an append.

Consumer groups are not implemented yet (issue 5), so consumers run with group_id=None
and assign()/seek.
"""

from __future__ import annotations

import select
import socket
import struct
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, OffsetSpec, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.codec import has_gzip, has_lz4, has_snappy, has_zstd
from kafka.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kafka.net.compat import KafkaNetClient
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from tests.support.py_clients_workload import (
    NUM_PARTITIONS,
    brute_force_max_timestamp,
    brute_force_offset_for_time,
    lookup_targets,
    make_records,
    watchdog,  # noqa: F401  (fixture, used via pytestmark)
)

pytestmark = pytest.mark.usefixtures("watchdog")

TOPIC = "kp-load"
RECORDS = make_records()

# (codec, acks, enable_idempotence): every codec once; acks=1/all and idempotence on/off
# each covered by the codecs that are always available (none, gzip).  kafka-python
# rejects idempotence with acks=1, so the idempotent runs use acks=all.
RUNS = [
    ("none", "all", True, has_gzip),
    ("gzip", 1, False, has_gzip),
    ("snappy", "all", False, has_snappy),
    ("lz4", 1, False, has_lz4),
    ("zstd", "all", True, has_zstd),
]
CODEC_MODULE = {"snappy": "python-snappy", "lz4": "lz4", "zstd": "zstandard"}


def _admin(broker) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)


def _consume_all(broker, topic: str, partitions: int, expected_total: int, timeout_s: float = 60.0):
    """Every record of ``topic`` from the beginning, per partition, via assign + seek."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None,
                             enable_auto_commit=False, request_timeout_ms=30_000)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        got: dict[int, list] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout_s
        total = 0
        while total < expected_total and time.monotonic() < deadline:
            for tp, recs in consumer.poll(timeout_ms=500, max_records=100_000).items():
                got[tp.partition].extend(recs)
                total += len(recs)
        # Nothing beyond the expected records arrives afterwards.
        for tp, recs in consumer.poll(timeout_ms=300).items():
            got[tp.partition].extend(recs)
        return got, consumer
    except BaseException:
        consumer.close()
        raise


@pytest.mark.parametrize(("codec", "acks", "idempotent", "available"), RUNS,
                         ids=[f"{c}-acks_{a}-{'idempotent' if i else 'plain'}" for c, a, i, _ in RUNS])
def test_kafka_python_produces_50k_records_and_consumes_exactly_them_in_order(
        broker, codec, acks, idempotent, available):
    if not available():
        pytest.fail(f"kafka-python needs the {CODEC_MODULE[codec]} module for {codec}: "
                    "the project's test extra installs it (make test)")
    admin = _admin(broker)
    admin.create_topics({TOPIC: {"num_partitions": NUM_PARTITIONS, "replication_factor": 1}})
    admin.close()

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=acks,
                             enable_idempotence=idempotent,
                             compression_type=None if codec == "none" else codec,
                             linger_ms=5, batch_size=64 * 1024, request_timeout_ms=30_000)
    try:
        futures = [producer.send(TOPIC, key=r.key, value=r.value, headers=r.headers,
                                 timestamp_ms=r.timestamp_ms) for r in RECORDS]
        producer.flush(timeout=60)
        metas = [f.get(timeout=1) for f in futures]
        if idempotent:
            assert producer._transaction_manager.producer_id_and_epoch.producer_id >= 0
        else:
            assert producer._transaction_manager is None
    finally:
        producer.close(timeout=10)

    # Each partition's acknowledged offsets are 0, 1, 2, ... in send order.
    expected: dict[int, list] = {p: [] for p in range(NUM_PARTITIONS)}
    for rec, meta in zip(RECORDS, metas, strict=True):
        assert (meta.topic, meta.offset, meta.timestamp) == (TOPIC, len(expected[meta.partition]),
                                                            rec.timestamp_ms)
        expected[meta.partition].append(rec)
    assert all(expected[p] for p in range(NUM_PARTITIONS)), {p: len(v) for p, v in expected.items()}

    got, consumer = _consume_all(broker, TOPIC, NUM_PARTITIONS, len(RECORDS))
    try:
        for p in range(NUM_PARTITIONS):
            assert [(m.offset, m.key, m.value, m.headers, m.timestamp, m.timestamp_type, m.leader_epoch)
                    for m in got[p]] == [
                (i, r.key, r.value, r.headers, r.timestamp_ms, 0, 0) for i, r in enumerate(expected[p])]

        tps = [TopicPartition(TOPIC, p) for p in range(NUM_PARTITIONS)]
        assert consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
        assert consumer.end_offsets(tps) == {tp: len(expected[tp.partition]) for tp in tps}

        # offsets_for_times against a brute-force scan of what was consumed, one call per
        # round asking every partition at once.
        scans = {tp: [(m.offset, m.timestamp) for m in got[tp.partition]] for tp in tps}
        targets = {tp: lookup_targets(scans[tp], rounds=16, seed=tp.partition) for tp in tps}
        for i in range(16):
            asked = {tp: targets[tp][i] for tp in tps}
            answer = consumer.offsets_for_times(asked)
            want = {}
            for tp in tps:
                hit = brute_force_offset_for_time(scans[tp], asked[tp])
                want[tp] = None if hit is None else (hit[0], hit[1], 0)
            assert {tp: None if a is None else (a.offset, a.timestamp, a.leader_epoch)
                    for tp, a in answer.items()} == want, asked
    finally:
        consumer.close()

    # ListOffsets -1, -2 and -3 (max timestamp, v7) through the admin client.
    admin = _admin(broker)
    try:
        for spec in (OffsetSpec.EARLIEST, OffsetSpec.LATEST, OffsetSpec.MAX_TIMESTAMP):
            answer = admin.list_partition_offsets({tp: spec for tp in tps})
            if spec == OffsetSpec.EARLIEST:
                want = {tp: (0, -1) for tp in tps}
            elif spec == OffsetSpec.LATEST:
                want = {tp: (len(scans[tp]), -1) for tp in tps}
            else:
                want = {tp: brute_force_max_timestamp(scans[tp]) for tp in tps}
            assert {tp: (a.offset, a.timestamp) for tp, a in answer.items()} == want, spec
    finally:
        admin.close()


def test_kafka_python_infers_broker_version_3_9_from_the_advertised_api_versions(broker):
    """kafka-python's infer_broker_version_from_api_versions takes the highest matching
    probe: Fetch v17 -> (3, 9) (Fetch by topic id is served); the probes above it (Produce 13
    -> 4.1, ListOffsets 10 -> 4.0, ...) are not advertised.  kafka-python has no feature gate
    above (3, 0) and caps Fetch at v12 itself (names, not ids): idempotence (>= 0.11), zstd
    (>= 2.1), the KIP-360 epoch bump (>= 2.5, InitProducerId v3+) and the 45 s session
    timeout (>= 3.0) are all on."""
    client = KafkaNetClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        assert client.check_version(timeout_ms=10_000) == (3, 9)
        versions = client._manager.broker_version_data.api_versions
        assert {k: versions.get(k) for k in (ApiKey.Produce, ApiKey.Fetch, ApiKey.ListOffsets,
                                             ApiKey.Metadata, ApiKey.InitProducerId)} == {
            ApiKey.Produce: (0, 9), ApiKey.Fetch: (4, 17), ApiKey.ListOffsets: (1, 7),
            ApiKey.Metadata: (0, 12), ApiKey.InitProducerId: (0, 4)}
    finally:
        client.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
    try:
        assert (consumer.config["api_version"], consumer.config["session_timeout_ms"]) == ((3, 9), 45_000)
    finally:
        consumer.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    try:
        assert (producer.config["api_version"], producer.config["enable_idempotence"],
                producer.config["acks"]) == ((3, 9), True, -1)
    finally:
        producer.close(timeout=5)


def test_kafka_python_admin_creates_lists_describes_and_deletes_topics(broker):
    admin = _admin(broker)
    try:
        created = admin.create_topics({"adm-a": {"num_partitions": 3, "replication_factor": 1},
                                       "adm-b": {}})
        assert [(t["name"], t["error_code"], t["num_partitions"], t["replication_factor"])
                for t in created["topics"]] == [("adm-a", 0, 3, 1), ("adm-b", 0, 1, 1)]
        assert sorted(admin.list_topics()) == ["adm-a", "adm-b"]

        [described] = admin.describe_topics(["adm-a"])
        assert (described["name"], described["error_code"], described["is_internal"]) == ("adm-a", 0, False)
        assert [(p["partition_index"], p["error_code"], p["leader_id"], p["leader_epoch"],
                 p["replica_nodes"], p["isr_nodes"]) for p in described["partitions"]] == [
            (i, 0, 1, 0, [1], [1]) for i in range(3)]

        cluster = admin.describe_cluster()
        assert (cluster["controller_id"], [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]]) \
            == (1, [(1, "127.0.0.1", broker.port)])
        assert isinstance(cluster["cluster_id"], str) and cluster["cluster_id"]

        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics({"adm-a": {"num_partitions": 1, "replication_factor": 1}})
        with pytest.raises(InvalidPartitionsError):
            admin.create_topics({"adm-zero": {"num_partitions": 0, "replication_factor": 1}})
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics({"adm-rf2": {"num_partitions": 1, "replication_factor": 2}})
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics({"adm-rf0": {"num_partitions": 1, "replication_factor": 0}})
        # Config values outside Kafka's LogConfig validators (ConfigDef atLeast / in).
        for i, (key, value) in enumerate([("retention.ms", "-5"), ("compression.type", "brotli"),
                                          ("min.insync.replicas", "0"), ("max.message.bytes", "-1"),
                                          ("segment.ms", "0")]):
            with pytest.raises(InvalidConfigurationError, match=f"Invalid value {value} for configuration {key}"):
                admin.create_topics({f"adm-cfg{i}": {"configs": {key: value}}})
        # validate_only creates nothing.
        checked = admin.create_topics({"adm-dry": {"num_partitions": 2, "replication_factor": 1}},
                                      validate_only=True)
        assert [(t["name"], t["error_code"]) for t in checked["topics"]] == [("adm-dry", 0)]
        assert sorted(admin.list_topics()) == ["adm-a", "adm-b"]

        deleted = admin.delete_topics(["adm-a"])
        assert [(t["name"], t["error_code"]) for t in deleted["topics"]] == [("adm-a", 0)]
        assert admin.list_topics() == ["adm-b"]
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_topics(["adm-a"])
    finally:
        admin.close()


# --- long polls --------------------------------------------------------------------------

def _send(sock: socket.socket, request, version: int, correlation_id: int) -> None:
    request.with_header(correlation_id=correlation_id, client_id="kbroker-compat")
    sock.sendall(request.encode(version=version, header=True, framed=True))


def _recv_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            assert chunk, "connection closed"
            buf += chunk
        return buf
    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def _fetch_request(topic: str, offset: int, max_wait_ms: int) -> FetchRequest:
    return FetchRequest(
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
            partition_max_bytes=1 << 20)])])


def test_a_parked_fetch_on_one_connection_does_not_delay_metadata_on_another(broker):
    admin = _admin(broker)
    admin.create_topics({"idle": {"num_partitions": 1, "replication_factor": 1}})
    admin.close()
    metadata = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    try:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=90) as a, \
                socket.create_connection(("127.0.0.1", broker.port), timeout=90) as b:
            # Parked for up to a minute: nothing but an append can answer it during the test.
            _send(a, _fetch_request("idle", 0, 60_000), 12, 1)
            # The fetch's bytes are in the broker's socket buffer before the first metadata
            # request is sent; the broker's one event loop reads both sockets, so by the third
            # metadata answer it has long read (and parked) the fetch.  Every answer must come
            # while the fetch is still parked: a loop blocked by it would answer none.
            for correlation_id in (2, 3, 4):
                _send(b, metadata, 12, correlation_id)
                md = MetadataResponse.decode(_recv_frame(b), version=12, header=True)
                assert (md.header.correlation_id, [t.name for t in md.topics]) == (correlation_id, ["idle"])
                assert not select.select([a], [], [], 0)[0], "the fetch was answered before any record"
            # An append wakes the parked fetch, which answers with it.
            assert producer.send("idle", value=b"wake").get(timeout=60).offset == 0
            resp = FetchResponse.decode(_recv_frame(a), version=12, header=True)
            part = resp.responses[0].partitions[0]
            assert (resp.header.correlation_id, resp.error_code, part.error_code, part.high_watermark) == (1, 0, 0, 1)
            assert b"wake" in bytes(part.records or b"")

            # With nothing to return, a fetch answers empty once max_wait_ms has passed, not
            # sooner (the broker's timer starts after the client's clock here).
            fetch_sent = time.monotonic()
            _send(a, _fetch_request("idle", 1, 3000), 12, 5)
            resp = FetchResponse.decode(_recv_frame(a), version=12, header=True)
            fetch_s = time.monotonic() - fetch_sent
    finally:
        producer.close(timeout=10)
    part = resp.responses[0].partitions[0]
    assert (resp.header.correlation_id, resp.error_code, part.error_code, part.high_watermark,
            bytes(part.records or b"")) == (5, 0, 0, 1, b"")
    assert fetch_s >= 2.9, fetch_s


def test_a_consumer_waiting_at_the_end_of_a_partition_gets_a_new_record_long_before_its_max_wait(broker):
    """fetch_max_wait_ms is 60 s, so only the append waking the parked fetch explains a
    delivery within half of it (however busy the machine, a wake takes far less)."""
    admin = _admin(broker)
    admin.create_topics({"tail": {"num_partitions": 1, "replication_factor": 1}})
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None,
                             fetch_max_wait_ms=60_000, request_timeout_ms=90_000)
    try:
        tp = TopicPartition("tail", 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        assert consumer.poll(timeout_ms=500) == {}  # a fetch is in flight, parked at the broker
        producer.send("tail", key=b"k", value=b"woken").get(timeout=60)
        acked_at = time.monotonic()
        records = []
        while not records and time.monotonic() - acked_at < 30:
            records = consumer.poll(timeout_ms=1000).get(tp, [])
        received_at = time.monotonic()
        assert [(r.offset, r.key, r.value) for r in records] == [(0, b"k", b"woken")]
        assert received_at - acked_at < 30, received_at - acked_at
    finally:
        consumer.close()
        producer.close(timeout=5)


def test_a_log_append_time_topic_stamps_each_batch_with_the_broker_clock_and_looks_up_by_it(broker):
    admin = _admin(broker)
    admin.create_topics({"lat": {"num_partitions": 1, "replication_factor": 1,
                                 "configs": {"message.timestamp.type": "LogAppendTime"}}})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=50)
    try:
        before_ms = int(time.time() * 1000)
        metas = []
        for batch in range(4):  # four batches, appended at least 20 ms apart
            futures = [producer.send("lat", value=b"%d-%d" % (batch, i), timestamp_ms=1000 + i) for i in range(5)]
            producer.flush(timeout=10)
            metas += [f.get(timeout=1) for f in futures]
            time.sleep(0.02)
        after_ms = int(time.time() * 1000)
    finally:
        producer.close(timeout=5)
    tp = TopicPartition("lat", 0)
    got, consumer = _consume_all(broker, "lat", 1, 20)
    try:
        recs = got[0]
        # Every record carries its batch's append time, the same one the producer was told.
        assert [(r.offset, r.value, r.timestamp, r.timestamp_type) for r in recs] == [
            (m.offset, b"%d-%d" % (i // 5, i % 5), m.timestamp, 1) for i, m in enumerate(metas)]
        stamps = [r.timestamp for r in recs]
        assert all(stamps[i] == stamps[i - i % 5] for i in range(20)), stamps
        assert stamps[0] < stamps[5] < stamps[10] < stamps[15], stamps
        assert before_ms <= stamps[0] and stamps[-1] <= after_ms
        scan = [(r.offset, r.timestamp) for r in recs]
        for target in [1000, stamps[0] - 1, stamps[0], stamps[0] + 1, stamps[5], stamps[10] + 1,
                       stamps[15], stamps[15] + 1]:
            hit = brute_force_offset_for_time(scan, target)
            answer = consumer.offsets_for_times({tp: target})[tp]
            assert (None if answer is None else (answer.offset, answer.timestamp)) == hit, target
    finally:
        consumer.close()
    try:
        answer = admin.list_partition_offsets({tp: OffsetSpec.MAX_TIMESTAMP})[tp]
        assert (answer.offset, answer.timestamp) == brute_force_max_timestamp(scan) == (15, stamps[15])
    finally:
        admin.close()
