"""kafka-python 3 admin API against a real broker process: DescribeConfigs with whole
synonym chains and config types, both alter APIs (kafka-python's legacy AlterConfigs is a
read-modify-write over DescribeConfigs' sources), APPEND/SUBTRACT and validate_only,
Kafka's error messages, retention and max.message.bytes taking effect, CreatePartitions,
DeleteRecords, DescribeLogDirs, DescribeCluster, and topic and dynamic broker configs
(per broker and cluster-wide) across a restart.

kafka-python's admin refuses a BROKER resource whose name is not an integer, so the
cluster-wide default level (resource "") is altered with kafka-python's own
IncrementalAlterConfigsRequest sent through the admin client's connection manager.
"""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, KafkaAdminClient, NewPartitions
from kafka.errors import (
    InvalidPartitionsError,
    MessageSizeTooLargeError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    UnknownTopicOrPartitionError,
)
from kafka.protocol.admin import DescribeConfigsRequest, IncrementalAlterConfigsRequest

from tests.support.admin_helpers import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_RETENTION_MS,
    DEFAULT_SEGMENT_BYTES,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    FAST_RETENTION,
    OLD_TIMESTAMP_MS,
    TOPIC_CONFIG_NAMES,
    segment_base_offsets,
    wait_until,
)

pytestmark = pytest.mark.timeout(90)

TOPIC, BROKER = 2, 4  # ConfigResource.Type ids
SET, DELETE, APPEND, SUBTRACT = "SET", "DELETE", "APPEND", "SUBTRACT"


# ---------------------------------------------------------------------------- helpers

def _admin(broker) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)


def _create(admin: KafkaAdminClient, name: str, partitions: int = 1,
            configs: dict[str, str] | None = None) -> dict[str, tuple[str | None, str]]:
    """Create a topic; the (value, source) of each config CreateTopics v5+ answers with."""
    created = admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1,
                                          "configs": configs or {}}})
    [topic] = created["topics"]
    assert (topic["name"], topic["error_code"]) == (name, 0)
    return {n: (c["value"], c["config_source"]) for n, c in topic["configs"].items()}


def _describe(admin: KafkaAdminClient, kind: str, name: str, keys: list[str] | None = None,
              synonyms: bool = True) -> dict[str, dict]:
    """Every described config of one resource (config_filter="all": kafka-python's default
    filter keeps only the DYNAMIC_* sources)."""
    answer = admin.describe_configs([ConfigResource(kind, name, keys)], include_synonyms=synonyms,
                                    config_filter="all")
    return answer[kind.lower()][name]


def _entry(config: dict) -> tuple:
    return config["value"], config["config_source"], config["read_only"]


def _chain(config: dict) -> list[tuple[str, str | None, str]]:
    return [(s["name"], s["value"], s["source"]) for s in config["synonyms"]]


def _alter(admin: KafkaAdminClient, kind: str, name: str, configs: dict, incremental: bool,
           validate_only: bool = False) -> str:
    """kafka-python's answer for the one resource: "OK" or "[Error N] Name: message"."""
    answer = admin.alter_configs([ConfigResource(kind, name, configs)], incremental=incremental,
                                 validate_only=validate_only, raise_on_unknown=False)
    return answer[kind.lower()][name]


def _raw(admin: KafkaAdminClient, request):
    """Send a request of kafka-python's own protocol classes through the admin client."""
    async def send():
        return await admin._manager.send(request)
    return admin._manager.run(send)


def _set_cluster_defaults(admin: KafkaAdminClient, ops: list[tuple[str, int, str | None]]) -> tuple[int, str | None]:
    """IncrementalAlterConfigs on BROKER "" (Kafka's cluster-wide dynamic default)."""
    resp = _raw(admin, IncrementalAlterConfigsRequest(resources=[(BROKER, "", ops)], validate_only=False))
    [r] = resp.responses
    return r.error_code, r.error_message


