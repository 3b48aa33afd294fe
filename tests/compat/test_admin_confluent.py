"""confluent-kafka (librdkafka 2.x) admin API against a real broker process: topic and
broker configs (DescribeConfigs with Kafka's sources and synonyms, AlterConfigs,
IncrementalAlterConfigs SET/DELETE/APPEND/SUBTRACT and validate_only) and their effect on
produce and retention, CreatePartitions, DeleteRecords, DescribeCluster, and configs kept
across a restart.

confluent-kafka's Python admin offers no DescribeLogDirs; test_admin_kafka_python.py
covers it.  Every wait has a deadline (pytest-timeout bounds each test as a whole).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import (
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from tests.support.admin_helpers import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_RETENTION_MS,
    DEFAULT_SEGMENT_BYTES,
    FAST_RETENTION,
    OLD_TIMESTAMP_MS,
    TOPIC_CONFIG_NAMES,
    segment_base_offsets,
    wait_until,
)

pytestmark = pytest.mark.timeout(90)

TOPIC_RES = ResourceType.TOPIC
BROKER_RES = ResourceType.BROKER
SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE
APPEND, SUBTRACT = AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT


# ---------------------------------------------------------------------------- helpers

def _admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _create(admin: AdminClient, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    fs = admin.create_topics([NewTopic(name, partitions, 1, config=config or {})], operation_timeout=10,
                             request_timeout=15)
    assert fs[name].result(15) is None


def _describe(admin: AdminClient, restype: ResourceType, name: str) -> dict[str, ConfigEntry]:
    [f] = admin.describe_configs([ConfigResource(restype, name)], request_timeout=15).values()
    return f.result(15)


def _error_of(future) -> int | None:
    """The KafkaError code a future failed with, None if it succeeded."""
    try:
        future.result(15)
    except KafkaException as e:
        return e.args[0].code()
    return None


def _incremental(admin: AdminClient, restype: ResourceType, name: str,
                 ops: list[tuple[str, str | None, AlterConfigOpType]], validate_only: bool = False) -> int | None:
    res = ConfigResource(restype, name, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=op) for k, v, op in ops])
    [f] = admin.incremental_alter_configs([res], validate_only=validate_only, request_timeout=15).values()
    return _error_of(f)


def _alter(admin: AdminClient, restype: ResourceType, name: str, configs: dict[str, str]) -> int | None:
    [f] = admin.alter_configs([ConfigResource(restype, name, set_config=configs)], request_timeout=15).values()
    return _error_of(f)


def _entry(e: ConfigEntry) -> tuple:
    """(value, source, is_default, is_read_only) of one described config."""
    return e.value, ConfigSource(e.source), e.is_default, e.is_read_only


def _synonyms(e: ConfigEntry) -> list[tuple[str, str | None, ConfigSource]]:
    """confluent-kafka hands synonyms over as a dict keyed by name, so of several synonyms
    with the same name (a static value and the default behind it) only the last one, the
    DEFAULT_CONFIG, stays, in the first one's place.  test_admin_kafka_python.py checks
    whole synonym lists."""
    return [(s.name, s.value, ConfigSource(s.source)) for s in e.synonyms.values()]


def _produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0,
             timestamp: int = 0, batch_each: int = 0) -> list[tuple[int | None, int]]:
    """Produce ``values`` (flushing after every ``batch_each`` of them, so each group is its
    own batch); per value (error code or None, offset)."""
    results: list[tuple[int | None, int]] = [(None, -1)] * len(values)

    def report(i: int):
        def cb(err, msg) -> None:
            results[i] = (err.code() if err is not None else None, msg.offset() if err is None else -1)
        return cb

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": False,
                  "message.timeout.ms": 10_000})
    for i, v in enumerate(values):
        p.produce(topic, value=v, partition=partition, timestamp=timestamp, on_delivery=report(i))
        if batch_each and (i + 1) % batch_each == 0:
            assert p.flush(15) == 0
    assert p.flush(15) == 0
    return results


def _offsets(admin: AdminClient, topic: str, partition: int = 0) -> tuple[int, int]:
    """(earliest, latest) offsets of one partition, by ListOffsets."""
    tp = TopicPartition(topic, partition)
    out = []
    for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):
        [f] = admin.list_offsets({tp: spec}, request_timeout=15).values()
        out.append(f.result(15).offset)
    return out[0], out[1]


def _consume_from(bootstrap: str, topic: str, partition: int, offset: int, expect: int,
                  timeout_s: float = 15.0) -> tuple[list[tuple[int, bytes]], list[KafkaError]]:
    """Records and errors of a consumer assigned at ``offset`` (auto.offset.reset=error,
    so an out-of-range position is reported, not silently reset)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "admin-unused", "enable.auto.commit": False,
                  "auto.offset.reset": "error"})
    records: list[tuple[int, bytes]] = []
    errors: list[KafkaError] = []
    try:
        c.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + timeout_s
        while len(records) < expect and not errors and time.monotonic() < deadline:
            for m in c.consume(100, 0.2):
                if m.error() is not None:
                    errors.append(m.error())
                else:
                    records.append((m.offset(), m.value()))
    finally:
        c.close()
    return records, errors


