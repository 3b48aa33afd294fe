"""SCRAM credentials in a real two-broker cluster over a real ZooKeeper, where Kafka's
ZooKeeper-era brokers keep them: Kafka's own kafka-configs (4.3.1) adds a user's
SCRAM-SHA-256 credential and a quota through broker 1; both land in the one znode
``/config/users/<user>`` in Kafka's stored form; broker 2 (never asked) authenticates the
user after the /config/changes notification, still does after a kill -9 restart, and refuses
it once the credential is deleted, while the user's quota stays."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.kafka_tools import kafka_configs

pytestmark = pytest.mark.timeout(600)

ALICE = ("--entity-type", "users", "--entity-name", "alice")


def scram_broker(broker_id, data_dir, overrides) -> BrokerProcess:
    b = BrokerProcess(data_dir, overrides=overrides)
    b.sasl_port = free_port()  # type: ignore[attr-defined]
    b.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{b.port},SASL_PLAINTEXT://127.0.0.1:{b.sasl_port}",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    })
    return b


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("scram"), zookeeper, size=2, make_broker=scram_broker).start()
    yield c
    c.stop()


def authenticates(broker: BrokerProcess, password: str) -> bool:
    """Whether a SCRAM-SHA-256 client gets metadata from ``broker``'s SASL listener alone:
    True when it does, False when the broker refuses the credentials (SaslAuthenticate's
    SASL_AUTHENTICATION_FAILED, which librdkafka reports as ``_AUTHENTICATION``); any other
    failure (a broker that is down, a timeout) raises, so it never counts as a refusal."""
    errors: list[KafkaError] = []
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.sasl_port}",
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                         "sasl.username": "alice", "sasl.password": password,
                         "error_cb": errors.append,
                         "log_level": 2})  # its retries after a refusal are expected here
    try:
        admin.list_topics(timeout=10)
        return True
    except KafkaException as e:
        # librdkafka fails list_topics with _TRANSPORT either way; the refusal itself reaches
        # error_cb (served by poll) as _AUTHENTICATION carrying the broker's SaslAuthenticate
        # error message, Kafka's text for SASL_AUTHENTICATION_FAILED (58)
        admin.poll(0)
        if any(err.code() == KafkaError._AUTHENTICATION and "invalid credentials" in err.str()
               for err in errors):
            return False
        raise AssertionError(f"not a SASL authentication failure: {e!r}; client errors: {errors[:5]}") from e


def user_znode(cluster: Cluster) -> dict:
    data, _ = cluster.admin.get("/config/users/alice")
    return json.loads(data)


def test_scram_credentials_live_in_the_users_znode_beside_quotas_and_reach_every_broker(cluster):
    b1, b2 = cluster.brokers[1], cluster.brokers[2]
    # the tool refuses quota and SCRAM changes in one command: two requests, one znode
    kafka_configs(b1.bootstrap, "--alter", "--add-config", "producer_byte_rate=1048576", *ALICE)
    kafka_configs(b1.bootstrap, "--alter", "--add-config",
                  "SCRAM-SHA-256=[iterations=8192,password=alice-secret]", *ALICE)
    stored = user_znode(cluster)
    assert stored["version"] == 1 and set(stored["config"]) == {"SCRAM-SHA-256", "producer_byte_rate"}
    assert stored["config"]["producer_byte_rate"] == "1048576"
    fields = dict(f.split("=", 1) for f in stored["config"]["SCRAM-SHA-256"].split(","))
    assert list(fields) == ["salt", "stored_key", "server_key", "iterations"]
    assert fields["iterations"] == "8192"

    wait_until(lambda: authenticates(b2, "alice-secret"), "broker 2 to authenticate alice")
    assert not authenticates(b2, "wrong-secret")

    b2.restart(clean=False)
    wait_until(lambda: 2 in cluster.registered(), "broker 2 to register again")
    cluster.wait_serving()   # its Metadata lists the cluster (before that librdkafka waits)
    assert authenticates(b2, "alice-secret")

    kafka_configs(b1.bootstrap, "--alter", "--delete-config", "SCRAM-SHA-256", *ALICE)
    assert user_znode(cluster)["config"] == {"producer_byte_rate": "1048576"}
    wait_until(lambda: not authenticates(b2, "alice-secret"), "broker 2 to refuse alice")
    assert "producer_byte_rate=1048576.0" in kafka_configs(b2.bootstrap, "--describe", *ALICE)