def _producer(broker) -> KafkaProducer:
    # Not idempotent: kafka-python's idempotent producer treats MESSAGE_TOO_LARGE as fatal.
    return KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, enable_idempotence=False, linger_ms=0,
                         request_timeout_ms=10_000, retries=0)


def _send(producer: KafkaProducer, topic: str, value: bytes, partition: int = 0,
          timestamp_ms: int | None = None) -> int | str:
    """The offset the record got, or the name of the error it failed with."""
    try:
        return producer.send(topic, value=value, partition=partition, timestamp_ms=timestamp_ms).get(timeout=15).offset
    except MessageSizeTooLargeError as e:
        return type(e).__name__


def _offsets(broker, topic: str, partition: int = 0) -> tuple[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, request_timeout_ms=10_000)
    try:
        tp = TopicPartition(topic, partition)
        return consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()


def _partition_sizes(admin: KafkaAdminClient) -> dict[tuple[str, int], int]:
    [answer] = admin.describe_log_dirs()
    return {(t["name"], p["partition_index"]): p["partition_size"]
            for d in answer["log_dirs"] for t in d["topics"] for p in t["partitions"]}


# ---------------------------------------------------------------------------- describe

def test_describe_configs_gives_every_topic_config_with_its_type_and_kafkas_whole_synonym_chain(broker_factory):
    b = broker_factory(**{"message.max.bytes": "500000", "log.retention.minutes": "600",
                          "log.cleanup.policy": "compact"})
    admin = _admin(b)
    try:
        created = _create(admin, "chains", configs={"max.message.bytes": "3000", "cleanup.policy": "delete,compact"})
        created_plain = _create(admin, "plain")
        # CreateTopics answers with the controller's view (KafkaConfigSchema.resolveEffectiveTopicConfigs):
        # the first broker synonym set, converted to ms, so log.retention.minutes=600 is
        # retention.ms STATIC_BROKER_CONFIG here although DescribeConfigs calls it DEFAULT_CONFIG.
        assert set(created) == TOPIC_CONFIG_NAMES
        assert {n: created[n] for n in ("max.message.bytes", "cleanup.policy", "retention.ms", "segment.bytes",
                                        "segment.ms")} == {
            "max.message.bytes": ("3000", "DYNAMIC_TOPIC_CONFIG"),
            "cleanup.policy": ("delete,compact", "DYNAMIC_TOPIC_CONFIG"),
            "retention.ms": (str(600 * 60_000), "STATIC_BROKER_CONFIG"),
            "segment.bytes": (str(DEFAULT_SEGMENT_BYTES), "DEFAULT_CONFIG"),
            "segment.ms": ("604800000", "DEFAULT_CONFIG")}
        assert {n: v for n, v in created_plain.items() if v[1] != "DEFAULT_CONFIG"} == {
            "max.message.bytes": ("500000", "STATIC_BROKER_CONFIG"), "cleanup.policy": ("compact", "STATIC_BROKER_CONFIG"),
            "retention.ms": (str(600 * 60_000), "STATIC_BROKER_CONFIG")}
        configs = _describe(admin, "TOPIC", "chains")
        assert set(configs) == TOPIC_CONFIG_NAMES
        assert {n: (c["config_type"], c["is_sensitive"], c["documentation"]) for n, c in configs.items() if n in (
            "max.message.bytes", "retention.ms", "cleanup.policy", "preallocate", "min.cleanable.dirty.ratio",
            "compression.type")} == {
            "max.message.bytes": ("INT", False, None), "retention.ms": ("LONG", False, None),
            "cleanup.policy": ("LIST", False, None), "preallocate": ("BOOLEAN", False, None),
            "min.cleanable.dirty.ratio": ("DOUBLE", False, None), "compression.type": ("STRING", False, None)}

        # Override, then the broker's static value, then Kafka's default (ConfigHelper.configSynonyms).
        assert _entry(configs["max.message.bytes"]) == ("3000", "DYNAMIC_TOPIC_CONFIG", False)
        assert _chain(configs["max.message.bytes"]) == [
            ("max.message.bytes", "3000", "DYNAMIC_TOPIC_CONFIG"),
            ("message.max.bytes", "500000", "STATIC_BROKER_CONFIG"),
            ("message.max.bytes", str(DEFAULT_MAX_MESSAGE_BYTES), "DEFAULT_CONFIG")]
        assert _chain(configs["cleanup.policy"]) == [
            ("cleanup.policy", "delete,compact", "DYNAMIC_TOPIC_CONFIG"),
            ("log.cleanup.policy", "compact", "STATIC_BROKER_CONFIG"),
            ("log.cleanup.policy", "delete", "DEFAULT_CONFIG")]
        # log.retention.minutes=600 sets retention.ms, yet Kafka lists no synonym and calls it
        # DEFAULT_CONFIG: configSynonyms drops every synonym before the first named
        # log.retention.ms, and log.retention.ms itself is unset and has no default.
        assert (_entry(configs["retention.ms"]), _chain(configs["retention.ms"])) == (
            (str(600 * 60_000), "DEFAULT_CONFIG", False), [])

        plain = _describe(admin, "TOPIC", "plain")
        assert _entry(plain["max.message.bytes"]) == ("500000", "STATIC_BROKER_CONFIG", False)
        assert _chain(plain["max.message.bytes"]) == [
            ("message.max.bytes", "500000", "STATIC_BROKER_CONFIG"),
            ("message.max.bytes", str(DEFAULT_MAX_MESSAGE_BYTES), "DEFAULT_CONFIG")]
        assert _entry(plain["cleanup.policy"]) == ("compact", "STATIC_BROKER_CONFIG", False)
        assert {n for n, c in plain.items() if c["config_source"] != "DEFAULT_CONFIG"} == {
            "max.message.bytes", "cleanup.policy"}

        # The broker: the static minutes above the default hours; log.retention.ms unset.
        broker_configs = _describe(admin, "BROKER", "1")
        assert (_entry(broker_configs["log.retention.minutes"]), _chain(broker_configs["log.retention.minutes"])) == (
            ("600", "STATIC_BROKER_CONFIG", False),
            [("log.retention.minutes", "600", "STATIC_BROKER_CONFIG"), ("log.retention.hours", "168", "DEFAULT_CONFIG")])
        assert (_entry(broker_configs["log.retention.ms"]), _chain(broker_configs["log.retention.ms"])) == (
            (None, "DEFAULT_CONFIG", False), [])
        assert _entry(broker_configs["log.dirs"]) == (str(b.data_dir), "STATIC_BROKER_CONFIG", True)

        # Without include_synonyms no synonyms; named keys only those; an empty list of
        # names means all of them (ConfigHelperUtils.buildConfigEntries).
        assert _chain(_describe(admin, "TOPIC", "chains", synonyms=False)["max.message.bytes"]) == []
        assert set(_describe(admin, "TOPIC", "chains", keys=["retention.ms", "segment.bytes"])) == {
            "retention.ms", "segment.bytes"}
        assert set(_describe(admin, "TOPIC", "chains", keys=[])) == TOPIC_CONFIG_NAMES

        # kafka-python drops the per-resource error; the raw answer carries it.
        resp = _raw(admin, DescribeConfigsRequest(resources=[(TOPIC, "no-such-topic", None)], include_synonyms=True))
        assert [(r.error_code, r.resource_name, r.configs) for r in resp.results] == [(3, "no-such-topic", [])]
        resp = _raw(admin, DescribeConfigsRequest(resources=[(BROKER, "7", None)], include_synonyms=False))
        assert [(r.error_code, r.error_message) for r in resp.results] == [
            (42, "Unexpected broker id, expected 1 or empty string, but received 7")]

        # APPEND to a topic without an override starts from Kafka's default for the topic
        # config ("delete"), not from the broker's "compact" (ConfigurationControlManager.getParts
        # takes KafkaConfigSchema.getDefault).
        assert _alter(admin, "TOPIC", "plain", {"cleanup.policy": (APPEND, "delete")}, incremental=True) == "OK"
        assert _entry(_describe(admin, "TOPIC", "plain")["cleanup.policy"]) == ("delete", "DYNAMIC_TOPIC_CONFIG", False)
    finally:
        admin.close()


