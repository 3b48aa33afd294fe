"""aiokafka 0.14 admin API against a real broker process, on the old versions it speaks
(DescribeConfigs v2, AlterConfigs v1, CreatePartitions v1, DeleteRecords): topic configs
described with sources and synonyms, AlterConfigs replacing a topic's overrides (aiokafka
sends exactly what it is given, no read-modify-write) and the change taking effect on
produce and retention, CreatePartitions, DeleteRecords, DescribeCluster, and topic and
dynamic broker configs surviving a kill -9.

aiokafka has no IncrementalAlterConfigs and no DescribeLogDirs (test_admin_confluent.py and
test_admin_kafka_python.py cover them); its admin refuses a BROKER resource whose name is
not an integer, so the cluster-wide default (resource "") and validate_only are sent as
aiokafka's own AlterConfigsRequest through the admin client.
"""

from __future__ import annotations

import asyncio
import time

import aiokafka.errors as Errors
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.protocol.admin import AlterConfigsRequest

from tests.support.admin_helpers import (
    DEFAULT_CONFIG,
    DEFAULT_MAX_MESSAGE_BYTES,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    FAST_RETENTION,
    OLD_TIMESTAMP_MS,
    STATIC_BROKER_CONFIG,
    TOPIC_CONFIG,
    TOPIC_CONFIG_NAMES,
    segment_base_offsets,
    wait_until,
)

pytestmark = pytest.mark.timeout(90)

TOPIC_RES, BROKER_RES = ConfigResourceType.TOPIC, ConfigResourceType.BROKER


def run(coro, timeout_s: float = 80.0):
    return asyncio.run(asyncio.wait_for(coro, timeout_s))


async def _admin(broker) -> AIOKafkaAdminClient:
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    await admin.start()
    return admin


async def _create(admin: AIOKafkaAdminClient, name: str, partitions: int = 1,
                  configs: dict[str, str] | None = None) -> None:
    resp = await admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs or {})])
    assert [(t[0], t[1]) for t in resp.topic_errors] == [(name, 0)]


async def _describe(admin: AIOKafkaAdminClient, restype: ConfigResourceType, name: str,
                    keys: list[str] | None = None) -> tuple[int, dict[str, tuple]]:
    """(error_code, {name: (value, read_only, source, [(synonym, value, source), ...])})."""
    [resp] = await admin.describe_configs(
        [ConfigResource(restype, name, dict.fromkeys(keys) if keys else None)], include_synonyms=True)
    [(error_code, _message, _type, resource_name, entries)] = resp.resources
    assert resource_name == name
    return error_code, {e[0]: (e[1], e[2], e[3], [tuple(s) for s in e[5]]) for e in entries}


async def _alter(admin: AIOKafkaAdminClient, restype: ConfigResourceType, name: str,
                 configs: dict[str, str]) -> tuple[int, str | None]:
    # aiokafka sends one request for the topic resources (empty here when altering a
    # broker) and one per broker resource; one of the answers carries ours.
    responses = await admin.alter_configs([ConfigResource(restype, name, configs)])
    [(error_code, message, _type, _name)] = [r for resp in responses for r in resp.resources]
    return error_code, message


async def _alter_raw(admin: AIOKafkaAdminClient, restype: int, name: str, configs: dict[str, str],
                     validate_only: bool = False) -> tuple[int, str | None]:
    resp = await admin._send_request(AlterConfigsRequest(
        resources=[(restype, name, list(configs.items()))], validate_only=validate_only))
    [(error_code, message, _type, _name)] = resp.resources
    return error_code, message


async def _send(producer: AIOKafkaProducer, topic: str, value: bytes, partition: int = 0,
                timestamp_ms: int | None = None) -> int | str:
    """The offset the record got, or the name of the error it failed with."""
    try:
        meta = await producer.send_and_wait(topic, value, partition=partition, timestamp_ms=timestamp_ms)
        return meta.offset
    except Errors.MessageSizeTooLargeError as e:
        return type(e).__name__


async def _producer(broker) -> AIOKafkaProducer:
    p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=0, request_timeout_ms=10_000)
    await p.start()
    return p


async def _offsets(broker, topic: str, partition: int = 0) -> tuple[int, int]:
    c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, request_timeout_ms=10_000)
    await c.start()
    try:
        tp = TopicPartition(topic, partition)
        return (await c.beginning_offsets([tp]))[tp], (await c.end_offsets([tp]))[tp]
    finally:
        await c.stop()


