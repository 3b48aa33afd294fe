"""ACLs for SASL/PLAIN users on a SASL_PLAINTEXT listener, managed with Kafka's own
kafka-acls tool (AclCommand, 4.3.1 jars, --command-config), kafka-python's admin API and
aiokafka's client (its admin has no ACL methods: its own DescribeAcls/CreateAcls request
classes), and enforced on kafka-python and confluent-kafka clients of user alice while user
admin (a super user) bypasses them."""

from __future__ import annotations

import asyncio
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import TopicAuthorizationFailedError

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.kafka_tools import JARS, kafka_acls

pytestmark = pytest.mark.timeout(300)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')


@pytest.fixture
def sasl_broker(tmp_path):
    port = free_port()
    b = BrokerProcess(tmp_path / "data", port=port, overrides={
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
    }).start()
    yield b
    b.stop()
    assert "Traceback" not in b.log_text(), b.log_text()


def kp(user: str) -> dict:
    """kafka-python's SASL/PLAIN settings."""
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": user, "sasl_plain_password": f"{user}-secret"}


def ck(user: str) -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN", "sasl.username": user,
            "sasl.password": f"{user}-secret"}


def command_config(tmp_path, user: str) -> str:
    path = tmp_path / f"{user}.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f'username="{user}" password="{user}-secret";\n')
    return str(path)


def acl_lines(output: str) -> list[str]:
    return sorted(line.strip() for line in output.splitlines() if line.strip().startswith("(principal="))


def test_kafka_acls_tool_adds_lists_with_filters_and_removes_acls(sasl_broker, tmp_path):
    bs = sasl_broker.bootstrap
    admin_cfg = command_config(tmp_path, "admin")
    kafka_acls(bs, "--command-config", admin_cfg, "--add", "--allow-principal", "User:alice",
               "--operation", "Read", "--operation", "Write", "--topic", "orders")
    kafka_acls(bs, "--command-config", admin_cfg, "--add", "--deny-principal", "User:bob",
               "--operation", "All", "--topic", "ord", "--resource-pattern-type", "prefixed")
    kafka_acls(bs, "--command-config", admin_cfg, "--add", "--allow-principal", "User:alice",
               "--operation", "Read", "--group", "g")

    listed = kafka_acls(bs, "--command-config", admin_cfg, "--list", "--topic", "orders")
    assert acl_lines(listed) == [
        "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
        "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)"]
    matching = kafka_acls(bs, "--command-config", admin_cfg, "--list", "--topic", "orders",
                          "--resource-pattern-type", "match")
    assert "ResourcePattern(resourceType=TOPIC, name=ord, patternType=PREFIXED)" in matching
    assert "(principal=User:bob, host=*, operation=ALL, permissionType=DENY)" in acl_lines(matching)
    alice = kafka_acls(bs, "--command-config", admin_cfg, "--list", "--principal", "User:alice")
    assert len(acl_lines(alice)) == 3

    kafka_acls(bs, "--command-config", admin_cfg, "--remove", "--force", "--allow-principal", "User:alice",
               "--operation", "Write", "--topic", "orders")
    assert acl_lines(kafka_acls(bs, "--command-config", admin_cfg, "--list", "--topic", "orders")) == [
        "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"]

    # alice may not manage ACLs: Kafka's tool reports the cluster authorization failure
    done = subprocess.run(["java", "-cp", f"{JARS}/*", "org.apache.kafka.tools.AclCommand", "--bootstrap-server",
                           bs, "--command-config", command_config(tmp_path, "alice"), "--list"],
                          capture_output=True, text=True, timeout=300)
    assert "ClusterAuthorizationException" in done.stdout + done.stderr