# ---------------------------------------------------------------------------- alter

def test_both_alter_apis_change_a_topic_and_kafka_pythons_legacy_alter_keeps_the_other_overrides(broker):
    admin = _admin(broker)
    producer = _producer(broker)
    try:
        _create(admin, "alt")
        assert _send(producer, "alt", b"x" * 5000) == 0
        assert _alter(admin, "TOPIC", "alt", {"max.message.bytes": "1000", "retention.ms": "3600000"},
                      incremental=True) == "OK"
        assert _send(producer, "alt", b"x" * 5000) == "MessageSizeTooLargeError"
        assert _send(producer, "alt", b"small") == 1

        # kafka-python's legacy AlterConfigs re-sends the topic's DYNAMIC_TOPIC_CONFIG entries
        # it did not name (read-modify-write), so max.message.bytes stays.
        assert _alter(admin, "TOPIC", "alt", {"retention.ms": "7200000"}, incremental=False) == "OK"
        configs = _describe(admin, "TOPIC", "alt")
        assert {n: _entry(c) for n, c in configs.items() if c["config_source"] != "DEFAULT_CONFIG"} == {
            "max.message.bytes": ("1000", "DYNAMIC_TOPIC_CONFIG", False),
            "retention.ms": ("7200000", "DYNAMIC_TOPIC_CONFIG", False)}
        assert _send(producer, "alt", b"x" * 5000) == "MessageSizeTooLargeError"

        # reset_configs: IncrementalAlterConfigs DELETE.
        assert admin.reset_configs([ConfigResource("TOPIC", "alt", ["max.message.bytes"])],
                                   raise_on_unknown=False) == {"topic": {"alt": "OK"}}
        configs = _describe(admin, "TOPIC", "alt")
        assert _entry(configs["max.message.bytes"]) == (str(DEFAULT_MAX_MESSAGE_BYTES), "DEFAULT_CONFIG", False)
        assert _entry(configs["retention.ms"]) == ("7200000", "DYNAMIC_TOPIC_CONFIG", False)
        assert _send(producer, "alt", b"x" * 5000) == 2
        assert _alter(admin, "TOPIC", "alt", {"retention.ms": (DELETE, None)}, incremental=True) == "OK"
        assert _entry(_describe(admin, "TOPIC", "alt")["retention.ms"]) == (
            str(DEFAULT_RETENTION_MS), "DEFAULT_CONFIG", False)
    finally:
        producer.close(timeout=5)
        admin.close()


