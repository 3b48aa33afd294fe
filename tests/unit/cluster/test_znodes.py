"""cluster.znodes writes the bytes Kafka 3.9.1's ZkData writes, and reads them back."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from cluster import znodes as z
from cluster.jvm_order import java_properties_order, scala_mutable_hashmap_order

VECTORS = dict(
    line.split(" ", 1)
    for line in (Path(__file__).parent / "data" / "kafka_3_9_znodes.txt").read_text().splitlines()
    if line and not line.startswith("#")
)
TOPIC_ID = z.kafka_uuid_decode("vgtz6QvZQ4aiRzI4Ad8Qsg")


def kafka(name: str) -> bytes:
    return VECTORS[name].encode()


def test_controller_znode_is_version_2_with_the_kraft_epoch_as_kafka_3_9_writes_it():
    assert z.encode_controller(2, 1700000000000) == kafka("CONTROLLER")
    assert z.decode_controller(kafka("CONTROLLER")) == 2
    assert z.decode_controller(b'{"version":1,"brokerid":4,"timestamp":"1"}') == 4


def test_controller_epoch_is_decimal_text():
    assert z.encode_controller_epoch(7) == b"7"
    assert z.decode_controller_epoch(b"7") == 7


def test_cluster_id_keeps_its_version_as_a_string():
    assert z.encode_cluster_id("abcDEF123-_xyzAAAAAAAA") == kafka("CLUSTERID")
    assert z.decode_cluster_id(kafka("CLUSTERID")) == "abcDEF123-_xyzAAAAAAAA"


def test_partition_state_orders_keys_as_scalas_immutable_hashmap():
    state = z.PartitionState(leader=1, leader_epoch=5, isr=(1, 2, 3), controller_epoch=7)
    assert z.encode_partition_state(state) == kafka("STATE")
    assert z.decode_partition_state(kafka("STATE")) == state


def test_a_recovering_partition_state_carries_leader_recovery_state():
    state = z.PartitionState(3, 6, (3,), 7, leader_recovery_state=z.LEADER_RECOVERY_RECOVERING)
    assert z.encode_partition_state(state) == kafka("STATE_RECOVERING")
    assert z.decode_partition_state(kafka("STATE_RECOVERING")) == state


@pytest.mark.parametrize("n", [1, 2, 3, 5, 11, 12, 13, 16, 24, 25, 50, 100, 200])
def test_topic_znode_lists_partitions_in_the_order_of_scalas_mutable_hashmap(n):
    parts = {p: (p % 3 + 1, (p + 1) % 3 + 1) for p in range(n)}
    encoded = z.encode_topic(z.TopicAssignment(parts, TOPIC_ID))
    assert encoded == kafka(f"TOPIC_{n}")
    decoded = z.decode_topic(encoded)
    assert decoded.partitions == parts and decoded.topic_id == TOPIC_ID


def test_topic_znode_carries_a_reassignment_in_flight_and_may_lack_a_topic_id():
    t = z.TopicAssignment({0: (1, 2, 3), 1: (2, 3)}, TOPIC_ID, {0: (3,)}, {0: (1,)})
    assert z.encode_topic(t) == kafka("TOPIC_REASSIGN")
    assert z.decode_topic(kafka("TOPIC_REASSIGN")) == t
    no_id = z.TopicAssignment({0: (1, 2, 3), 1: (2, 3)}, None, {0: (3,)}, {0: (1,)})
    assert z.encode_topic(no_id) == kafka("TOPIC_NOID")


def test_topic_znode_of_version_1_decodes_without_reassignment_fields():
    t = z.decode_topic(b'{"version":1,"partitions":{"1":[2],"0":[1]}}')
    assert t.partitions == {0: (1,), 1: (2,)} and t.topic_id is None and t.adding_replicas == {}


def _broker_timestamp(name: str) -> int:
    return int(re.search(r'"timestamp":"(\d+)"', VECTORS[name]).group(1))


def test_broker_registration_is_version_5_in_kafkas_key_order():
    b = z.BrokerRegistration(
        0, (z.EndPoint("PLAINTEXT", "localhost", 9092),), timestamp_ms=_broker_timestamp("BROKER")
    )
    assert z.encode_broker(b) == kafka("BROKER")
    assert z.decode_broker(0, kafka("BROKER")) == b


def test_broker_registration_with_rack_jmx_port_and_two_listeners():
    b = z.BrokerRegistration(
        1,
        (z.EndPoint("PLAINTEXT", "localhost", 9092), z.EndPoint("INTERNAL", "127.0.0.1", 9093)),
        rack="rack-a",
        jmx_port=9999,
        timestamp_ms=_broker_timestamp("BROKER_RACK"),
    )
    assert z.encode_broker(b) == kafka("BROKER_RACK")
    assert z.decode_broker(1, kafka("BROKER_RACK")) == b


def test_broker_registration_lists_supported_features():
    b = z.BrokerRegistration(
        0,
        (z.EndPoint("PLAINTEXT", "localhost", 9092),),
        timestamp_ms=_broker_timestamp("BROKER_FEAT"),
        features={"metadata.version": (1, 21)},
    )
    assert z.encode_broker(b) == kafka("BROKER_FEAT")


@pytest.mark.parametrize("n", range(1, 7))
def test_listener_protocol_map_order_follows_scalas_immutable_map_past_four_entries(n):
    names = ["PLAINTEXT", "INTERNAL", "EXTERNAL", "REPLICATION", "CONTROL", "SSL"][:n]
    eps = tuple(z.EndPoint(name, "h", 9092 + i) for i, name in enumerate(names))
    name = f"BROKER_L{n}"
    b = z.BrokerRegistration(0, eps, timestamp_ms=_broker_timestamp(name))
    assert z.encode_broker(b) == kafka(name)


def test_broker_without_a_plaintext_listener_registers_host_null_and_port_minus_one():
    # The vector is Kafka's encode(version, host=null, port=-1, ...), which encode(BrokerInfo)
    # calls when no endpoint's security protocol is PLAINTEXT; here the listener is SSL.
    b = z.BrokerRegistration(
        0,
        (z.EndPoint("INTERNAL", "h", 9093, "SSL"),),
        rack="r1",
        timestamp_ms=_broker_timestamp("BROKER_NOPLAIN"),
    )
    expected = kafka("BROKER_NOPLAIN").replace(b'"INTERNAL":"PLAINTEXT"', b'"INTERNAL":"SSL"')
    assert z.encode_broker(b) == expected
    assert z.decode_broker(0, expected) == b


def test_version_1_broker_registration_has_a_single_plaintext_endpoint():
    b = z.decode_broker(3, b'{"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"5"}')
    assert b.endpoints == (z.EndPoint("PLAINTEXT", "h", 9092),) and b.timestamp_ms == 5


@pytest.mark.parametrize("name", [k for k in VECTORS if k.startswith("CONFIG_")])
def test_config_znode_orders_properties_as_javas_concurrent_hashmap(name):
    flat = name.removeprefix("CONFIG_").split(",")
    config = dict(zip(flat[0::2], flat[1::2], strict=True))
    assert z.encode_config(config) == kafka(name)
    assert z.decode_config(kafka(name)) == config


def test_empty_or_missing_config_means_no_overrides():
    assert z.encode_config({}) == b'{"version":1,"config":{}}'
    assert z.decode_config(None) == {} and z.decode_config(b"") == {}


def test_config_change_notification_is_version_2_with_an_entity_path():
    assert z.encode_config_change("topics/foo") == kafka("CHANGE")
    assert z.decode_config_change(kafka("CHANGE")) == "topics/foo"
    with pytest.raises(z.ZnodeFormatError):
        z.decode_config_change(b'{"version":1,"entity_type":"topics","entity_name":"foo"}')


def test_admin_and_notification_znodes_match_kafka():
    parts = [("t", 0), ("u", 2)]
    assert z.encode_partition_list(parts) == kafka("PREFERRED") == kafka("ISRCHANGE")
    assert z.decode_partition_list(kafka("PREFERRED")) == parts
    assert z.encode_reassignment([("t", 0, [1, 2])]) == kafka("REASSIGN")
    assert z.decode_reassignment(kafka("REASSIGN")) == {("t", 0): [1, 2]}
    assert z.encode_log_dir_event(3) == kafka("LOGDIREVENT")
    assert z.encode_feature() == kafka("FEATURE")


def test_paths_are_kafkas():
    assert z.partition_state_path("t", 3) == "/brokers/topics/t/partitions/3/state"
    assert z.config_entity_path("brokers", z.DEFAULT_ENTITY) == "/config/brokers/<default>"
    assert z.delete_topic_path("t") == "/admin/delete_topics/t"
    assert z.broker_path(2) == "/brokers/ids/2"
    assert z.CONFIG_CHANGES_PATH + "/" + z.CONFIG_CHANGE_PREFIX == "/config/changes/config_change_"


def test_kafka_uuid_text_is_unpadded_urlsafe_base64_of_the_16_bytes():
    u = uuid.UUID("be0b73e9-0bd9-4386-a247-323801df10b2")
    assert z.kafka_uuid_encode(u) == "vgtz6QvZQ4aiRzI4Ad8Qsg"
    assert z.kafka_uuid_decode("vgtz6QvZQ4aiRzI4Ad8Qsg") == u
    with pytest.raises(z.ZnodeFormatError):
        z.kafka_uuid_decode("short")


def test_malformed_znodes_raise_format_errors_not_crashes():
    for bad in (b"", b"not json", b"[1]", b'{"version":1}'):
        with pytest.raises(z.ZnodeFormatError):
            z.decode_partition_state(bad)
    with pytest.raises(z.ZnodeFormatError):
        z.decode_broker(1, b'{"version":0,"jmx_port":-1}')


def test_control_characters_are_escaped_with_upper_case_hex_as_jackson_does():
    assert z.encode_config({"k": "a\x01\n"}) == b'{"version":1,"config":{"k":"a\\u0001\\n"}}'
    assert json.loads(z.encode_config({"k": "é"})) == {"version": 1, "config": {"k": "é"}}


def test_jvm_orders_are_permutations_of_their_keys():
    keys = [str(i) for i in range(300)]
    assert sorted(scala_mutable_hashmap_order(keys)) == sorted(keys)
    assert sorted(java_properties_order(keys)) == sorted(keys)