async def _wait_for_offsets(broker, topic: str, want: tuple[int, int], timeout_s: float = 60.0) -> tuple[int, int]:
    deadline = time.monotonic() + timeout_s
    got = await _offsets(broker, topic)
    while got != want and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        got = await _offsets(broker, topic)
    return got


# ---------------------------------------------------------------------------- describe

def test_aiokafka_describes_every_config_of_a_new_topic_with_its_source_and_synonyms(broker):
    async def scenario():
        admin = await _admin(broker)
        try:
            await _create(admin, "desc", configs={"retention.ms": "86400000", "compression.type": "zstd"})
            return (await _describe(admin, TOPIC_RES, "desc"),
                    await _describe(admin, TOPIC_RES, "desc", keys=["compression.type", "segment.bytes"]),
                    await _describe(admin, TOPIC_RES, "missing"))
        finally:
            await admin.close()

    (code, configs), (_, picked), missing = run(scenario())
    assert code == 0 and set(configs) == TOPIC_CONFIG_NAMES
    assert configs["retention.ms"] == ("86400000", False, TOPIC_CONFIG, [("retention.ms", "86400000", TOPIC_CONFIG)])
    assert configs["compression.type"] == ("zstd", False, TOPIC_CONFIG, [
        ("compression.type", "zstd", TOPIC_CONFIG), ("compression.type", "producer", DEFAULT_CONFIG)])
    assert configs["max.message.bytes"] == (str(DEFAULT_MAX_MESSAGE_BYTES), False, DEFAULT_CONFIG, [
        ("message.max.bytes", str(DEFAULT_MAX_MESSAGE_BYTES), DEFAULT_CONFIG)])
    assert {n for n, c in configs.items() if c[2] == DEFAULT_CONFIG} == TOPIC_CONFIG_NAMES - {
        "retention.ms", "compression.type"}
    assert picked == {n: configs[n] for n in ("compression.type", "segment.bytes")}
    assert missing == (3, {})  # UNKNOWN_TOPIC_OR_PARTITION


# ---------------------------------------------------------------------------- alter, effect

def test_aiokafka_alter_configs_replaces_a_topics_overrides_and_each_change_takes_effect(broker_factory):
    b = broker_factory(log_level="DEBUG", **FAST_RETENTION)

    async def scenario():
        admin = await _admin(b)
        producer = await _producer(b)
        out: dict[str, object] = {}
        try:
            await _create(admin, "eff", configs={"segment.bytes": "1200"})
            out["old"] = [await _send(producer, "eff", b"%02d" % i + b"w" * 300, timestamp_ms=OLD_TIMESTAMP_MS)
                          for i in range(10)]
            out["segments_before"] = segment_base_offsets(b.data_dir, "eff", 0)

            out["lower_limit"] = await _alter(admin, TOPIC_RES, "eff", {"segment.bytes": "1200",
                                                                         "max.message.bytes": "600"})
            out["too_big"] = await _send(producer, "eff", b"b" * 1000)
            out["fits"] = await _send(producer, "eff", b"s" * 100, timestamp_ms=OLD_TIMESTAMP_MS)

            # validate_only answers but changes nothing.
            out["dry"] = await _alter_raw(admin, 2, "eff", {"retention.ms": "1800000"}, validate_only=True)
            await asyncio.to_thread(b.wait_for_retention_pass)  # one began after the dry run
            out["after_dry"] = await _offsets(b, "eff")

            # AlterConfigs replaces the set: retention.ms in, max.message.bytes out.
            out["lower_retention"] = await _alter(admin, TOPIC_RES, "eff", {"segment.bytes": "1200",
                                                                             "retention.ms": "1800000"})
            out["after_retention"] = await _wait_for_offsets(b, "eff", (11, 11))
            # The log start moves just before the old segments are renamed .deleted.
            out["segments_after"] = await asyncio.to_thread(
                wait_until, lambda: segment_base_offsets(b.data_dir, "eff", 0), lambda s: s == [11])
            out["big_again"] = await _send(producer, "eff", b"b" * 1000)
            out["described"] = (await _describe(admin, TOPIC_RES, "eff"))[1]

            # An empty set deletes every override.
            out["cleared"] = await _alter(admin, TOPIC_RES, "eff", {})
            out["overrides_left"] = {n for n, c in (await _describe(admin, TOPIC_RES, "eff"))[1].items()
                                     if c[2] == TOPIC_CONFIG}

            out["bad_value"] = await _alter(admin, TOPIC_RES, "eff", {"retention.ms": "forever"})
            out["bad_name"] = await _alter(admin, TOPIC_RES, "eff", {"retention.mss": "1"})
            out["bad_policy"] = await _alter(admin, TOPIC_RES, "eff", {"cleanup.policy": "delete,shred"})
            out["no_topic"] = await _alter(admin, TOPIC_RES, "ghost", {"retention.ms": "1"})
        finally:
            await producer.stop()
            await admin.close()
        return out

    out = run(scenario())
    assert out["old"] == list(range(10))
    assert len(out["segments_before"]) >= 3 and out["segments_before"][0] == 0, out["segments_before"]
    assert out["lower_limit"] == (0, None)
    assert (out["too_big"], out["fits"]) == ("MessageSizeTooLargeError", 10)
    assert (out["dry"], out["after_dry"]) == ((0, None), (0, 11))
    assert out["lower_retention"] == (0, None)
    assert (out["after_retention"], out["segments_after"]) == ((11, 11), [11])
    assert out["big_again"] == 11
    described = out["described"]
    assert {n: c[:3] for n, c in described.items() if c[2] != DEFAULT_CONFIG} == {
        "segment.bytes": ("1200", False, TOPIC_CONFIG), "retention.ms": ("1800000", False, TOPIC_CONFIG),
        "file.delete.delay.ms": ("0", False, STATIC_BROKER_CONFIG)}  # log.segment.delete.delay.ms=0
    assert described["max.message.bytes"][:3] == (str(DEFAULT_MAX_MESSAGE_BYTES), False, DEFAULT_CONFIG)
    assert (out["cleared"], out["overrides_left"]) == ((0, None), set())
    assert out["bad_value"] == (40, "Invalid value forever for configuration retention.ms: Not a number of type LONG")
    assert out["bad_name"] == (40, "Unknown topic config name: retention.mss")
    assert out["bad_policy"][0] == 40
    assert out["no_topic"] == (3, "The topic 'ghost' does not exist.")
    assert "Traceback" not in b.log_text()