def test_append_subtract_validate_only_and_refusals_answer_with_kafkas_codes_and_messages(broker):
    admin = _admin(broker)
    try:
        _create(admin, "ops", configs={"cleanup.policy": "compact"})

        def overrides() -> dict[str, str]:
            return {n: c["value"] for n, c in _describe(admin, "TOPIC", "ops").items()
                    if c["config_source"] == "DYNAMIC_TOPIC_CONFIG"}

        assert _alter(admin, "TOPIC", "ops", {"cleanup.policy": (APPEND, "delete")}, incremental=True) == "OK"
        assert overrides() == {"cleanup.policy": "compact,delete"}
        assert _alter(admin, "TOPIC", "ops", {"cleanup.policy": (SUBTRACT, "compact")}, incremental=True) == "OK"
        assert overrides() == {"cleanup.policy": "delete"}
        assert _alter(admin, "TOPIC", "ops", {"cleanup.policy": (SUBTRACT, "delete")}, incremental=True) == "OK"
        assert overrides() == {"cleanup.policy": ""}

        for incremental in (True, False):
            assert _alter(admin, "TOPIC", "ops", {"cleanup.policy": "compact", "segment.bytes": "5000"},
                          incremental=incremental, validate_only=True) == "OK"
        assert overrides() == {"cleanup.policy": ""}

        # Kafka's messages: LogConfig.validate (ConfigDef) and ConfigurationControlManager.
        refusals = {
            "[Error 40] InvalidConfigurationError: Invalid value soon for configuration retention.ms: "
            "Not a number of type LONG": {"retention.ms": "soon"},
            "[Error 40] InvalidConfigurationError: Invalid value 3000000000 for configuration segment.bytes: "
            "Not a number of type INT": {"segment.bytes": "3000000000"},
            "[Error 40] InvalidConfigurationError: Invalid value maybe for configuration preallocate: "
            "Expected value to be either true or false": {"preallocate": "maybe"},
            "[Error 40] InvalidConfigurationError: Invalid value -5 for configuration retention.ms: "
            "Value must be at least -1": {"retention.ms": "-5"},
            "[Error 40] InvalidConfigurationError: Unknown topic config name: no.such.config": {"no.such.config": "1"},
            "[Error 40] InvalidConfigurationError: Can't APPEND to key retention.ms because its type is not LIST.":
                {"retention.ms": (APPEND, "5")},
        }
        for message, configs in refusals.items():
            assert _alter(admin, "TOPIC", "ops", configs, incremental=True) == message, configs
            assert _alter(admin, "TOPIC", "ops", configs, incremental=True, validate_only=True) == message, configs
        assert _alter(admin, "TOPIC", "ops", {"retention.ms": "soon"}, incremental=False) == (
            "[Error 40] InvalidConfigurationError: Invalid value soon for configuration retention.ms: "
            "Not a number of type LONG")
        # An unknown topic: the controller validates the configs before it looks the topic up.
        assert _alter(admin, "TOPIC", "gone", {"retention.ms": "5"}, incremental=True) == (
            "[Error 3] UnknownTopicOrPartitionError: The topic 'gone' does not exist.")
        assert _alter(admin, "TOPIC", "gone", {"retention.ms": "5"}, incremental=False) == (
            "[Error 3] UnknownTopicOrPartitionError: The topic 'gone' does not exist.")
        assert _alter(admin, "TOPIC", "gone", {"retention.ms": "soon"}, incremental=True).startswith("[Error 40] ")

        # What kafka-python's dicts cannot express, in its own request class: checks of the
        # broker's ConfigAdminManager.preprocess, before anything reaches the controller.
        def raw(resources: list) -> list[tuple[str, int, str | None]]:
            resp = _raw(admin, IncrementalAlterConfigsRequest(resources=resources, validate_only=False))
            return [(r.resource_name, r.error_code, r.error_message) for r in resp.responses]

        assert raw([(TOPIC, "ops", [("retention.ms", 0, "1")]), (TOPIC, "ops", [("retention.ms", 0, "2")])]) == [
            ("ops", 42, "Each resource must appear at most once."),
            ("ops", 42, "Each resource must appear at most once.")]
        assert raw([(TOPIC, "ops", [("retention.ms", 0, "1"), ("retention.ms", 1, None)])]) == [
            ("ops", 42, "Error due to duplicate config keys")]
        assert raw([(TOPIC, "ops", [("retention.ms", 0, None), ("segment.ms", 2, None), ("flush.ms", 1, None)])]) \
            == [("ops", 42, "Null value not supported for : retention.ms, segment.ms")]
        assert overrides() == {"cleanup.policy": ""}
    finally:
        admin.close()