def test_kafka_python_admin_acls_and_enforcement_for_a_sasl_user(sasl_broker):
    bs = sasl_broker.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bs, **kp("admin"))
    admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "secret", "logs-a")])
    created = admin.create_acls([
        ACL("User:alice", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.TOPIC, "orders")),
        ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.TOPIC, "logs-", ACLResourcePatternType.PREFIXED)),
        ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.GROUP, "g"))])
    assert created["failed"] == [] and len(created["succeeded"]) == 3

    acls, error = admin.describe_acls(ACLFilter("User:alice", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                ResourcePatternFilter(ResourceType.TOPIC, None,
                                                                      ACLResourcePatternType.ANY)))
    assert error.errno == 0
    assert sorted((a.resource_pattern.resource_name, a.operation) for a in acls) == [
        ("logs-", ACLOperation.READ), ("orders", ACLOperation.WRITE)]

    # alice: Write on orders only; Read on logs-* (and group g) only
    p = KafkaProducer(bootstrap_servers=bs, **kp("alice"))
    p.send("orders", b"one").get(timeout=60)
    with pytest.raises(TopicAuthorizationFailedError):
        p.send("secret", b"no").get(timeout=60)
    p.close()
    admin_p = KafkaProducer(bootstrap_servers=bs, **kp("admin"))   # a super user writes anywhere
    admin_p.send("logs-a", b"log").get(timeout=60)
    admin_p.close()
    c = KafkaConsumer("logs-a", bootstrap_servers=bs, group_id="g", auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=60000, **kp("alice"))
    assert [m.value for m in c][:1] == [b"log"]
    c.commit()
    c.close()
    assert set(KafkaConsumer(bootstrap_servers=bs, **kp("alice")).topics()) == {"orders", "logs-a"}

    deleted = admin.delete_acls([ACLFilter("User:alice", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                           ResourcePatternFilter(ResourceType.TOPIC, "orders",
                                                                 ACLResourcePatternType.LITERAL))])
    [(flt, matches, err)] = deleted
    assert err.errno == 0 and [(a.resource_pattern.resource_name, a.operation) for a in matches] == [
        ("orders", ACLOperation.WRITE)]
    admin.close()


def test_confluent_kafka_consumer_without_read_on_the_group_or_the_topic_is_refused(sasl_broker):
    bs = sasl_broker.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bs, **kp("admin"))
    admin.create_topics([NewTopic("t", 1, 1)])
    admin.create_acls([ACL("User:alice", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
                           ResourcePattern(ResourceType.TOPIC, "t")),
                       ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                           ResourcePattern(ResourceType.GROUP, "g"))])
    admin.close()
    p = Producer({"bootstrap.servers": bs, **ck("admin")})
    p.produce("t", b"v")
    assert p.flush(60) == 0

    # Describe on the topic but no Read: the fetch (or the offset lookup) is refused
    c = Consumer({"bootstrap.servers": bs, "group.id": "g", "auto.offset.reset": "earliest", **ck("alice")})
    c.subscribe(["t"])
    error = None
    deadline = time.time() + 90
    while error is None and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None:
            assert m.error() is not None, "alice read a record without Read on the topic"
            error = m.error()
    c.close()
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_aiokafka_client_speaks_the_acl_apis(sasl_broker):
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.protocol.admin import CreateAclsRequest, DescribeAclsRequest

    async def main():
        admin = AIOKafkaAdminClient(bootstrap_servers=sasl_broker.bootstrap, security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism="PLAIN", sasl_plain_username="admin",
                                    sasl_plain_password="admin-secret")
        await admin.start()
        try:
            node = admin._client.get_random_node()
            created = await admin._client.send(node, CreateAclsRequest(2, "aio", 3, "User:alice", "*", 3, 3))
            described = await admin._client.send(node, DescribeAclsRequest(
                2, None, 1, None, None, 1, 1))
            return created, described
        finally:
            await admin.close()

    created, described = asyncio.run(main())
    assert [r[0] for r in created.creation_responses] == [0]
    assert described.error_code == 0
    assert [(r[1], r[2], [tuple(a) for a in r[3]]) for r in described.resources] == [
        ("aio", 3, [("User:alice", "*", 3, 3)])]
