"""``kbroker acls`` (kafka-acls.sh) against a real kbroker process with the AclAuthorizer, and
beside Kafka 4.3.1's own AclCommand (from `make kafka-jars`) on the same broker state.

Kafka's AclCommand keeps resources in a HashMap and entries in HashSets hashed partly on enum
identity hashes, so with several resources or entries its order depends on the JVM's set-up:
where a command prints more than one entry, the comparison is of the blocks as sets (each
block's header and its set of entry lines); where it prints one, stdout must be identical.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.requirements_helper import needs_tool
from tests.tools.helpers import kafka_jars_present, kafka_tool, kbroker

pytestmark = pytest.mark.compat

ACL_COMMAND = "org.apache.kafka.tools.AclCommand"
needs_kafka = needs_tool(kafka_jars_present(), "Apache Kafka jars missing: run `make kafka-jars`")


@pytest.fixture(scope="module")
def secured():
    """A broker that enforces ACLs; the tools connect as User:ANONYMOUS, a super user."""
    root = Path(tempfile.mkdtemp(prefix="kbroker-tools-acls-"))
    b = BrokerProcess(root / "data", overrides={
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS"}).start()
    yield b.bootstrap
    b.stop()
    shutil.rmtree(root, ignore_errors=True)
    assert "Traceback" not in b.log_text(), b.log_text()


def acls(bootstrap: str, *args: str, stdin: str | None = None):
    return kbroker("acls", "--bootstrap-server", bootstrap, *args, stdin=stdin)


def blocks(out: str) -> set[tuple[str, frozenset[str]]]:
    """The printed blocks: each header line with the set of its entry lines (order-free)."""
    found: set[tuple[str, frozenset[str]]] = set()
    header, lines = None, set()
    for line in out.splitlines():
        if line.startswith((" \t", "\t")):
            lines.add(line.strip())
        else:
            if header is not None:
                found.add((header, frozenset(lines)))
            header, lines = (line or None), set()
    if header is not None:
        found.add((header, frozenset(lines)))
    return found


def entry(principal: str, op: str, perm: str = "ALLOW", host: str = "*") -> str:
    return f"(principal={principal}, host={host}, operation={op}, permissionType={perm})"


def pattern(rtype: str, name: str, ptype: str = "LITERAL") -> str:
    return f"ResourcePattern(resourceType={rtype}, name={name}, patternType={ptype})"


def current(p: str, *entries: str) -> tuple[str, frozenset[str]]:
    return (f"Current ACLs for resource `{p}`:", frozenset(entries))


def test_acls_has_help():
    r = kbroker("acls", "--help")
    assert r.rc == 0 and "Usage:" in r.out and "--allow-principal" in r.out, r


def test_add_prints_kafkas_lines_then_list_shows_the_acl(secured):
    r = acls(secured, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t-add")
    assert (r.rc, r.err) == (0, ""), r
    assert r.out == (f"Adding ACLs for resource `{pattern('TOPIC', 't-add')}`: \n"
                     f" \t{entry('User:alice', 'READ')}\n\n")
    r = acls(secured, "--list", "--topic", "t-add")
    assert r.out == f"Current ACLs for resource `{pattern('TOPIC', 't-add')}`:\n\t{entry('User:alice', 'READ')}\n\n"
    r = acls(secured, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t-add")
    assert r.out == (f"Acl (pattern={pattern('TOPIC', 't-add')}, entry={entry('User:alice', 'READ')}) "
                     "already exists.\n"), r


def test_several_principals_operations_hosts_and_a_deny_make_their_product(secured):
    r = acls(secured, "--add", "--allow-principal", "User:a", "--allow-principal", "User:b",
             "--operation", "Write", "--operation", "describe", "--allow-host", "10.0.0.1",
             "--deny-principal", "User:c", "--topic", "t-prod")
    assert r.rc == 0, r
    want = {entry(p, op, host="10.0.0.1") for p in ("User:a", "User:b") for op in ("WRITE", "DESCRIBE")}
    want |= {entry("User:c", op, "DENY") for op in ("WRITE", "DESCRIBE")}
    assert blocks(r.out) == {(f"Adding ACLs for resource `{pattern('TOPIC', 't-prod')}`: ", frozenset(want))}, r
    r2 = acls(secured, "--list", "--topic", "t-prod")
    assert blocks(r2.out) == {current(pattern("TOPIC", "t-prod"), *want)}, r2


def test_an_operation_the_resource_type_lacks_is_a_usage_error_and_adds_nothing(secured):
    r = acls(secured, "--add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g-bad")
    assert r.rc == 2 and "ResourceType GROUP only supports operations [READ, DESCRIBE, DELETE, ALL]" in r.err, r
    assert acls(secured, "--list", "--group", "g-bad").out == ""


def test_list_filters_by_principal_and_by_match_over_prefixed_patterns(secured):
    assert acls(secured, "--add", "--allow-principal", "User:p1", "--topic", "pre-",
                "--resource-pattern-type", "prefixed").rc == 0
    assert acls(secured, "--add", "--allow-principal", "User:p2", "--operation", "Read", "--topic", "pre-fix").rc == 0
    assert acls(secured, "--add", "--allow-principal", "User:p2", "--operation", "Read", "--topic", "*").rc == 0
    r = acls(secured, "--list", "--topic", "pre-fix", "--resource-pattern-type", "match")
    assert blocks(r.out) == {current(pattern("TOPIC", "pre-", "PREFIXED"), entry("User:p1", "ALL")),
                             current(pattern("TOPIC", "pre-fix"), entry("User:p2", "READ")),
                             current(pattern("TOPIC", "*"), entry("User:p2", "READ"))}, r
    r = acls(secured, "--list", "--topic", "pre-", "--resource-pattern-type", "any")
    assert blocks(r.out) == {current(pattern("TOPIC", "pre-", "PREFIXED"), entry("User:p1", "ALL"))}, r
    r = acls(secured, "--list", "--principal", "User:p2")
    got = blocks(r.out)
    assert ("ACLs for principal `User:p2`", frozenset()) in got
    assert current(pattern("TOPIC", "pre-fix"), entry("User:p2", "READ")) in got
    assert not any("User:p1" in line for _, lines in got for line in lines), r


def test_producer_and_consumer_conveniences_grant_kafkas_operations(secured):
    r = acls(secured, "--add", "--allow-principal", "User:prod", "--producer", "--topic", "conv",
             "--transactional-id", "txn-1", "--idempotent")
    assert r.rc == 0, r
    r = acls(secured, "--add", "--allow-principal", "User:cons", "--consumer", "--topic", "conv", "--group", "cg")
    assert r.rc == 0, r
    got = blocks(acls(secured, "--list", "--topic", "conv", "--group", "cg", "--transactional-id", "txn-1").out)
    assert got == {
        current(pattern("TOPIC", "conv"), *(entry("User:prod", op) for op in ("WRITE", "DESCRIBE", "CREATE")),
                *(entry("User:cons", op) for op in ("READ", "DESCRIBE"))),
        current(pattern("GROUP", "cg"), entry("User:cons", "READ")),
        current(pattern("TRANSACTIONAL_ID", "txn-1"), *(entry("User:prod", op) for op in ("WRITE", "DESCRIBE"))),
    }
    got = blocks(acls(secured, "--list", "--cluster", "--principal", "User:prod").out)
    assert current(pattern("CLUSTER", "kafka-cluster"), entry("User:prod", "IDEMPOTENT_WRITE")) in got
    # removing the producer role takes exactly its ACLs away
    assert acls(secured, "--remove", "--force", "--allow-principal", "User:prod", "--producer",
                "--topic", "conv").rc == 0
    got = blocks(acls(secured, "--list", "--topic", "conv").out)
    assert got == {current(pattern("TOPIC", "conv"), *(entry("User:cons", op) for op in ("READ", "DESCRIBE")))}


def test_user_principal_and_delegation_token_resources(secured):
    r = acls(secured, "--add", "--allow-principal", "User:ops", "--operation", "CreateTokens",
             "--user-principal", "User:bob")
    assert r.rc == 0, r
    r = acls(secured, "--add", "--allow-principal", "User:ops", "--operation", "Describe", "--delegation-token", "tok")
    assert r.rc == 0, r
    got = blocks(acls(secured, "--list", "--user-principal", "User:bob", "--delegation-token", "tok").out)
    assert got == {current(pattern("USER", "User:bob"), entry("User:ops", "CREATE_TOKENS")),
                   current(pattern("DELEGATION_TOKEN", "tok"), entry("User:ops", "DESCRIBE"))}


def test_remove_asks_first_and_force_does_not(secured):
    assert acls(secured, "--add", "--allow-principal", "User:r", "--operation", "Read", "--topic", "t-rm").rc == 0
    r = acls(secured, "--remove", "--topic", "t-rm", stdin="n\n")
    assert r.out == (f"Are you sure you want to delete all ACLs for resource filter `{pattern('TOPIC', 't-rm')}`? "
                     "(y/n)\n"), r
    assert "User:r" in acls(secured, "--list", "--topic", "t-rm").out
    r = acls(secured, "--remove", "--allow-principal", "User:r", "--operation", "Read", "--topic", "t-rm", stdin="y\n")
    assert r.rc == 0 and r.out.startswith("Are you sure you want to remove ACLs: \n \t"), r
    assert acls(secured, "--list", "--topic", "t-rm").out == ""
    assert acls(secured, "--add", "--allow-principal", "User:r", "--topic", "t-rm").rc == 0
    r = acls(secured, "--remove", "--force", "--topic", "t-rm")
    assert (r.rc, r.out, r.err) == (0, "", "")
    assert acls(secured, "--list", "--topic", "t-rm").out == ""


@pytest.mark.parametrize("args, message", [
    (("--list", "--add"), "exactly one action: --list, --add, --remove"),
    (("--add", "--topic", "t"), "You must specify one of: --allow-principal, --deny-principal"),
    (("--add", "--allow-principal", "User:a"), "You must provide at least one resource"),
    (("--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"),
     "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."),
    (("--add", "--producer", "--allow-principal", "User:a"), "With --producer you must specify a --topic"),
    (("--add", "--consumer", "--allow-principal", "User:a", "--topic", "t"),
     "With --consumer you must specify a --topic and a --group"),
    (("--add", "--idempotent", "--topic", "t"), "The --idempotent option is only available if --producer is set"),
    (("--add", "--principal", "User:a", "--topic", "t"), "The --principal option is only available if --list is set"),
])
def test_usage_errors_exit_2_with_kafkas_message(secured, args, message):
    r = acls(secured, *args)
    assert r.rc == 2 and message in r.err, r


def test_a_malformed_principal_exits_1_with_kafkas_message(secured):
    r = acls(secured, "--add", "--allow-principal", "alice", "--topic", "t")
    assert (r.rc, r.err) == (1, "Error while executing ACL command: expected a string in format "
                                "principalType:principalName but got alice\n"), r


def test_a_broker_without_an_authorizer_refuses_with_security_disabled(broker):
    r = acls(broker.bootstrap, "--list")
    assert r.rc == 1 and "SecurityDisabledException" in r.err, r


# ---- beside Kafka's own AclCommand on the same broker

def _kafka(bootstrap: str, *args: str):
    r = kafka_tool(ACL_COMMAND, "--bootstrap-server", bootstrap, *args)
    assert r.rc == 0, r
    return r


@needs_kafka
def test_kafkas_add_and_ours_print_the_same_for_one_acl_and_for_an_existing_one(secured):
    theirs = _kafka(secured, "--add", "--allow-principal", "User:k1", "--operation", "Read", "--topic", "vs-1")
    ours = acls(secured, "--add", "--allow-principal", "User:k2", "--operation", "Read", "--topic", "vs-1")
    assert ours.out == theirs.out.replace("User:k1", "User:k2"), (ours, theirs)
    theirs = _kafka(secured, "--add", "--allow-principal", "User:k2", "--operation", "Read", "--topic", "vs-1")
    ours = acls(secured, "--add", "--allow-principal", "User:k1", "--operation", "Read", "--topic", "vs-1")
    assert "already exists" in theirs.out
    assert ours.out == theirs.out.replace("User:k2", "User:k1"), (ours, theirs)


@needs_kafka
def test_kafkas_add_and_ours_print_the_same_blocks_for_the_producer_role(secured):
    args = ("--producer", "--topic", "vs-4", "--transactional-id", "vs-tx", "--idempotent")
    theirs = _kafka(secured, "--add", "--allow-principal", "User:k3", *args)
    ours = acls(secured, "--add", "--allow-principal", "User:k4", *args)
    assert ours.rc == 0 and len(blocks(ours.out)) == 3, ours
    assert blocks(ours.out) == blocks(theirs.out.replace("User:k3", "User:k4")), (ours, theirs)


@needs_kafka
def test_kafkas_list_and_ours_print_the_same_acls(secured):
    assert acls(secured, "--add", "--allow-principal", "User:v", "--producer", "--topic", "vs-2",
                "--idempotent").rc == 0
    assert acls(secured, "--add", "--allow-principal", "User:w", "--topic", "vs-", "--operation", "Read",
                "--resource-pattern-type", "prefixed").rc == 0
    theirs = _kafka(secured, "--list")
    ours = acls(secured, "--list")
    assert (ours.rc, ours.err) == (0, "")
    assert blocks(ours.out) == blocks(theirs.out), (ours.out, theirs.out)
    assert len(ours.out) == len(theirs.out)
    theirs = _kafka(secured, "--list", "--topic", "vs-", "--resource-pattern-type", "prefixed")
    ours = acls(secured, "--list", "--topic", "vs-", "--resource-pattern-type", "prefixed")
    assert ours.out == theirs.out and "User:w" in ours.out, (ours, theirs)
    theirs = _kafka(secured, "--list", "--topic", "vs-2x", "--resource-pattern-type", "match", "--principal", "User:w")
    ours = acls(secured, "--list", "--topic", "vs-2x", "--resource-pattern-type", "match", "--principal", "User:w")
    assert ours.out == theirs.out and "ACLs for principal `User:w`" in ours.out, (ours, theirs)


@needs_kafka
def test_kafkas_remove_and_ours_print_the_same_and_remove_the_same(secured):
    for p in ("User:x", "User:y"):
        assert acls(secured, "--add", "--allow-principal", p, "--consumer", "--topic", "vs-3", "--group", "vs-g").rc == 0
    theirs = _kafka(secured, "--remove", "--force", "--allow-principal", "User:x", "--consumer",
                    "--topic", "vs-3", "--group", "vs-g")
    ours = acls(secured, "--remove", "--force", "--allow-principal", "User:y", "--consumer",
                "--topic", "vs-3", "--group", "vs-g")
    assert (ours.rc, ours.out, ours.err) == (0, theirs.out, ""), (ours, theirs)
    assert acls(secured, "--list", "--topic", "vs-3", "--group", "vs-g").out == ""