# ---------------------------------------------------------------------------- effects

def test_legacy_alter_of_retention_ms_deletes_old_segments_and_describe_log_dirs_sees_them_go(broker_factory):
    b = broker_factory(log_level="DEBUG", **FAST_RETENTION)
    admin = _admin(b)
    producer = _producer(b)
    try:
        _create(admin, "old", configs={"segment.bytes": "1500"})
        _create(admin, "bystander")
        offsets = [_send(producer, "old", b"%02d" % i + b"r" * 400, timestamp_ms=OLD_TIMESTAMP_MS) for i in range(12)]
        assert offsets == list(range(12))
        assert _send(producer, "bystander", b"stays", timestamp_ms=OLD_TIMESTAMP_MS) == 0
        segments = segment_base_offsets(b.data_dir, "old", 0)
        assert len(segments) >= 3, segments
        sizes = _partition_sizes(admin)
        assert sizes[("old", 0)] > 12 * 400 and sizes[("bystander", 0)] > 0, sizes

        assert _alter(admin, "TOPIC", "old", {"retention.ms": "1800000"}, incremental=False) == "OK"
        assert wait_until(lambda: _offsets(b, "old"), lambda o: o[0] == 12) == (12, 12)
        # The log start moves just before the segments are renamed .deleted (UnifiedLog
        # order), and retention runs on the broker's background thread: wait for the files.
        assert wait_until(lambda: segment_base_offsets(b.data_dir, "old", 0), lambda s: s == [12]) == [12]
        b.wait_for_retention_pass()  # a whole pass since: the bystander's 7-day default keeps it
        assert _partition_sizes(admin) == {("old", 0): 0, ("bystander", 0): sizes[("bystander", 0)]}
        assert _offsets(b, "bystander") == (0, 1)

        # Every topic of the dir is listed, with only the partitions asked for (so
        # "bystander" with none): ReplicaManager.describeLogDirs groups the dir's logs by
        # topic, then filters partitions.
        [answer] = admin.describe_log_dirs(topic_partitions={"old": [0], "nope": [0]})
        [log_dir] = answer["log_dirs"]
        assert (answer["broker"], log_dir["error_code"], log_dir["log_dir"]) == (1, 0, str(b.data_dir))
        assert sorted((t["name"], [(p["partition_index"], p["partition_size"], p["offset_lag"], p["is_future_key"])
                                   for p in t["partitions"]]) for t in log_dir["topics"]) == [
            ("bystander", []), ("old", [(0, 0, 0, False)])]
        assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
        assert "Traceback" not in b.log_text()
    finally:
        producer.close(timeout=5)
        admin.close()


