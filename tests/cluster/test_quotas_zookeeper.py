"""Client quotas in a real three-broker cluster over a real ZooKeeper: Kafka's kafka-configs
(4.3.1) sets them through one broker, they land in /config/users/... and /config/clients/...
with Kafka's JSON and a /config/changes notification, every broker describes them, a broker
killed with -9 reads them back, and an entity written to ZooKeeper as the ZooKeeper-era
tool writes it is picked up."""

from __future__ import annotations

import json

import pytest

from tests.support.cluster_processes import Cluster, wait_until
from tests.support.kafka_tools import kafka_configs

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("quotas"), zookeeper).start()
    yield c
    c.stop()


def described(cluster: Cluster, broker_id: int, *entity: str) -> str:
    return kafka_configs(cluster.brokers[broker_id].bootstrap, "--describe", *entity)


def test_client_quotas_live_in_zookeeper_and_reach_every_broker(cluster):
    alice_c1 = ("--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "c1")
    kafka_configs(cluster.brokers[1].bootstrap, "--alter", "--add-config",
                  "producer_byte_rate=1048576,consumer_byte_rate=2097152", *alice_c1)
    kafka_configs(cluster.brokers[1].bootstrap, "--alter", "--add-config", "request_percentage=25",
                  "--entity-type", "clients", "--entity-default")
    data, _ = cluster.admin.get("/config/users/alice/clients/c1")
    assert json.loads(data) == {"version": 1, "config": {"producer_byte_rate": "1048576",
                                                         "consumer_byte_rate": "2097152"}}
    data, _ = cluster.admin.get("/config/clients/<default>")
    assert json.loads(data) == {"version": 1, "config": {"request_percentage": "25"}}
    paths = [json.loads(cluster.admin.get(f"/config/changes/{n}")[0])["entity_path"]
             for n in cluster.admin.get_children("/config/changes")]
    assert {"users/alice/clients/c1", "clients/<default>"} <= set(paths)

    for broker_id in (2, 3):
        wait_until(lambda b=broker_id: "producer_byte_rate=1048576.0" in described(cluster, b, *alice_c1),
                   f"broker {broker_id} to describe alice/c1's quota")
    assert "request_percentage=25.0" in described(cluster, 3, "--entity-type", "clients", "--entity-default")

    cluster.brokers[2].restart(clean=False)
    wait_until(lambda: 2 in cluster.registered(), "broker 2 to register again")
    cluster.wait_serving()
    assert "consumer_byte_rate=2097152.0" in described(cluster, 2, *alice_c1)


def test_a_quota_written_to_zookeeper_as_kafka_writes_it_is_picked_up(cluster):
    cluster.admin.create("/config/clients/legacy", json.dumps(
        {"version": 1, "config": {"producer_byte_rate": "4096"}}).encode(), makepath=True)
    cluster.admin.create("/config/changes/config_change_", json.dumps(
        {"version": 2, "entity_path": "clients/legacy"}).encode(), sequence=True)
    for broker_id in (1, 2, 3):
        wait_until(lambda b=broker_id: "producer_byte_rate=4096.0" in described(
            cluster, b, "--entity-type", "clients", "--entity-name", "legacy"),
            f"broker {broker_id} to pick the quota up")
