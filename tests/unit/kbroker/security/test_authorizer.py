"""The authorizer decides as Kafka's AclAuthorizer (super users, no-ACL default, deny wins,
literal / wildcard / prefixed patterns, host and principal wildcards, implied operations),
the ACL admin APIs answer as Kafka's AclApis, and the ACLs survive a restart in the log-dir
file with Kafka's ZooKeeper JSON."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from kbroker.configs.config import BrokerConfig, ConfigError
from kbroker.handlers.acls_admin import handle_create_acls, handle_delete_acls, handle_describe_acls
from kbroker.security.acl_store import FILE_NAME, AclFileStore, change_notification
from kbroker.security.authorizer import (
    NO_ACLS,
    AclAuthorizer,
    build_authorizer,
    client_host,
    parse_super_users,
)
from kbroker.server.request_context import RequestContext
from tests.support.fakes import context, services
from wire.acl import (
    ALL,
    ALLOW,
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CREATE,
    DELETE,
    DENY,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    LITERAL,
    MATCH,
    OP_ANY,
    PERM_ANY,
    PREFIXED,
    PT_ANY,
    READ,
    RT_ANY,
    TOPIC,
    WRITE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    ResourcePattern,
)
from wire.error_codes import ErrorCode
from wire.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def binding(rtype: int, name: str, principal: str, op: int, perm: int = ALLOW,
            pattern: int = LITERAL, host: str = "*") -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, perm))


def make(tmp_path, *bindings: AclBinding, super_users: str = "", allow_if_none: bool = False) -> AclAuthorizer:
    os.makedirs(tmp_path, exist_ok=True)
    a = AclAuthorizer(AclFileStore(str(tmp_path)), parse_super_users(super_users), allow_if_none)
    errors, stored = a.create_acls(list(bindings))
    assert errors == [None] * len(bindings)
    if stored is not None:
        stored.result(timeout=60)
    return a


def test_a_principal_without_any_acl_is_denied_unless_allow_everyone_if_no_acl_found(tmp_path):
    assert not make(tmp_path).authorize(ALICE, HOST, READ, TOPIC, "t")
    assert make(tmp_path, allow_if_none=True).authorize(ALICE, HOST, READ, TOPIC, "t")


def test_allow_everyone_if_no_acl_found_does_not_apply_once_any_acl_names_the_resource(tmp_path):
    a = make(tmp_path, binding(TOPIC, "t", BOB, READ), allow_if_none=True)
    assert not a.authorize(ALICE, HOST, READ, TOPIC, "t")
    assert a.authorize(ALICE, HOST, READ, TOPIC, "other")


def test_super_users_bypass_even_a_deny(tmp_path):
    a = make(tmp_path, binding(TOPIC, "t", ALICE, ALL, DENY), super_users="User:admin; User:alice")
    assert a.authorize(ALICE, HOST, WRITE, TOPIC, "t")
    assert not a.authorize(BOB, HOST, WRITE, TOPIC, "t")


def test_deny_beats_allow(tmp_path):
    a = make(tmp_path, binding(TOPIC, "t", ALICE, READ), binding(TOPIC, "t", ALICE, READ, DENY))
    assert not a.authorize(ALICE, HOST, READ, TOPIC, "t")


def test_a_wildcard_principal_deny_beats_a_user_allow(tmp_path):
    a = make(tmp_path, binding(TOPIC, "t", ALICE, WRITE), binding(TOPIC, "t", "User:*", WRITE, DENY))
    assert not a.authorize(ALICE, HOST, WRITE, TOPIC, "t")


def test_a_literal_acl_applies_to_its_name_only(tmp_path):
    a = make(tmp_path, binding(TOPIC, "orders", ALICE, READ))
    assert a.authorize(ALICE, HOST, READ, TOPIC, "orders")
    assert not a.authorize(ALICE, HOST, READ, TOPIC, "orders2")
    assert not a.authorize(ALICE, HOST, READ, GROUP, "orders")
    assert not a.authorize(BOB, HOST, READ, TOPIC, "orders")


def test_the_wildcard_resource_applies_to_every_name_of_its_type(tmp_path):
    a = make(tmp_path, binding(TOPIC, "*", ALICE, READ))
    assert a.authorize(ALICE, HOST, READ, TOPIC, "anything")
    assert not a.authorize(ALICE, HOST, READ, GROUP, "anything")


def test_a_prefixed_acl_applies_to_every_name_starting_with_it(tmp_path):
    a = make(tmp_path, binding(TOPIC, "sales-", ALICE, WRITE, pattern=PREFIXED),
             binding(TOPIC, "sales-secret", ALICE, WRITE, DENY))
    assert a.authorize(ALICE, HOST, WRITE, TOPIC, "sales-eu")
    assert a.authorize(ALICE, HOST, WRITE, TOPIC, "sales-")
    assert not a.authorize(ALICE, HOST, WRITE, TOPIC, "sales")
    assert not a.authorize(ALICE, HOST, WRITE, TOPIC, "sales-secret")


def test_host_filters_match_the_client_address_or_the_wildcard(tmp_path):
    a = make(tmp_path, binding(TOPIC, "t", ALICE, READ, host="10.0.0.1"))
    assert a.authorize(ALICE, "10.0.0.1", READ, TOPIC, "t")
    assert not a.authorize(ALICE, "10.0.0.2", READ, TOPIC, "t")


def test_read_write_delete_and_alter_imply_describe_but_a_deny_of_read_does_not_deny_describe(tmp_path):
    for op in (READ, WRITE, DELETE, ALTER):
        a = make(tmp_path / str(op), binding(TOPIC, "t", ALICE, op))
        assert a.authorize(ALICE, HOST, DESCRIBE, TOPIC, "t"), op
    a = make(tmp_path / "c", binding(TOPIC, "t", ALICE, CREATE))
    assert not a.authorize(ALICE, HOST, DESCRIBE, TOPIC, "t")
    a = make(tmp_path / "d", binding(TOPIC, "t", ALICE, DESCRIBE), binding(TOPIC, "t", ALICE, READ, DENY))
    assert a.authorize(ALICE, HOST, DESCRIBE, TOPIC, "t")
    assert not a.authorize(ALICE, HOST, READ, TOPIC, "t")


def test_alter_configs_implies_describe_configs_and_all_allows_every_operation(tmp_path):
    a = make(tmp_path, binding(TOPIC, "t", ALICE, ALTER_CONFIGS), binding(TOPIC, "u", ALICE, ALL))
    assert a.authorize(ALICE, HOST, DESCRIBE_CONFIGS, TOPIC, "t")
    assert not a.authorize(ALICE, HOST, DESCRIBE, TOPIC, "t")
    assert all(a.authorize(ALICE, HOST, op, TOPIC, "u") for op in (READ, WRITE, CREATE, DESCRIBE))


def test_authorized_operations_is_the_bit_field_of_the_allowed_supported_operations(tmp_path):
    a = make(tmp_path, binding(TOPIC, "t", ALICE, READ))
    assert a.authorized_operations(ALICE, HOST, TOPIC, "t") == (1 << READ) | (1 << DESCRIBE)
    assert a.authorized_operations(BOB, HOST, TOPIC, "t") == 0


def test_authorize_by_resource_type_follows_kafkas_default_rules(tmp_path):
    a = make(tmp_path, binding(TOPIC, "a", ALICE, WRITE))
    assert a.authorize_by_resource_type(ALICE, HOST, WRITE, TOPIC)
    assert not a.authorize_by_resource_type(BOB, HOST, WRITE, TOPIC)
    a = make(tmp_path / "2", binding(TOPIC, "ab", ALICE, WRITE), binding(TOPIC, "a", ALICE, WRITE, DENY, PREFIXED))
    assert not a.authorize_by_resource_type(ALICE, HOST, WRITE, TOPIC)
    a = make(tmp_path / "3", binding(TOPIC, "*", ALICE, WRITE, DENY), binding(TOPIC, "x", ALICE, WRITE))
    assert not a.authorize_by_resource_type(ALICE, HOST, WRITE, TOPIC)


def test_filters_match_as_kafkas_acl_binding_filter(tmp_path):
    a = make(tmp_path, binding(TOPIC, "t", ALICE, READ), binding(TOPIC, "*", BOB, WRITE),
             binding(TOPIC, "t-", ALICE, WRITE, pattern=PREFIXED), binding(GROUP, "t", ALICE, READ))

    def names(rtype=RT_ANY, name=None, pattern=PT_ANY, principal=None, op=OP_ANY, perm=PERM_ANY):
        return sorted((b.pattern.resource_type, b.pattern.name, b.entry.principal)
                      for b in a.acls(AclBindingFilter(rtype, name, pattern, principal, None, op, perm)))

    assert len(names()) == 4
    assert names(TOPIC, "t", LITERAL) == [(TOPIC, "t", ALICE)]
    assert names(TOPIC, "t", PT_ANY) == [(TOPIC, "t", ALICE)]
    assert names(TOPIC, "t-x", MATCH) == [(TOPIC, "*", BOB), (TOPIC, "t-", ALICE)]
    assert names(principal=BOB) == [(TOPIC, "*", BOB)]
    assert names(op=READ) == sorted([(TOPIC, "t", ALICE), (GROUP, "t", ALICE)])


def test_create_refuses_invalid_bindings_one_by_one(tmp_path):
    a = make(tmp_path)
    errors, _ = a.create_acls([binding(CLUSTER, "c", ALICE, ALTER), binding(TOPIC, "", ALICE, READ),
                               binding(TOPIC, "ok", ALICE, READ), binding(TOPIC, "x", "alice", READ),
                               binding(TOPIC, "a/b", ALICE, READ), binding(TOPIC, "y", ALICE, READ, pattern=MATCH)])
    assert [e[0] if e else 0 for e in errors] == [42, 42, 0, 42, -1, 42]
    assert "kafka-cluster" in errors[0][1]
    assert [b.pattern.name for b in a.acls(AclBindingFilter(RT_ANY, None, PT_ANY, None, None, OP_ANY, PERM_ANY))] == ["ok"]


def test_the_acls_survive_a_restart_in_kafkas_zookeeper_json(tmp_path):
    a = make(tmp_path, binding(TOPIC, "t", ALICE, READ), binding(GROUP, "g-", BOB, READ, DENY, PREFIXED))
    a.close()
    doc = json.loads((tmp_path / FILE_NAME).read_text())
    assert doc["/kafka-acl/Topic/t"] == {"version": 1, "acls": [
        {"principal": ALICE, "permissionType": "Allow", "operation": "Read", "host": "*"}]}
    assert doc["/kafka-acl-extended/prefixed/Group/g-"]["acls"][0]["permissionType"] == "Deny"
    b = AclAuthorizer(AclFileStore(str(tmp_path)), [], False)
    assert b.authorize(ALICE, HOST, READ, TOPIC, "t")
    assert not b.authorize(BOB, HOST, READ, GROUP, "g-1")
    removed, stored = b.delete_acls([AclBindingFilter(TOPIC, None, PT_ANY, None, None, OP_ANY, PERM_ANY)])
    assert [x.pattern.name for x in removed[0]] == ["t"]
    stored.result(timeout=60)
    b.close()
    assert list(json.loads((tmp_path / FILE_NAME).read_text())) == ["/kafka-acl-extended/prefixed/Group/g-"]


def test_change_notifications_have_kafkas_encodings():
    assert change_notification(ResourcePattern(TOPIC, "foo", LITERAL)) == (
        "/kafka-acl-changes/acl_changes_", b"TOPIC:foo")
    path, data = change_notification(ResourcePattern(5, "tx", PREFIXED))
    assert path == "/kafka-acl-extended-changes/acl_changes_"
    assert json.loads(data) == {"version": 1, "resourceType": "TRANSACTIONAL_ID", "name": "tx",
                                "patternType": "PREFIXED"}


def test_authorizer_class_name_accepts_kafkas_classes_only(tmp_path):
    assert build_authorizer(BrokerConfig({}), str(tmp_path)) is None
    for cls in ("kafka.security.authorizer.AclAuthorizer", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"):
        a = build_authorizer(BrokerConfig({"authorizer.class.name": cls, "super.users": "User:a;User:b"}),
                             str(tmp_path))
        assert a is not None and a.super_users == {"User:a", "User:b"}
        a.close()
    with pytest.raises(ConfigError):
        build_authorizer(BrokerConfig({"authorizer.class.name": "com.example.Mine"}), str(tmp_path))


def test_client_host_drops_the_port():
    assert client_host("127.0.0.1:5555") == "127.0.0.1"
    assert client_host("::1:5555") == "::1"


# ---------------------------------------------------------------- the admin APIs
def ctx(authorizer, principal: str = "User:admin", version: int = 3) -> RequestContext:
    """None: no authorizer configured (the null object, and no ACLs the handler may ask for)."""
    ports = {} if authorizer is None else {"authorizer": authorizer, "acls": authorizer}
    return context(29, version, services(**ports), principal=principal, peer="127.0.0.1:4000")


def run(result):
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


def test_acl_apis_answer_security_disabled_without_an_authorizer():
    assert handle_describe_acls(ctx(None), DescribeAclsRequest()).error_code == ErrorCode.SECURITY_DISABLED
    r = handle_create_acls(ctx(None), CreateAclsRequest(creations=[CreateAclsRequest.AclCreation()]))
    assert r.results[0].error_code == ErrorCode.SECURITY_DISABLED
    r = handle_delete_acls(ctx(None), DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter()]))
    assert r.filter_results[0].error_code == ErrorCode.SECURITY_DISABLED


def test_without_an_authorizer_there_are_no_acls_and_none_can_be_created():
    everything = AclBindingFilter(RT_ANY, None, PT_ANY, None, None, OP_ANY, PERM_ANY)
    assert NO_ACLS.acls(everything) == []
    assert NO_ACLS.create_acls([binding(TOPIC, "t", ALICE, READ)]) == (
        [(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")], None)
    assert NO_ACLS.delete_acls([everything]) == ([[]], None)


def test_acl_apis_need_describe_or_alter_on_the_cluster(tmp_path):
    a = make(tmp_path, binding(CLUSTER, "kafka-cluster", ALICE, DESCRIBE))
    assert handle_describe_acls(ctx(a, ALICE), DescribeAclsRequest(resource_type_filter=RT_ANY,
                                pattern_type_filter=PT_ANY, operation=OP_ANY, permission_type=PERM_ANY)).error_code == 0
    assert handle_describe_acls(ctx(a, BOB), DescribeAclsRequest()).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    r = handle_create_acls(ctx(a, ALICE), CreateAclsRequest(creations=[CreateAclsRequest.AclCreation()]))
    assert r.results[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_create_describe_and_delete_acls_round_trip(tmp_path):
    a = make(tmp_path, super_users="User:admin")
    C = CreateAclsRequest.AclCreation
    r = run(handle_create_acls(ctx(a), CreateAclsRequest(creations=[
        C(resource_type=TOPIC, resource_name="t", resource_pattern_type=LITERAL, principal=ALICE, host="*",
          operation=READ, permission_type=ALLOW),
        C(resource_type=TOPIC, resource_name="p-", resource_pattern_type=PREFIXED, principal=BOB, host="*",
          operation=WRITE, permission_type=DENY),
        C(resource_type=CLUSTER, resource_name="bad", resource_pattern_type=LITERAL, principal=BOB, host="*",
          operation=ALTER, permission_type=ALLOW)])))
    assert [x.error_code for x in r.results] == [0, 0, ErrorCode.INVALID_REQUEST]
    d = handle_describe_acls(ctx(a), DescribeAclsRequest(resource_type_filter=TOPIC, resource_name_filter="p-x",
                                                         pattern_type_filter=MATCH, operation=OP_ANY,
                                                         permission_type=PERM_ANY, principal_filter=None,
                                                         host_filter=None))
    assert [(x.resource_name, x.pattern_type, [(e.principal, e.operation, e.permission_type) for e in x.acls])
            for x in d.resources] == [("p-", PREFIXED, [(BOB, WRITE, DENY)])]
    d0 = handle_describe_acls(ctx(a, version=0), DescribeAclsRequest(resource_type_filter=RT_ANY,
                              resource_name_filter=None, operation=OP_ANY, permission_type=PERM_ANY,
                              principal_filter=None, host_filter=None))
    assert [x.resource_name for x in d0.resources] == ["t"]   # v0: literal patterns only
    F = DeleteAclsRequest.DeleteAclsFilter
    r = run(handle_delete_acls(ctx(a), DeleteAclsRequest(filters=[
        F(resource_type_filter=TOPIC, resource_name_filter=None, pattern_type_filter=PT_ANY,
          principal_filter=ALICE, host_filter=None, operation=OP_ANY, permission_type=PERM_ANY),
        F(resource_type_filter=0, pattern_type_filter=PT_ANY, operation=OP_ANY, permission_type=PERM_ANY)])))
    assert [(m.resource_name, m.principal) for m in r.filter_results[0].matching_acls] == [("t", ALICE)]
    assert r.filter_results[1].error_code == ErrorCode.INVALID_REQUEST
    assert os.path.exists(tmp_path / FILE_NAME)
