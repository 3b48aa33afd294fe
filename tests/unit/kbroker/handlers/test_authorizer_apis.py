"""Every API checks what Kafka's KafkaApis checks once an authorizer is configured: the
handlers of a real BrokerState called as the connection calls them, for a principal
holding a few ACLs; without an authorizer the same calls are answered as before."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import kbroker.server.connection  # noqa: F401  (registers every handler and the checks)
from kbroker.app.wiring import build_services
from kbroker.configs.config import BrokerConfig
from kbroker.replica.broker_state import BrokerState
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.acl import (
    ALLOW,
    ALTER_CONFIGS,
    CLUSTER,
    CREATE,
    DENY,
    DESCRIBE,
    LITERAL,
    PREFIXED,
    READ,
    TOPIC,
    WRITE,
    AccessControlEntry,
    AclBinding,
    ResourcePattern,
)
from wire.error_codes import ErrorCode
from wire.messages import (
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
)

ALICE = "User:alice"
AUTHZ = "kafka.security.authorizer.AclAuthorizer"


@pytest.fixture
def state(tmp_path):
    s = BrokerState(BrokerConfig({"log.dirs": str(tmp_path), "authorizer.class.name": AUTHZ,
                                  "super.users": "User:admin"}))
    for t in ("visible", "hidden", "pre-x"):
        s.create_topic(t, 1)
    grant(s, (TOPIC, "visible", LITERAL, READ, ALLOW), (TOPIC, "pre-", PREFIXED, ALTER_CONFIGS, ALLOW),
          (TOPIC, "new-ok", LITERAL, CREATE, ALLOW), (TOPIC, "visible", LITERAL, WRITE, DENY))
    yield s
    s.shutdown()


def grant(s: BrokerState, *acls: tuple) -> None:
    errors, stored = s.authorizer.create_acls([
        AclBinding(ResourcePattern(rt, name, pt), AccessControlEntry(ALICE, "*", op, perm))
        for rt, name, pt, op, perm in acls])
    assert errors == [None] * len(acls)
    stored.result(timeout=60)


def call(state: BrokerState, key: int, version: int, req, principal: str = ALICE):
    ctx = RequestContext(key, version, 1, "client", build_services(state), "127.0.0.1:5000", principal)
    result = REGISTRY.get(key).handler(ctx, req)
    if inspect.isawaitable(result):
        async def wait():
            return await result
        return asyncio.run(wait())
    return result


def metadata(state, names, version=12, principal=ALICE, auto=True):
    topics = None if names is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in names]
    return call(state, 3, version, MetadataRequest(topics=topics, allow_auto_topic_creation=auto,
                                                  include_topic_authorized_operations=True), principal)


def test_metadata_lists_only_described_topics_and_refuses_named_ones(state):
    # Read implies Describe (and a Deny of Write does not take it away); AlterConfigs does not
    assert sorted(t.name for t in metadata(state, None).topics) == ["visible"]
    answer = [(t.name, t.error_code, t.topic_authorized_operations)
              for t in metadata(state, ["hidden", "visible", "absent"]).topics]
    # Kafka's order: answered topics first, then the refused ones (no authorized operations)
    assert answer == [("visible", 0, (1 << READ) | (1 << DESCRIBE)),
                      ("hidden", ErrorCode.TOPIC_AUTHORIZATION_FAILED, -(1 << 31)),
                      ("absent", ErrorCode.TOPIC_AUTHORIZATION_FAILED, -(1 << 31))]
    assert sorted(t.name for t in metadata(state, None, principal="User:admin").topics) == \
        ["hidden", "pre-x", "visible"]


def test_metadata_auto_creation_needs_create(state):
    grant(state, (TOPIC, "new-", PREFIXED, DESCRIBE, ALLOW))
    answer = {t.name: t.error_code for t in metadata(state, ["new-ok", "new-no"]).topics}
    assert answer == {"new-ok": 0, "new-no": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert "new-ok" in state.topics and "new-no" not in state.topics


def test_metadata_topic_authorized_operations_come_from_the_acls(state):
    [t] = metadata(state, ["visible"]).topics
    assert t.topic_authorized_operations == (1 << READ) | (1 << DESCRIBE)


def test_create_topics_needs_create_on_the_cluster_or_the_topic(state):
    T = CreateTopicsRequest.CreatableTopic
    resp = call(state, 19, 7, CreateTopicsRequest(topics=[T(name="new-ok", num_partitions=1, replication_factor=1),
                                                          T(name="nope", num_partitions=1, replication_factor=1)]))
    codes = {r.name: r.error_code for r in resp.topics}
    assert codes == {"new-ok": 0, "nope": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    ok = next(r for r in resp.topics if r.name == "new-ok")
    assert ok.topic_config_error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and ok.configs is None
    assert "nope" not in state.topics
    grant(state, (CLUSTER, "kafka-cluster", LITERAL, CREATE, ALLOW))
    resp = call(state, 19, 7, CreateTopicsRequest(topics=[T(name="nope", num_partitions=1, replication_factor=1)]))
    assert [r.error_code for r in resp.topics] == [0]


def test_delete_topics_needs_delete(state):
    resp = call(state, 20, 6, DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name="visible")]))
    assert [(r.name, r.error_code) for r in resp.responses] == [("visible", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    assert "visible" in state.topics


def test_delete_topics_by_id_needs_delete_on_the_topic_the_id_names(state):
    tid = state.topic_ids.id_of("visible")
    resp = call(state, 20, 6, DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=tid)]))
    assert [(r.topic_id, r.error_code) for r in resp.responses] == [(tid, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    assert "visible" in state.topics


def test_describe_configs_needs_describe_configs_implied_by_alter_configs(state):
    R = DescribeConfigsRequest.DescribeConfigsResource
    resp = call(state, 32, 4, DescribeConfigsRequest(resources=[
        R(resource_type=2, resource_name="pre-x", configuration_keys=None),
        R(resource_type=2, resource_name="visible", configuration_keys=None),
        R(resource_type=4, resource_name="1", configuration_keys=None)]))
    assert sorted((r.resource_name, r.error_code) for r in resp.results) == [
        ("1", ErrorCode.CLUSTER_AUTHORIZATION_FAILED), ("pre-x", 0),
        ("visible", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]


def test_list_offsets_needs_describe(state):
    T, P = ListOffsetsRequest.ListOffsetsTopic, ListOffsetsRequest.ListOffsetsPartition
    resp = call(state, 2, 7, ListOffsetsRequest(replica_id=-1, topics=[
        T(name="visible", partitions=[P(partition_index=0, timestamp=-1)]),
        T(name="hidden", partitions=[P(partition_index=0, timestamp=-1)])]))
    assert [(t.name, t.partitions[0].error_code) for t in resp.topics] == [
        ("visible", 0), ("hidden", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]


def test_idempotent_init_producer_id_needs_idempotent_write_or_write_on_some_topic(state):
    req = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                                producer_epoch=-1)
    assert call(state, 22, 4, req).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    grant(state, (TOPIC, "pre-", PREFIXED, WRITE, ALLOW))
    assert call(state, 22, 4, req).error_code == 0


def test_add_partitions_to_txn_needs_write_on_the_transactional_id_and_every_topic(state):
    T = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    req = AddPartitionsToTxnRequest(v3_and_below_transactional_id="tx", v3_and_below_producer_id=1,
                                    v3_and_below_producer_epoch=0,
                                    v3_and_below_topics=[T(name="pre-x", partitions=[0]), T(name="hidden", partitions=[0])])

    def codes(resp):
        return {t.name: [p.partition_error_code for p in t.results_by_partition]
                for t in resp.results_by_topic_v3_and_below}

    assert codes(call(state, 24, 3, req)) == {"pre-x": [ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED],
                                              "hidden": [ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]}
    grant(state, (5, "tx", LITERAL, WRITE, ALLOW), (TOPIC, "pre-", PREFIXED, WRITE, ALLOW))
    assert codes(call(state, 24, 3, req)) == {"pre-x": [ErrorCode.OPERATION_NOT_ATTEMPTED],
                                              "hidden": [ErrorCode.TOPIC_AUTHORIZATION_FAILED]}


def test_end_txn_needs_write_on_the_transactional_id(state):
    req = EndTxnRequest(transactional_id="tx", producer_id=1, producer_epoch=0, committed=True)
    assert call(state, 26, 3, req).error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_without_an_authorizer_every_api_answers_as_before(tmp_path):
    s = BrokerState(BrokerConfig({"log.dirs": str(tmp_path)}))
    try:
        s.create_topic("t", 1)
        assert s.authorizer is None
        assert [t.name for t in metadata(s, None, principal="User:nobody").topics] == ["t"]
        resp = call(s, 20, 6, DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name="t")]),
                    principal="User:nobody")
        assert [r.error_code for r in resp.responses] == [0]
    finally:
        s.shutdown()


def test_group_apis_check_the_group_per_entry(state):
    from wire.acl import GROUP
    from wire.messages import (
        DeleteGroupsRequest,
        DescribeGroupsRequest,
        FindCoordinatorRequest,
        JoinGroupRequest,
        OffsetFetchRequest,
    )

    grant(state, (GROUP, "g", LITERAL, DESCRIBE, ALLOW))
    found = call(state, 10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["g", "h"]))
    assert sorted((c.key, c.error_code) for c in found.coordinators) == [
        ("g", 0), ("h", ErrorCode.GROUP_AUTHORIZATION_FAILED)]
    assert call(state, 10, 3, FindCoordinatorRequest(key="h", key_type=0)).error_code == \
        ErrorCode.GROUP_AUTHORIZATION_FAILED
    described = call(state, 15, 5, DescribeGroupsRequest(groups=["h", "g"], include_authorized_operations=True))
    assert [(g.group_id, g.error_code, g.authorized_operations) for g in described.groups] == [
        ("g", 0, 1 << DESCRIBE), ("h", ErrorCode.GROUP_AUTHORIZATION_FAILED, -(1 << 31))]
    deleted = call(state, 42, 2, DeleteGroupsRequest(groups_names=["g"]))
    assert [(r.group_id, r.error_code) for r in deleted.results] == [("g", ErrorCode.GROUP_AUTHORIZATION_FAILED)]
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    fetched = call(state, 9, 8, OffsetFetchRequest(groups=[G(group_id="g", topics=None), G(group_id="h", topics=None)]))
    assert sorted((g.group_id, g.error_code) for g in fetched.groups) == [
        ("g", 0), ("h", ErrorCode.GROUP_AUTHORIZATION_FAILED)]
    # Describe is not Read: JoinGroup is refused as a whole
    joined = call(state, 11, 7, JoinGroupRequest(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                                 member_id="", protocol_type="consumer", protocols=[]))
    assert joined.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_find_coordinator_answers_refused_transactional_ids_after_the_located_ones(state):
    from wire.acl import TRANSACTIONAL_ID
    from wire.messages import FindCoordinatorRequest

    grant(state, (TRANSACTIONAL_ID, "ok", LITERAL, DESCRIBE, ALLOW))
    found = call(state, 10, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=["no", "ok", "", "ok"]))
    assert [(c.key, c.error_code, c.node_id) for c in found.coordinators] == [
        ("ok", 0, 1), ("ok", 0, 1), ("no", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1),
        ("", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)]
    as_admin = call(state, 10, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=["", "ok"]),
                    principal="User:admin")
    assert [(c.key, c.error_code, c.error_message, c.node_id) for c in as_admin.coordinators] == [
        ("", ErrorCode.INVALID_REQUEST, "Transactional id must be non-empty", -1), ("ok", 0, None, 1)]
    refused = call(state, 10, 3, FindCoordinatorRequest(key="no", key_type=1))
    assert (refused.error_code, refused.node_id, refused.host, refused.port) == (
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "", -1)
    unknown = call(state, 10, 4, FindCoordinatorRequest(key_type=2, coordinator_keys=["x"]))
    assert [(c.error_code, c.error_message) for c in unknown.coordinators] == [
        (ErrorCode.INVALID_REQUEST, "Unknown key type 2")]
