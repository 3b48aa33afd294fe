"""ACLs through confluent-kafka's admin API against a real broker process, then enforced on
confluent-kafka's producer, consumer and metadata after a kill -9.

Until the SASL listeners land, the principal is the PLAINTEXT one, ``User:ANONYMOUS``: the
broker first starts with it as a super user (so it may create ACLs and topics), is killed
with SIGKILL, and comes back without ``super.users``: every ACL must have survived in the
log dir, and ``User:ANONYMOUS`` is now held to them.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
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

pytestmark = pytest.mark.timeout(240)

ME = "User:ANONYMOUS"
AUTHZ = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}


def acl(rtype, name, op, perm=AclPermissionType.ALLOW, pattern=ResourcePatternType.LITERAL, principal=ME):
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


def results(futures: dict, timeout: float = 60) -> list:
    return [f.result(timeout) for f in futures.values()] if isinstance(futures, dict) else futures.result(timeout)


def produce_one(bootstrap: str, topic: str) -> KafkaError | None:
    """The delivery error of one record (None: delivered)."""
    outcome: list = []
    p = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 60000})
    p.produce(topic, b"v", callback=lambda err, msg: outcome.append(err))
    deadline = time.time() + 90
    while not outcome and time.time() < deadline:
        p.poll(0.5)
    assert outcome, f"no delivery report for {topic}"
    return outcome[0]


def as_tuples(bindings) -> set:
    return {(b.restype, b.name, b.resource_pattern_type, b.principal, b.operation, b.permission_type)
            for b in bindings}


def test_acls_created_described_and_deleted_with_confluent_kafka_are_enforced_after_kill_9(broker_factory):
    b = broker_factory(**AUTHZ, **{"super.users": ME})
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    results(admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "secret", "pre-a", "pre-b")]))
    T, G = ResourceType.TOPIC, ResourceType.GROUP
    created = [acl(T, "orders", AclOperation.WRITE), acl(T, "orders", AclOperation.READ),
               acl(G, "g", AclOperation.READ),
               acl(T, "pre-", AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED),
               acl(T, "pre-b", AclOperation.WRITE, AclPermissionType.DENY),
               acl(T, "orders", AclOperation.READ, principal="User:bob")]
    assert results(admin.create_acls(created)) == [None] * len(created)

    orders = admin.describe_acls(AclBindingFilter(T, "orders", ResourcePatternType.LITERAL, None, None,
                                                  AclOperation.ANY, AclPermissionType.ANY)).result(60)
    assert as_tuples(orders) == {(T, "orders", ResourcePatternType.LITERAL, p, op, AclPermissionType.ALLOW)
                                 for p, op in ((ME, AclOperation.WRITE), (ME, AclOperation.READ),
                                               ("User:bob", AclOperation.READ))}
    matching = admin.describe_acls(AclBindingFilter(T, "pre-b", ResourcePatternType.MATCH, None, None,
                                                    AclOperation.ANY, AclPermissionType.ANY)).result(60)
    assert as_tuples(matching) == {
        (T, "pre-", ResourcePatternType.PREFIXED, ME, AclOperation.WRITE, AclPermissionType.ALLOW),
        (T, "pre-b", ResourcePatternType.LITERAL, ME, AclOperation.WRITE, AclPermissionType.DENY)}
    deleted = results(admin.delete_acls([AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY,
                                                          "User:bob", None, AclOperation.ANY,
                                                          AclPermissionType.ANY)]))
    assert [as_tuples(d) for d in deleted] == [
        {(T, "orders", ResourcePatternType.LITERAL, "User:bob", AclOperation.READ, AclPermissionType.ALLOW)}]

    # kill -9, and no more super user: the ACLs come back from the log dir and hold
    del b.overrides["super.users"]
    b.restart(clean=False)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    assert produce_one(b.bootstrap, "orders") is None
    assert produce_one(b.bootstrap, "pre-a") is None              # prefixed allow
    assert produce_one(b.bootstrap, "pre-b").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED   # deny wins
    assert produce_one(b.bootstrap, "secret").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED  # no ACL
    # auto-creation needs Create: refused, nothing created
    assert produce_one(b.bootstrap, "brand-new").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    # without Describe a topic is not listed (Write and Read imply Describe, a Deny of Write does not remove it)
    assert set(admin.list_topics(timeout=60).topics) == {"orders", "pre-a", "pre-b"}

    # Read on group g and topic orders: consume and commit
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["orders"])
    got = None
    deadline = time.time() + 90
    while got is None and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None:
            assert m.error() is None, m.error()
            got = m
    assert got is not None and got.value() == b"v"
    committed = c.commit(message=got, asynchronous=False)
    assert [(tp.topic, tp.offset, tp.error) for tp in committed] == [("orders", 1, None)]
    c.close()

    # no Read on group h: the consumer is refused with GROUP_AUTHORIZATION_FAILED
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "h", "auto.offset.reset": "earliest"})
    c.subscribe(["orders"])
    error = None
    deadline = time.time() + 90
    while error is None and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None and m.error() is not None:
            error = m.error()
    c.close()
    assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
