"""ACLs in a real three-broker cluster over a real ZooKeeper (Kafka's AclAuthorizer layout):
an ACL created on one broker is stored as /kafka-acl/<Type>/<name> with Kafka's JSON and
announced under /kafka-acl-changes, every broker then lists and enforces it, a deletion on
another broker reaches all, and a broker killed with -9 reads them back from ZooKeeper.

The brokers talk PLAINTEXT, so every principal is User:ANONYMOUS; with
allow.everyone.if.no.acl.found=true (as many ZooKeeper-era clusters ran) the brokers' own
requests stay allowed while a DENY on one topic is enforced everywhere."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.support.cluster_processes import Cluster, wait_until

pytestmark = pytest.mark.timeout(600)

DENY_WRITE = AclBinding(ResourceType.TOPIC, "locked", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                        AclOperation.WRITE, AclPermissionType.DENY)
ANY = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                       AclPermissionType.ANY)


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("acls"), zookeeper, **{
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true"}).start()
    yield c
    c.stop()


def listed(cluster: Cluster, broker_id: int) -> set:
    admin = AdminClient({"bootstrap.servers": cluster.brokers[broker_id].bootstrap})
    return {(b.name, b.principal, b.operation, b.permission_type)
            for b in admin.describe_acls(ANY, request_timeout=60).result(60)}


def produce(bootstrap: str, topic: str) -> int:
    outcome: list = []
    p = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 60000})
    p.produce(topic, b"v", callback=lambda err, msg: outcome.append(err))
    deadline = time.time() + 90
    while not outcome and time.time() < deadline:
        p.poll(0.5)
    assert outcome
    return outcome[0].code() if outcome[0] is not None else 0


def test_acls_are_stored_in_zookeeper_and_enforced_by_every_broker(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.brokers[1].bootstrap})
    for f in admin.create_topics([NewTopic("locked", 3, 1), NewTopic("open", 3, 1)],
                                 request_timeout=60).values():
        f.result(60)
    assert admin.create_acls([DENY_WRITE], request_timeout=60)[DENY_WRITE].result(60) is None

    data, _ = cluster.admin.get("/kafka-acl/Topic/locked")
    assert json.loads(data) == {"version": 1, "acls": [
        {"principal": "User:ANONYMOUS", "permissionType": "Deny", "operation": "Write", "host": "*"}]}
    notes = cluster.admin.get_children("/kafka-acl-changes")
    assert [cluster.admin.get(f"/kafka-acl-changes/{n}")[0] for n in notes] == [b"TOPIC:locked"]

    expected = {("locked", "User:ANONYMOUS", AclOperation.WRITE, AclPermissionType.DENY)}
    for broker_id in (1, 2, 3):
        wait_until(lambda b=broker_id: listed(cluster, b) == expected, f"broker {broker_id} to list the ACL")
    # "locked" has a partition on every broker: each leader refuses the write
    assert produce(cluster.bootstrap, "locked") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce(cluster.bootstrap, "open") == 0

    # kill -9 broker 2: it reads the ACLs back from ZooKeeper
    cluster.brokers[2].restart(clean=False)
    wait_until(lambda: 2 in cluster.registered(), "broker 2 to register again")
    cluster.wait_serving()
    assert listed(cluster, 2) == expected

    # deleted through broker 3: the znode goes and every broker stops enforcing it
    admin3 = AdminClient({"bootstrap.servers": cluster.brokers[3].bootstrap})
    [deleted] = admin3.delete_acls([ANY], request_timeout=60).values()
    assert len(deleted.result(60)) == 1
    assert cluster.admin.exists("/kafka-acl/Topic/locked") is None
    for broker_id in (1, 2, 3):
        wait_until(lambda b=broker_id: listed(cluster, b) == set(), f"broker {broker_id} to drop the ACL")
    assert produce(cluster.bootstrap, "locked") == 0


def test_an_acl_written_to_zookeeper_as_kafka_writes_it_is_picked_up(cluster):
    """What a ZooKeeper-era kafka-acls --authorizer-properties zookeeper.connect=... writes."""
    acl = {"version": 1, "acls": [{"principal": "User:ANONYMOUS", "permissionType": "Deny",
                                   "operation": "Write", "host": "*"}]}
    cluster.admin.create("/kafka-acl-extended/prefixed/Topic/zk-", json.dumps(acl).encode(), makepath=True)
    cluster.admin.create("/kafka-acl-extended-changes/acl_changes_", json.dumps(
        {"version": 1, "resourceType": "TOPIC", "name": "zk-", "patternType": "PREFIXED"}).encode(),
        sequence=True, makepath=True)
    for broker_id in (1, 2, 3):
        wait_until(lambda b=broker_id: ("zk-", "User:ANONYMOUS", AclOperation.WRITE, AclPermissionType.DENY)
                   in listed(cluster, b), f"broker {broker_id} to pick the prefixed ACL up")
    admin = AdminClient({"bootstrap.servers": cluster.brokers[1].bootstrap})
    admin.create_topics([NewTopic("zk-topic", 3, 1)], request_timeout=60)["zk-topic"].result(60)
    assert produce(cluster.bootstrap, "zk-topic") == KafkaError.TOPIC_AUTHORIZATION_FAILED
