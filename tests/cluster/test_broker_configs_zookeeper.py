"""Dynamic broker configs in a real three-broker cluster over a real ZooKeeper: a cluster-wide
default set on one broker reaches every broker through
/config/brokers/<default> and its /config/changes notification, takes effect there (a produce
over the new message.max.bytes refused by a partition led elsewhere), a per-broker value
overrides it on that broker only, the znodes hold Kafka's JSON, and a broker restarted after a
change made while it was down reads it from ZooKeeper at start-up."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)

from kbroker.interbroker.broker_channel import send_once
from tests.cluster.test_cluster_processes import create_topic
from tests.support.cluster_processes import Cluster, wait_until
from wire.messages import IncrementalAlterConfigsRequest

pytestmark = pytest.mark.timeout(600)

BIG = 3000  # bytes of value: over the 2000 default set below, under 5000 and 1 MB


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("broker-configs"), zookeeper).start()
    yield c
    c.stop()


def _set(cluster: Cluster, via: int, resource_name: str, **configs: str) -> None:
    """IncrementalAlterConfigs SET on a BROKER resource, to broker ``via``.

    The cluster default (resource name "") goes as the raw request (v1, what Kafka's Java
    AdminClient sends for ``kafka-configs --entity-default``): librdkafka refuses a BROKER
    ConfigResource with an empty name before sending anything.  A broker id goes through
    confluent-kafka, which sends it to that broker."""
    if resource_name == "":
        R = IncrementalAlterConfigsRequest
        req = R(resources=[R.AlterConfigsResource(resource_type=4, resource_name="", configs=[
            R.AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v)
            for k, v in configs.items()])], validate_only=False)
        b = cluster.brokers[via]
        resp = asyncio.run(send_once("127.0.0.1", b.port, req, 1, "broker-configs-test", timeout_s=60))
        assert [(r.error_code, r.error_message) for r in resp.responses] == [(0, None)]
        return
    entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
               for k, v in configs.items()]
    resource = ConfigResource(ConfigResource.Type.BROKER, resource_name, incremental_configs=entries)
    client = AdminClient({"bootstrap.servers": cluster.brokers[via].bootstrap})
    for f in client.incremental_alter_configs([resource], request_timeout=60).values():
        f.result(60)


def _described(cluster: Cluster, broker_id: int, name: str) -> tuple[str, ConfigSource]:
    """(value, source) of a config as broker ``broker_id`` describes itself."""
    client = AdminClient({"bootstrap.servers": cluster.brokers[broker_id].bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
    (cfg,) = [f.result(30) for f in client.describe_configs([resource], request_timeout=30).values()]
    entry = cfg[name]
    return entry.value, ConfigSource(entry.source)


def _produce(cluster: Cluster, topic: str, size: int) -> int:
    """Produce one ``size``-byte value; the delivery's error code (0 = stored)."""
    outcome: list[int] = []
    p = Producer({"bootstrap.servers": cluster.bootstrap, "message.max.bytes": 1_000_000,
                  "retries": 0, "acks": "all"})
    p.produce(topic, b"v" * size, partition=0,
              on_delivery=lambda err, _msg: outcome.append(0 if err is None else err.code()))
    assert p.flush(60) == 0
    return outcome[0]


def _notified(cluster: Cluster, entity_path: str) -> bool:
    notes = cluster.admin.get_children("/config/changes")
    want = b'{"version":2,"entity_path":"%s"}' % entity_path.encode()
    return any(cluster.admin.get(f"/config/changes/{n}")[0] == want for n in notes)


def test_a_cluster_default_reaches_every_broker_and_a_per_broker_value_overrides_it_only_there(cluster):
    create_topic(cluster, "led-by-3", 1, assignment=[[3]])
    create_topic(cluster, "led-by-2", 1, assignment=[[2]])
    assert _produce(cluster, "led-by-3", BIG) == 0  # Kafka's default 1048588 admits it

    _set(cluster, 1, "", message_max_bytes="2000")
    data, _ = cluster.admin.get("/config/brokers/<default>")
    assert data == b'{"version":1,"config":{"message.max.bytes":"2000"}}'
    assert _notified(cluster, "brokers/<default>")
    for broker_id in (1, 2, 3):
        wait_until(lambda b=broker_id: _described(cluster, b, "message.max.bytes") == (
            "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG), f"broker {broker_id} to apply the default")
    assert _produce(cluster, "led-by-3", BIG) == KafkaError.MSG_SIZE_TOO_LARGE
    assert _produce(cluster, "led-by-2", BIG) == KafkaError.MSG_SIZE_TOO_LARGE

    _set(cluster, 2, "2", message_max_bytes="5000")
    data, _ = cluster.admin.get("/config/brokers/2")
    assert data == b'{"version":1,"config":{"message.max.bytes":"5000"}}'
    assert _notified(cluster, "brokers/2")
    assert _described(cluster, 2, "message.max.bytes") == ("5000", ConfigSource.DYNAMIC_BROKER_CONFIG)
    # A later default change: once broker 3 shows it, it has processed the brokers/2
    # notification before it (they are applied in sequence order) and must have ignored it.
    _set(cluster, 1, "", log_retention_ms="3600000")
    data, _ = cluster.admin.get("/config/brokers/<default>")
    # the order of Kafka's java.util.Properties (HashMap buckets), cluster/znodes.py
    assert data == b'{"version":1,"config":{"message.max.bytes":"2000","log.retention.ms":"3600000"}}'
    wait_until(lambda: _described(cluster, 3, "log.retention.ms") == (
        "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG), "broker 3 to apply the second default")
    assert _described(cluster, 3, "message.max.bytes") == ("2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert _produce(cluster, "led-by-2", BIG) == 0
    assert _produce(cluster, "led-by-3", BIG) == KafkaError.MSG_SIZE_TOO_LARGE


def test_a_broker_restarted_after_a_change_made_while_it_was_down_reads_it_from_zookeeper(cluster):
    _set(cluster, 1, "", message_max_bytes="2000")
    wait_until(lambda: _described(cluster, 3, "message.max.bytes")[0] == "2000", "broker 3 at 2000")
    cluster.brokers[3].stop()
    wait_until(lambda: 3 not in cluster.registered(), "broker 3 to leave")
    # The notification of this change is older than broker 3's start: it is not replayed,
    # and broker 3's local mirror still says 2000; only ZooKeeper's entity has 4000.
    _set(cluster, 1, "", message_max_bytes="4000")
    cluster.brokers[3].start(timeout_s=60)
    wait_until(lambda: 3 in cluster.registered(), "broker 3 to register again")
    cluster.wait_serving()
    assert _described(cluster, 3, "message.max.bytes") == ("4000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    wait_until(lambda: "led-by-3" in (leaders := _leaders(cluster)) and leaders["led-by-3"] == 3,
               "broker 3 to lead led-by-3 again")
    assert _produce(cluster, "led-by-3", BIG) == 0
    assert _produce(cluster, "led-by-3", 4500) == KafkaError.MSG_SIZE_TOO_LARGE


def _leaders(cluster: Cluster) -> dict[str, int]:
    md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=30)
    return {t: m.partitions[0].leader for t, m in md.topics.items() if 0 in m.partitions}