def test_create_partitions_and_delete_records_move_the_topic_as_kafka_does(broker):
    admin = _admin(broker)
    producer = _producer(broker)
    try:
        _create(admin, "parts", partitions=1)
        assert admin.create_partitions({"parts": NewPartitions(3)}, validate_only=True).results[0].error_code == 0
        assert admin.describe_topics(["parts"])[0]["partitions"].__len__() == 1
        assert admin.create_partitions({"parts": NewPartitions(3)}).results[0].error_code == 0
        assert [p["partition_index"] for p in admin.describe_topics(["parts"])[0]["partitions"]] == [0, 1, 2]
        answer = admin.create_partitions({"parts": NewPartitions(2), "nope": NewPartitions(2)}, raise_errors=False)
        assert [(r.name, r.error_code, r.error_message) for r in answer.results] == [
            ("parts", 37, "The topic parts currently has 3 partition(s); 2 would not be an increase."),
            ("nope", 3, None)]
        with pytest.raises(InvalidPartitionsError, match="Topic already has 3 partition"):
            admin.create_partitions({"parts": NewPartitions(3)})

        assert [_send(producer, "parts", b"n%d" % i, partition=2) for i in range(8)] == list(range(8))
        assert admin.delete_records({TopicPartition("parts", 2): 5}) == {
            TopicPartition("parts", 2): {"partition_index": 2, "low_watermark": 5, "error_code": 0}}
        assert _offsets(broker, "parts", 2) == (5, 8)

        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, auto_offset_reset="none",
                                 request_timeout_ms=10_000)
        try:
            tp = TopicPartition("parts", 2)
            consumer.assign([tp])
            consumer.seek(tp, 3)
            with pytest.raises(OffsetOutOfRangeError):
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    consumer.poll(timeout_ms=200)
            consumer.seek(tp, 5)
            got: list = []
            deadline = time.monotonic() + 10
            while len(got) < 3 and time.monotonic() < deadline:
                got += consumer.poll(timeout_ms=200).get(tp, [])
            assert [(r.offset, r.value) for r in got] == [(5, b"n5"), (6, b"n6"), (7, b"n7")]
        finally:
            consumer.close()

        with pytest.raises(OffsetOutOfRangeError):
            admin.delete_records({TopicPartition("parts", 2): 9})
        # Sent straight to broker 1 (kafka-python otherwise refuses an unknown partition itself).
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_records({TopicPartition("parts", 7): 1}, partition_leader_id=1)
        assert admin.delete_records({TopicPartition("parts", 2): -1})[TopicPartition("parts", 2)]["low_watermark"] == 8
        assert _offsets(broker, "parts", 2) == (8, 8)
        # Only a topic whose cleanup.policy includes delete (Partition.deleteRecordsOnLeader).
        _create(admin, "compacted", configs={"cleanup.policy": "compact"})
        with pytest.raises(PolicyViolationError):
            admin.delete_records({TopicPartition("compacted", 0): 0})

        cluster = admin.describe_cluster()
        assert (cluster["controller_id"], [(n["broker_id"], n["host"], n["port"], n["rack"])
                                           for n in cluster["brokers"]]) == (1, [(1, "127.0.0.1", broker.port, None)])
    finally:
        producer.close(timeout=5)
        admin.close()


