"""Inter-broker traffic over a SASL listener: two kbroker processes and a real ZooKeeper, the
brokers' listener ``INTERNAL`` (SASL_PLAINTEXT, PLAIN) named by inter.broker.listener.name,
clients on PLAINTEXT.  The controller's requests and the replica fetchers authenticate with
the ``username``/``password`` of ``listener.name.internal.plain.sasl.jaas.config`` (as
Kafka's brokers do); both listeners are registered in /brokers/ids and each client gets the
endpoints of the listener it came on."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.cluster_processes import Cluster, wait_until

pytestmark = pytest.mark.timeout(600)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
        'password="broker-secret" user_broker="broker-secret";')


def sasl_broker(broker_id, data_dir, overrides) -> BrokerProcess:
    b = BrokerProcess(data_dir, overrides=overrides, log_level="DEBUG")
    b.internal_port = free_port()  # type: ignore[attr-defined]
    b.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{b.port},INTERNAL://127.0.0.1:{b.internal_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": JAAS,
    })
    return b


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("sasl"), zookeeper, size=2, make_broker=sasl_broker).start()
    yield c
    c.stop()


def test_brokers_replicate_over_the_sasl_inter_broker_listener(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("replicated", num_partitions=2, replication_factor=2)])["replicated"].result(60)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(20):
        p.produce("replicated", b"r%d" % i, partition=i % 2)
    assert p.flush(60) == 0

    def full_isr() -> bool:
        md = admin.list_topics("replicated", timeout=30).topics["replicated"]
        return all(sorted(pm.isrs) == [1, 2] for pm in md.partitions.values())

    wait_until(full_isr, "both partitions' ISR = both brokers")
    # registrations carry both listeners; clients on PLAINTEXT get PLAINTEXT ports
    for broker_id, b in cluster.brokers.items():
        data, _ = cluster.admin.get(f"/brokers/ids/{broker_id}")
        reg = json.loads(data)
        assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{b.port}", f"INTERNAL://127.0.0.1:{b.internal_port}"]
        assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "INTERNAL": "SASL_PLAINTEXT"}
    md = admin.list_topics(timeout=30)
    assert sorted(b.port for b in md.brokers.values()) == sorted(b.port for b in cluster.brokers.values())
    # every broker was reached by the other over INTERNAL, authenticated as User:broker
    for b in cluster.brokers.values():
        assert "authenticated as User:broker with PLAIN on INTERNAL" in b.log_text()
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    c.subscribe(["replicated"])
    got = set()
    deadline_polls = 120
    while len(got) < 20 and deadline_polls:
        m = c.poll(1)
        deadline_polls -= 1
        if m is not None and m.error() is None:
            got.add(m.value())
    c.close()
    assert got == {b"r%d" % i for i in range(20)}
    for b in cluster.brokers.values():
        assert "SASL authentication failed" not in b.log_text()