# ---------------------------------------------------------------------------- partitions, records

def test_aiokafka_create_partitions_and_delete_records_and_describe_cluster(broker):
    async def scenario():
        admin = await _admin(broker)
        producer = await _producer(broker)
        out: dict[str, object] = {}
        try:
            await _create(admin, "pr", partitions=2)
            resp = await admin.create_partitions({"pr": NewPartitions(5)}, validate_only=True)
            out["dry"] = [tuple(t) for t in resp.topic_errors]
            out["after_dry"] = len((await admin.describe_topics(["pr"]))[0]["partitions"])
            resp = await admin.create_partitions({"pr": NewPartitions(3)})
            out["grown"] = [tuple(t) for t in resp.topic_errors]
            for count in (3, 2):
                try:
                    await admin.create_partitions({"pr": NewPartitions(count)})
                    out[f"to_{count}"] = "no error"
                except Errors.InvalidPartitionsError as e:
                    out[f"to_{count}"] = str(e)

            out["produced"] = [await _send(producer, "pr", b"r%d" % i, partition=2) for i in range(6)]
            out["deleted"] = await admin.delete_records({TopicPartition("pr", 2): RecordsToDelete(4)})
            out["offsets"] = await _offsets(broker, "pr", 2)
            try:
                await admin.delete_records({TopicPartition("pr", 2): RecordsToDelete(7)})
                out["beyond"] = "no error"
            except Errors.OffsetOutOfRangeError as e:
                out["beyond"] = type(e).__name__

            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None,
                                        auto_offset_reset="none", request_timeout_ms=10_000)
            await consumer.start()
            try:
                tp = TopicPartition("pr", 2)
                consumer.assign([tp])
                consumer.seek(tp, 1)
                try:
                    await asyncio.wait_for(consumer.getone(), 10)
                    out["below"] = "no error"
                except Errors.OffsetOutOfRangeError as e:
                    out["below"] = type(e).__name__
                consumer.seek(tp, 4)
                out["from_start"] = [(m.offset, m.value) for m in
                                     [await asyncio.wait_for(consumer.getone(), 10) for _ in range(2)]]
            finally:
                await consumer.stop()
            out["cluster"] = await admin.describe_cluster()
        finally:
            await producer.stop()
            await admin.close()
        return out

    out = run(scenario())
    assert out["dry"] == [("pr", 0, None)] and out["after_dry"] == 2
    assert out["grown"] == [("pr", 0, None)]
    assert out["to_3"] == "[Error 37] InvalidPartitionsError: Could not create partitions for pr: " \
                          "Topic already has 3 partition(s)."
    assert out["to_2"] == "[Error 37] InvalidPartitionsError: Could not create partitions for pr: " \
                          "The topic pr currently has 3 partition(s); 2 would not be an increase."
    assert out["produced"] == list(range(6))
    assert (out["deleted"], out["offsets"]) == ({TopicPartition("pr", 2): 4}, (4, 6))
    assert (out["beyond"], out["below"]) == ("OffsetOutOfRangeError", "OffsetOutOfRangeError")
    assert out["from_start"] == [(4, b"r4"), (5, b"r5")]
    cluster = out["cluster"]
    assert (cluster["controller_id"], cluster["brokers"]) == (
        1, [{"node_id": 1, "host": "127.0.0.1", "port": broker.port, "rack": None}])
    assert isinstance(cluster["cluster_id"], str) and len(cluster["cluster_id"]) == 22