# ---------------------------------------------------------------------------- describe

def test_a_topic_created_with_configs_describes_every_config_with_its_overrides_as_topic_configs(broker):
    admin = _admin(broker)
    _create(admin, "described", config={"retention.ms": "3600000", "cleanup.policy": "compact,delete",
                                        "max.message.bytes": "2000"})
    configs = _describe(admin, TOPIC_RES, "described")
    assert set(configs) == TOPIC_CONFIG_NAMES

    # The overrides: DYNAMIC_TOPIC_CONFIG, not defaults, never read-only; the synonyms start
    # with the override, then the broker config behind it (ConfigHelper.createTopicConfigEntry).
    assert _entry(configs["retention.ms"]) == ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)
    # retention.ms's broker synonym chain is log.retention.ms, .minutes, .hours; Kafka keeps
    # synonyms from the first one named log.retention.ms on (configSynonyms' dropWhile), and
    # log.retention.ms has no default, so only the topic override is listed.
    assert _synonyms(configs["retention.ms"]) == [("retention.ms", "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG)]
    assert _entry(configs["cleanup.policy"]) == ("compact,delete", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)
    assert _synonyms(configs["cleanup.policy"]) == [
        ("cleanup.policy", "compact,delete", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)]
    assert _entry(configs["max.message.bytes"]) == ("2000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)
    assert _synonyms(configs["max.message.bytes"]) == [
        ("max.message.bytes", "2000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("message.max.bytes", str(DEFAULT_MAX_MESSAGE_BYTES), ConfigSource.DEFAULT_CONFIG)]

    # Everything else is Kafka's default, marked as such.
    for name in TOPIC_CONFIG_NAMES - {"retention.ms", "cleanup.policy", "max.message.bytes"}:
        e = configs[name]
        assert (ConfigSource(e.source), e.is_default, e.is_read_only) == (ConfigSource.DEFAULT_CONFIG, True, False), name
    assert {n: configs[n].value for n in ("segment.bytes", "compression.type", "min.insync.replicas",
                                          "message.timestamp.type", "retention.bytes", "preallocate",
                                          "min.cleanable.dirty.ratio", "segment.ms")} == {
        "segment.bytes": str(DEFAULT_SEGMENT_BYTES), "compression.type": "producer", "min.insync.replicas": "1",
        "message.timestamp.type": "CreateTime", "retention.bytes": "-1", "preallocate": "false",
        "min.cleanable.dirty.ratio": "0.5", "segment.ms": "604800000"}
    assert _synonyms(configs["segment.bytes"]) == [
        ("log.segment.bytes", str(DEFAULT_SEGMENT_BYTES), ConfigSource.DEFAULT_CONFIG)]
    # segment.ms's synonym log.roll.ms has no default (log.roll.hours has): no synonyms.
    assert _synonyms(configs["segment.ms"]) == []

    [f] = admin.describe_configs([ConfigResource(TOPIC_RES, "no-such-topic")], request_timeout=15).values()
    assert _error_of(f) == KafkaError.UNKNOWN_TOPIC_OR_PART


# ---------------------------------------------------------------------------- alter, effect

def test_max_message_bytes_changed_by_either_alter_api_decides_which_produce_is_too_large(broker):
    admin = _admin(broker)
    _create(admin, "limits")
    big = b"x" * 5000
    assert _produce(broker.bootstrap, "limits", [big]) == [(None, 0)]

    assert _incremental(admin, TOPIC_RES, "limits", [("max.message.bytes", "1000", SET)]) is None
    assert _entry(_describe(admin, TOPIC_RES, "limits")["max.message.bytes"]) == (
        "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)
    # One batch each: max.message.bytes bounds a whole batch (LogValidator), so the small
    # record must not share the big one's.
    assert _produce(broker.bootstrap, "limits", [big, b"small"], batch_each=1) == [
        (KafkaError.MSG_SIZE_TOO_LARGE, -1), (None, 1)]

    # Legacy AlterConfigs replaces the whole override set: retention.ms in, max.message.bytes
    # (not sent) out, so the limit is Kafka's default again.
    assert _alter(admin, TOPIC_RES, "limits", {"retention.ms": "7200000"}) is None
    configs = _describe(admin, TOPIC_RES, "limits")
    assert _entry(configs["max.message.bytes"]) == (str(DEFAULT_MAX_MESSAGE_BYTES), ConfigSource.DEFAULT_CONFIG,
                                                    True, False)
    assert _entry(configs["retention.ms"]) == ("7200000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)
    assert _produce(broker.bootstrap, "limits", [big]) == [(None, 2)]

    assert _alter(admin, TOPIC_RES, "limits", {"retention.ms": "7200000", "max.message.bytes": "3000"}) is None
    assert _produce(broker.bootstrap, "limits", [big]) == [(KafkaError.MSG_SIZE_TOO_LARGE, -1)]

    # DELETE brings back the default.
    assert _incremental(admin, TOPIC_RES, "limits", [("max.message.bytes", None, DELETE),
                                                     ("retention.ms", None, DELETE)]) is None
    configs = _describe(admin, TOPIC_RES, "limits")
    assert {n: _entry(configs[n]) for n in ("max.message.bytes", "retention.ms")} == {
        "max.message.bytes": (str(DEFAULT_MAX_MESSAGE_BYTES), ConfigSource.DEFAULT_CONFIG, True, False),
        "retention.ms": (str(DEFAULT_RETENTION_MS), ConfigSource.DEFAULT_CONFIG, True, False)}
    assert _produce(broker.bootstrap, "limits", [big]) == [(None, 3)]


def test_lowering_retention_ms_deletes_every_segment_older_than_it_and_moves_the_earliest_offset(broker_factory):
    b = broker_factory(log_level="DEBUG", **FAST_RETENTION)
    admin = _admin(b)
    _create(admin, "aging", config={"segment.bytes": "2048"})
    # 40 records of 300 bytes an hour old, 4 per batch: several segments.
    acks = _produce(b.bootstrap, "aging", [b"%03d" % i + b"o" * 297 for i in range(40)],
                    timestamp=OLD_TIMESTAMP_MS, batch_each=4)
    assert acks == [(None, i) for i in range(40)]
    before = segment_base_offsets(b.data_dir, "aging", 0)
    assert len(before) >= 4 and before[0] == 0, before
    b.wait_for_retention_pass()  # a pass that saw every record: the 7-day default deletes nothing
    assert _offsets(admin, "aging") == (0, 40)
    assert segment_base_offsets(b.data_dir, "aging", 0) == before

    assert _incremental(admin, TOPIC_RES, "aging", [("retention.ms", "600000", SET)]) is None
    # Every segment is older than 10 minutes, the active one too: Kafka rolls a new empty
    # segment at the log end and deletes them all (UnifiedLog.deleteSegments).
    assert wait_until(lambda: _offsets(admin, "aging"), lambda o: o[0] == 40) == (40, 40)
    assert wait_until(lambda: segment_base_offsets(b.data_dir, "aging", 0), lambda s: s == [40]) == [40]

    # A record of now is kept by the 10-minute retention.
    assert _produce(b.bootstrap, "aging", [b"fresh"]) == [(None, 40)]
    b.wait_for_retention_pass()
    assert _offsets(admin, "aging") == (40, 41)
    assert _consume_from(b.bootstrap, "aging", 0, 40, 1) == ([(40, b"fresh")], [])
    assert "Traceback" not in b.log_text()


def test_incremental_append_and_subtract_edit_cleanup_policy_and_validate_only_changes_nothing(broker):
    admin = _admin(broker)
    _create(admin, "policy")

    def policy() -> tuple:
        return _entry(_describe(admin, TOPIC_RES, "policy")["cleanup.policy"])

    # APPEND starts from the default ("delete") when there is no override.
    assert _incremental(admin, TOPIC_RES, "policy", [("cleanup.policy", "compact", APPEND)]) is None
    assert policy() == ("delete,compact", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)
    assert _incremental(admin, TOPIC_RES, "policy", [("cleanup.policy", "compact", APPEND)]) is None
    assert policy() == ("delete,compact", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)
    assert _incremental(admin, TOPIC_RES, "policy", [("cleanup.policy", "delete", SUBTRACT)]) is None
    assert policy() == ("compact", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)

    # validate_only checks and answers, but changes nothing.
    assert _incremental(admin, TOPIC_RES, "policy", [("cleanup.policy", "delete", SET),
                                                     ("retention.ms", "1000", SET)], validate_only=True) is None
    configs = _describe(admin, TOPIC_RES, "policy")
    assert (_entry(configs["cleanup.policy"]), _entry(configs["retention.ms"])) == (
        ("compact", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False),
        (str(DEFAULT_RETENTION_MS), ConfigSource.DEFAULT_CONFIG, True, False))
    # ... and still refuses what would be refused.
    assert _incremental(admin, TOPIC_RES, "policy", [("retention.ms", "-7", SET)],
                        validate_only=True) == KafkaError.INVALID_CONFIG

    # Errors, each leaving the topic as it was (ConfigurationControlManager / LogConfig.validate).
    assert _incremental(admin, TOPIC_RES, "policy", [("retention.ms", "1000", APPEND)]) == KafkaError.INVALID_CONFIG
    assert _incremental(admin, TOPIC_RES, "policy", [("cleanup.policy", "shred", APPEND)]) == KafkaError.INVALID_CONFIG
    assert _incremental(admin, TOPIC_RES, "policy", [("retention.ms", "soon", SET)]) == KafkaError.INVALID_CONFIG
    assert _incremental(admin, TOPIC_RES, "policy", [("no.such.config", "1", SET)]) == KafkaError.INVALID_CONFIG
    assert _alter(admin, TOPIC_RES, "policy", {"max.message.bytes": "-2"}) == KafkaError.INVALID_CONFIG
    assert _incremental(admin, TOPIC_RES, "no-such-topic", [("retention.ms", "1000", SET)]) \
        == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert _alter(admin, TOPIC_RES, "no-such-topic", {"retention.ms": "1000"}) == KafkaError.UNKNOWN_TOPIC_OR_PART
    configs = _describe(admin, TOPIC_RES, "policy")
    assert {n: e.value for n, e in configs.items() if ConfigSource(e.source) == ConfigSource.DYNAMIC_TOPIC_CONFIG} \
        == {"cleanup.policy": "compact"}


# ---------------------------------------------------------------------------- partitions, records

def test_create_partitions_adds_partitions_that_take_records_and_refuses_a_count_that_is_no_increase(broker):
    admin = _admin(broker)
    _create(admin, "grow", partitions=2, config={"max.message.bytes": "3000"})

    def create_partitions(count: int, validate_only: bool = False) -> int | None:
        [f] = admin.create_partitions([NewPartitions("grow", count)], validate_only=validate_only,
                                      request_timeout=15).values()
        return _error_of(f)

    assert create_partitions(6, validate_only=True) is None
    assert len(admin.list_topics("grow", timeout=15).topics["grow"].partitions) == 2
    assert create_partitions(4) is None
    assert sorted(admin.list_topics("grow", timeout=15).topics["grow"].partitions) == [0, 1, 2, 3]
    assert create_partitions(4) == KafkaError.INVALID_PARTITIONS
    assert create_partitions(3) == KafkaError.INVALID_PARTITIONS
    [f] = admin.create_partitions([NewPartitions("never-made", 3)], request_timeout=15).values()
    assert _error_of(f) == KafkaError.UNKNOWN_TOPIC_OR_PART

    # The new partitions take records and the topic's configs.
    assert _produce(broker.bootstrap, "grow", [b"p3-a", b"p3-b"], partition=3) == [(None, 0), (None, 1)]
    assert _produce(broker.bootstrap, "grow", [b"y" * 4000], partition=2) == [(KafkaError.MSG_SIZE_TOO_LARGE, -1)]
    assert _consume_from(broker.bootstrap, "grow", 3, 0, 2) == ([(0, b"p3-a"), (1, b"p3-b")], [])
    assert _offsets(admin, "grow", 2) == (0, 0)


def test_delete_records_moves_the_earliest_offset_and_a_fetch_below_it_is_out_of_range(broker):
    admin = _admin(broker)
    _create(admin, "trim", partitions=2)
    values = [b"v%d" % i for i in range(10)]
    assert _produce(broker.bootstrap, "trim", values) == [(None, i) for i in range(10)]
    assert _produce(broker.bootstrap, "trim", values[:3], partition=1) == [(None, i) for i in range(3)]

    fs = admin.delete_records([TopicPartition("trim", 0, 4), TopicPartition("trim", 1, OFFSET_END)],
                              request_timeout=15)
    assert {tp.partition: f.result(15).low_watermark for tp, f in fs.items()} == {0: 4, 1: 3}
    assert (_offsets(admin, "trim", 0), _offsets(admin, "trim", 1)) == ((4, 10), (3, 3))

    records, errors = _consume_from(broker.bootstrap, "trim", 0, 2, 1)
    # librdkafka reports the broker's OFFSET_OUT_OF_RANGE as its own _AUTO_OFFSET_RESET
    # when auto.offset.reset=error, naming the broker error in the message.
    assert records == []
    assert [(e.code(), "Offset out of range" in e.str()) for e in errors] == [(KafkaError._AUTO_OFFSET_RESET, True)]
    assert _consume_from(broker.bootstrap, "trim", 0, 4, 6) == ([(i, b"v%d" % i) for i in range(4, 10)], [])

    # Beyond the high watermark: OFFSET_OUT_OF_RANGE, nothing moves (ReplicaManager.deleteRecords
    # -> Partition.deleteRecordsOnLeader).  Below the log start: nothing to do, no error.
    fs = admin.delete_records([TopicPartition("trim", 0, 11)], request_timeout=15)
    assert [_error_of(f) for f in fs.values()] == [KafkaError.OFFSET_OUT_OF_RANGE]
    fs = admin.delete_records([TopicPartition("trim", 0, 2)], request_timeout=15)
    assert [f.result(15).low_watermark for f in fs.values()] == [4]
    # librdkafka looks the leader up in its metadata first and fails an unknown partition
    # itself (_NOENT) without asking the broker; kafka-python's test covers the broker's answer.
    fs = admin.delete_records([TopicPartition("no-such-topic", 0, 1)], request_timeout=15)
    assert [_error_of(f) for f in fs.values()] == [KafkaError._NOENT]
    assert _offsets(admin, "trim", 0) == (4, 10)

    # The moved log start offsets outlive a (clean) restart.
    broker.restart()
    admin = _admin(broker)
    assert (_offsets(admin, "trim", 0), _offsets(admin, "trim", 1)) == ((4, 10), (3, 3))
    assert _consume_from(broker.bootstrap, "trim", 0, 3, 1)[0] == []


# ---------------------------------------------------------------------------- cluster

def test_describe_cluster_names_this_broker_as_the_only_node_and_the_controller(broker):
    admin = _admin(broker)
    result = admin.describe_cluster(request_timeout=15).result(15)
    assert [(n.id, n.host, n.port, n.rack) for n in result.nodes] == [(1, "127.0.0.1", broker.port, None)]
    assert (result.controller.id, result.controller.host, result.controller.port) == (1, "127.0.0.1", broker.port)
    assert result.cluster_id == admin.list_topics(timeout=15).cluster_id
    assert isinstance(result.cluster_id, str) and len(result.cluster_id) == 22
    assert result.authorized_operations is None
    # Asked for, every CLUSTER operation (no authorizer: AuthHelper.authorizedOperations);
    # librdkafka's AclOperation has no names for CREATE_TOKENS / DESCRIBE_TOKENS and drops them.
    result = admin.describe_cluster(include_authorized_operations=True, request_timeout=15).result(15)
    assert sorted(op.name for op in result.authorized_operations) == [
        "ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS", "IDEMPOTENT_WRITE"]


def test_elect_leaders_on_a_single_broker_is_not_needed_for_its_partitions_and_unknown_otherwise(broker):
    """One broker is every partition's only replica and leader, as in a one-broker Kafka
    cluster: no election is needed, of either type; a partition that does not exist is
    UNKNOWN_TOPIC_OR_PARTITION; electing everything lists nothing."""
    from confluent_kafka import ElectionType

    admin = _admin(broker)
    _create(admin, "elect-one", 2)
    wanted = [TopicPartition("elect-one", 0), TopicPartition("elect-one", 1),
              TopicPartition("elect-one", 2)]
    for election_type in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        results = admin.elect_leaders(election_type, wanted).result(30)
        assert {(tp.topic, tp.partition): e.code() for tp, e in results.items()} == {
            ("elect-one", 0): KafkaError.ELECTION_NOT_NEEDED,
            ("elect-one", 1): KafkaError.ELECTION_NOT_NEEDED,
            ("elect-one", 2): KafkaError.UNKNOWN_TOPIC_OR_PART}
    assert admin.elect_leaders(ElectionType.PREFERRED, None).result(30) == {}


# ---------------------------------------------------------------------------- broker configs

def test_broker_configs_report_kafkas_sources_take_effect_and_survive_a_restart_with_the_topic_configs(
        broker_factory):
    """Per-broker dynamic configs (resource "1").  confluent-kafka refuses a BROKER resource
    with an empty name client-side (ValueError "Invalid ConfigResource"), so the
    cluster-wide default level is covered by the kafka-python and aiokafka suites."""
    b = broker_factory(**{"message.max.bytes": "500000"})
    admin = _admin(b)
    _create(admin, "inherits")
    _create(admin, "own", config={"max.message.bytes": "200000", "retention.ms": "3600000"})

    configs = _describe(admin, BROKER_RES, "1")
    # A static override (server.properties / --override) and the default behind it (which
    # is all that is left of the synonyms once confluent-kafka has keyed them by name).
    assert _entry(configs["message.max.bytes"]) == ("500000", ConfigSource.STATIC_BROKER_CONFIG, False, False)
    assert _synonyms(configs["message.max.bytes"]) == [("message.max.bytes", str(DEFAULT_MAX_MESSAGE_BYTES),
                                                        ConfigSource.DEFAULT_CONFIG)]
    assert _entry(configs["log.segment.bytes"]) == (str(DEFAULT_SEGMENT_BYTES), ConfigSource.DEFAULT_CONFIG,
                                                    True, False)
    # Read-only: not one of Kafka's dynamic broker configs (DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS).
    assert _entry(configs["num.partitions"]) == ("1", ConfigSource.STATIC_BROKER_CONFIG, False, True)
    assert _entry(configs["auto.create.topics.enable"]) == ("true", ConfigSource.DEFAULT_CONFIG, True, True)
    # log.retention.ms has no default: described with no value, as a default.
    assert _entry(configs["log.retention.ms"]) == (None, ConfigSource.DEFAULT_CONFIG, True, False)
    assert _entry(_describe(admin, TOPIC_RES, "inherits")["max.message.bytes"]) == (
        "500000", ConfigSource.STATIC_BROKER_CONFIG, False, False)

    assert _incremental(admin, BROKER_RES, "1", [("message.max.bytes", "4000", SET),
                                                  ("log.retention.ms", "5400000", SET)]) is None
    # Not dynamic, or not a value: INVALID_REQUEST, as Kafka's ConfigAdminManager answers
    # broker config errors (KAFKA-13609), and nothing changes.  (librdkafka sends a BROKER
    # resource to the broker it names, so another broker id just waits for that broker.)
    assert _incremental(admin, BROKER_RES, "1", [("num.partitions", "3", SET)]) == KafkaError.INVALID_REQUEST
    assert _incremental(admin, BROKER_RES, "1", [("log.retention.ms", "soon", SET)]) == KafkaError.INVALID_REQUEST

    def check_described() -> None:
        broker_configs = _describe(admin, BROKER_RES, "1")
        assert {n: _entry(broker_configs[n]) for n in ("message.max.bytes", "log.retention.ms", "num.partitions")} == {
            "message.max.bytes": ("4000", ConfigSource.DYNAMIC_BROKER_CONFIG, False, False),
            "log.retention.ms": ("5400000", ConfigSource.DYNAMIC_BROKER_CONFIG, False, False),
            "num.partitions": ("1", ConfigSource.STATIC_BROKER_CONFIG, False, True)}
        inherits = _describe(admin, TOPIC_RES, "inherits")
        assert {n: _entry(inherits[n]) for n in ("max.message.bytes", "retention.ms")} == {
            "max.message.bytes": ("4000", ConfigSource.DYNAMIC_BROKER_CONFIG, False, False),
            "retention.ms": ("5400000", ConfigSource.DYNAMIC_BROKER_CONFIG, False, False)}
        assert _synonyms(inherits["retention.ms"]) == [
            ("log.retention.ms", "5400000", ConfigSource.DYNAMIC_BROKER_CONFIG),
            ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)]
        own = _describe(admin, TOPIC_RES, "own")
        assert {n: _entry(own[n]) for n in ("max.message.bytes", "retention.ms")} == {
            "max.message.bytes": ("200000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False),
            "retention.ms": ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)}
        assert _synonyms(own["max.message.bytes"]) == [
            ("max.message.bytes", "200000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
            ("message.max.bytes", str(DEFAULT_MAX_MESSAGE_BYTES), ConfigSource.DEFAULT_CONFIG)]

    check_described()
    # In effect: the per-broker limit binds the topic without an override, not the other.
    assert _produce(b.bootstrap, "inherits", [b"z" * 5000]) == [(KafkaError.MSG_SIZE_TOO_LARGE, -1)]
    assert _produce(b.bootstrap, "own", [b"z" * 5000]) == [(None, 0)]

    b.restart()
    admin = _admin(b)
    check_described()
    assert _produce(b.bootstrap, "inherits", [b"z" * 5000, b"small"], batch_each=1) == [
        (KafkaError.MSG_SIZE_TOO_LARGE, -1), (None, 0)]

    # Deleting the dynamic value falls back to the static one; legacy AlterConfigs with no
    # configs clears the level.
    assert _incremental(admin, BROKER_RES, "1", [("message.max.bytes", None, DELETE)]) is None
    assert _entry(_describe(admin, TOPIC_RES, "inherits")["max.message.bytes"]) == (
        "500000", ConfigSource.STATIC_BROKER_CONFIG, False, False)
    assert _produce(b.bootstrap, "inherits", [b"z" * 5000]) == [(None, 1)]
    assert _alter(admin, BROKER_RES, "1", {}) is None
    assert _entry(_describe(admin, TOPIC_RES, "inherits")["retention.ms"]) == (
        str(DEFAULT_RETENTION_MS), ConfigSource.DEFAULT_CONFIG, True, False)
    assert "Traceback" not in b.log_text()