# ---------------------------------------------------------------------------- broker configs

def test_cluster_default_and_per_broker_configs_stack_as_in_kafka_take_effect_and_survive_a_restart(broker_factory):
    b = broker_factory(log_level="DEBUG", **FAST_RETENTION)
    admin = _admin(b)
    producer = _producer(b)
    try:
        _create(admin, "follows", configs={"segment.bytes": "8000"})
        _create(admin, "pinned", configs={"retention.ms": str(DEFAULT_RETENTION_MS)})
        for topic in ("follows", "pinned"):
            assert [_send(producer, topic, b"%d" % i + b"q" * 500, timestamp_ms=OLD_TIMESTAMP_MS)
                    for i in range(6)] == list(range(6))

        # The cluster default lowers retention of every topic without its own retention.ms.
        assert _set_cluster_defaults(admin, [("log.retention.ms", 0, "1800000"),
                                             ("message.max.bytes", 0, "200000")]) == (0, None)
        assert wait_until(lambda: _offsets(b, "follows"), lambda o: o[0] == 6) == (6, 6)
        b.wait_for_retention_pass()  # a whole pass under the new default: pinned keeps its own
        assert _offsets(b, "pinned") == (0, 6)
        # The per-broker level beats it.
        assert _alter(admin, "BROKER", "1", {"message.max.bytes": "3000"}, incremental=True) == "OK"
        created = _create(admin, "later")
        assert {n: v for n, v in created.items() if v[1] != "DEFAULT_CONFIG"} == {
            "retention.ms": ("1800000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
            "max.message.bytes": ("3000", "DYNAMIC_BROKER_CONFIG"),
            "file.delete.delay.ms": ("0", "STATIC_BROKER_CONFIG")}
        assert _send(producer, "follows", b"x" * 5000) == "MessageSizeTooLargeError"

        # Refused on the broker (ConfigAdminManager.preprocess), each INVALID_REQUEST.
        assert _set_cluster_defaults(admin, [("num.partitions", 0, "3")]) == (
            42, "Cannot update these configs dynamically: Set(num.partitions)")
        assert _set_cluster_defaults(admin, [("message.max.bytes", 2, "5")]) == (
            42, "Config value append is not allowed for config key: message.max.bytes")

        def check() -> None:
            follows = _describe(admin, "TOPIC", "follows")
            assert (_entry(follows["retention.ms"]), _chain(follows["retention.ms"])) == (
                ("1800000", "DYNAMIC_DEFAULT_BROKER_CONFIG", False),
                [("log.retention.ms", "1800000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
                 ("log.retention.hours", "168", "DEFAULT_CONFIG")])
            assert (_entry(follows["max.message.bytes"]), _chain(follows["max.message.bytes"])) == (
                ("3000", "DYNAMIC_BROKER_CONFIG", False),
                [("message.max.bytes", "3000", "DYNAMIC_BROKER_CONFIG"),
                 ("message.max.bytes", "200000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
                 ("message.max.bytes", str(DEFAULT_MAX_MESSAGE_BYTES), "DEFAULT_CONFIG")])
            assert _entry(follows["segment.bytes"]) == ("8000", "DYNAMIC_TOPIC_CONFIG", False)
            pinned = _describe(admin, "TOPIC", "pinned")
            assert _chain(pinned["retention.ms"]) == [
                ("retention.ms", str(DEFAULT_RETENTION_MS), "DYNAMIC_TOPIC_CONFIG"),
                ("log.retention.ms", "1800000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
                ("log.retention.hours", "168", "DEFAULT_CONFIG")]
            broker_configs = _describe(admin, "BROKER", "1")
            assert {n: _entry(broker_configs[n]) for n in ("log.retention.ms", "message.max.bytes",
                                                           "log.retention.check.interval.ms")} == {
                "log.retention.ms": ("1800000", "DYNAMIC_DEFAULT_BROKER_CONFIG", False),
                "message.max.bytes": ("3000", "DYNAMIC_BROKER_CONFIG", False),
                "log.retention.check.interval.ms": ("200", "STATIC_BROKER_CONFIG", True)}
            # The cluster-default resource lists its own values only, each with only its
            # DYNAMIC_DEFAULT_BROKER_CONFIG synonym (createBrokerConfigEntry(perBrokerConfig=false)).
            resp = _raw(admin, DescribeConfigsRequest(resources=[(BROKER, "", None)], include_synonyms=True))
            [r] = resp.results
            assert (r.error_code, [(c.name, c.value, c.config_source, c.read_only,
                                    [(s.name, s.value, s.source) for s in c.synonyms]) for c in r.configs]) == (0, [
                ("log.retention.ms", "1800000", DYNAMIC_DEFAULT_BROKER_CONFIG, False,
                 [("log.retention.ms", "1800000", DYNAMIC_DEFAULT_BROKER_CONFIG)]),
                ("message.max.bytes", "200000", DYNAMIC_DEFAULT_BROKER_CONFIG, False,
                 [("message.max.bytes", "200000", DYNAMIC_DEFAULT_BROKER_CONFIG)])])

        check()
        producer.close(timeout=5)
        b.restart()
        admin.close()
        admin = _admin(b)
        producer = _producer(b)
        check()
        assert _send(producer, "follows", b"x" * 5000) == "MessageSizeTooLargeError"
        assert _send(producer, "follows", b"x" * 2000) == 6

        # Removing the per-broker value leaves the cluster default in force.
        assert _alter(admin, "BROKER", "1", {"message.max.bytes": (DELETE, None)}, incremental=True) == "OK"
        assert _send(producer, "follows", b"x" * 5000) == 7
        assert _set_cluster_defaults(admin, [("log.retention.ms", 1, None), ("message.max.bytes", 1, None)]) \
            == (0, None)
        assert _entry(_describe(admin, "TOPIC", "follows")["retention.ms"]) == (
            str(DEFAULT_RETENTION_MS), "DEFAULT_CONFIG", False)
        assert "Traceback" not in b.log_text()
    finally:
        producer.close(timeout=5)
        admin.close()