# ---------------------------------------------------------------------------- broker configs

def test_topic_and_dynamic_broker_configs_set_through_aiokafka_survive_a_kill_9(broker_factory):
    b = broker_factory(**{"log.segment.bytes": "5000000"})

    async def configure():
        admin = await _admin(b)
        try:
            await _create(admin, "kept", configs={"max.message.bytes": "700", "cleanup.policy": "delete"})
            await _create(admin, "inherits")
            return (await _alter_raw(admin, 4, "", {"log.retention.ms": "5400000", "message.max.bytes": "900"}),
                    await _alter(admin, BROKER_RES, "1", {"message.max.bytes": "800"}),
                    await _alter(admin, BROKER_RES, "1", {"log.dirs": "/elsewhere"}))
        finally:
            await admin.close()

    async def observe():
        admin = await _admin(b)
        producer = await _producer(b)
        try:
            topic = (await _describe(admin, TOPIC_RES, "inherits", ["max.message.bytes", "retention.ms",
                                                                     "segment.bytes"]))[1]
            kept = (await _describe(admin, TOPIC_RES, "kept", ["max.message.bytes", "cleanup.policy"]))[1]
            broker_configs = (await _describe(admin, BROKER_RES, "1", ["message.max.bytes", "log.retention.ms",
                                                                        "log.segment.bytes"]))[1]
            sends = (await _send(producer, "inherits", b"i" * 850), await _send(producer, "kept", b"k" * 750))
            return topic, kept, broker_configs, sends
        finally:
            await producer.stop()
            await admin.close()

    assert run(configure()) == ((0, None), (0, None), (42, "Cannot update these configs dynamically: Set(log.dirs)"))
    before = run(observe())
    b.restart(clean=False)  # kill -9: the JSON files were already replaced atomically
    after = run(observe())

    topic, kept, broker_configs, sends = before
    assert topic == {
        "max.message.bytes": ("800", False, DYNAMIC_BROKER_CONFIG, [
            ("message.max.bytes", "800", DYNAMIC_BROKER_CONFIG),
            ("message.max.bytes", "900", DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("message.max.bytes", str(DEFAULT_MAX_MESSAGE_BYTES), DEFAULT_CONFIG)]),
        "retention.ms": ("5400000", False, DYNAMIC_DEFAULT_BROKER_CONFIG, [
            ("log.retention.ms", "5400000", DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("log.retention.hours", "168", DEFAULT_CONFIG)]),
        "segment.bytes": ("5000000", False, STATIC_BROKER_CONFIG, [
            ("log.segment.bytes", "5000000", STATIC_BROKER_CONFIG),
            ("log.segment.bytes", "1073741824", DEFAULT_CONFIG)])}
    assert kept == {
        "max.message.bytes": ("700", False, TOPIC_CONFIG, [
            ("max.message.bytes", "700", TOPIC_CONFIG),
            ("message.max.bytes", "800", DYNAMIC_BROKER_CONFIG),
            ("message.max.bytes", "900", DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("message.max.bytes", str(DEFAULT_MAX_MESSAGE_BYTES), DEFAULT_CONFIG)]),
        "cleanup.policy": ("delete", False, TOPIC_CONFIG, [
            ("cleanup.policy", "delete", TOPIC_CONFIG), ("log.cleanup.policy", "delete", DEFAULT_CONFIG)])}
    assert {n: c[:3] for n, c in broker_configs.items()} == {
        "message.max.bytes": ("800", False, DYNAMIC_BROKER_CONFIG),
        "log.retention.ms": ("5400000", False, DYNAMIC_DEFAULT_BROKER_CONFIG),
        "log.segment.bytes": ("5000000", False, STATIC_BROKER_CONFIG)}
    assert sends == ("MessageSizeTooLargeError", "MessageSizeTooLargeError")
    assert after == before
