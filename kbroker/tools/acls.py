"""``kbroker acls``: kafka-acls.sh (Kafka 4.x's ``org.apache.kafka.tools.AclCommand``).

Over CreateAcls (30), DescribeAcls (29) and DeleteAcls (31). What it prints, as AclCommand:

``--add``: per resource, ``Acl (pattern=P, entry=E) already exists.`` for each ACL the broker
already holds, then for the others::

    Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`: <- a space
     \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
    \t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)
    <empty line>

(the header ends in ": ", the first entry line starts with " \\t", the others with "\\t").
``--list``: per resource ``Current ACLs for resource `P`:`` then ``\\tE`` lines and an empty
line; with ``--principal`` each principal gets ``ACLs for principal `User:alice``` and the
blocks holding its entries.  ``--remove`` prints nothing with ``--force``; without it, the
question (``Are you sure you want to ...? (y/n)``) and a line read from stdin ("y" removes).

Order: AclCommand keeps resources in a java.util.HashMap and entries in HashSets whose
hashCodes mix in enum identity hashes, so Kafka's order is repeatable for one JVM set-up but
changes with the JVM's heap size or GC (seen: -Xmx256m vs -Xmx1g), not derivable from the
ACLs; this tool prints resources sorted by (resource type, name, pattern type) wire codes
and entries by (principal, host, operation, permission type), which is one of Kafka's
possible orders and the same every run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import click

from kbroker.tools.client import Client, ToolError, error_name
from kbroker.tools.common import connect, connection_options, fail
from wire import acl
from wire.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

# Kafka's enum constant names (what toString prints), by wire code
RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER",
                  5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}
PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE",
              7: "ALTER", 8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS",
              11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS"}
PERMISSIONS = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}

# SecurityUtils.operation: the PascalCase name ("IdempotentWrite") or its upper case
# ("IDEMPOTENTWRITE"); anything else is UNKNOWN (then refused by the operation check)
_OPERATION_LOOKUP = {**acl.OPERATIONS_BY_NAME,
                     **{k.upper(): v for k, v in acl.OPERATIONS_BY_NAME.items()}}
UNKNOWN_OP = 0


def operation_code(name: str) -> int:
    """SecurityUtils.operation: "Read", "read", "READ", "idempotentwrite" -> the wire code."""
    return _OPERATION_LOOKUP.get(name, _OPERATION_LOOKUP.get(name.upper(), UNKNOWN_OP))

Pattern = tuple[int, str | None, int]   # (resource type, name (None: any), pattern type)
Entry = tuple[str, str, int, int]        # (principal, host, operation, permission type)

CLUSTER_FILTER: Pattern = (acl.CLUSTER, acl.CLUSTER_NAME, acl.LITERAL)


def pattern_text(p: Pattern) -> str:
    """ResourcePattern.toString (ResourcePatternFilter's is the same text)."""
    name = "<any>" if p[1] is None else p[1]
    return f"ResourcePattern(resourceType={RESOURCE_TYPES.get(p[0], 'UNKNOWN')}, name={name}, " \
           f"patternType={PATTERN_TYPES.get(p[2], 'UNKNOWN')})"


def entry_text(e: Entry) -> str:
    """AccessControlEntry.toString."""
    return f"(principal={e[0]}, host={e[1]}, operation={OPERATIONS.get(e[2], 'UNKNOWN')}, " \
           f"permissionType={PERMISSIONS.get(e[3], 'UNKNOWN')})"


def _exception_name(code: int) -> str:
    """Kafka's ApiException class for an error code: SECURITY_DISABLED -> SecurityDisabledException."""
    name = error_name(code)
    special = {"UNKNOWN_SERVER_ERROR": "UnknownServerException",
               "CLUSTER_AUTHORIZATION_FAILED": "ClusterAuthorizationException",
               "TOPIC_AUTHORIZATION_FAILED": "TopicAuthorizationException"}
    if name in special:
        return special[name]
    return "".join(w.capitalize() for w in name.split("_")) + "Exception"


class AclError(ToolError):
    """A broker's error, worded as the admin client's exception (``ExecutionException.getMessage``)."""

    def __init__(self, code: int, message: str | None) -> None:
        # Throwable.toString: the class name, then ": message" when there is one
        text = f"org.apache.kafka.common.errors.{_exception_name(code)}"
        super().__init__(f"{text}: {message}" if message else text)


def parse_principal(text: str) -> str:
    """SecurityUtils.parseKafkaPrincipal, then KafkaPrincipal.toString: ``type:name``."""
    kind, sep, name = text.partition(":")
    if not text or not sep:
        raise ToolError(f"expected a string in format principalType:principalName but got {text}")
    return f"{kind}:{name}"


# ---- the protocol calls

def describe(client: Client, f: Pattern) -> list[tuple[Pattern, Entry]]:
    """Every binding matching the pattern filter (any entry)."""
    req = DescribeAclsRequest(resource_type_filter=f[0], resource_name_filter=f[1], pattern_type_filter=f[2],
                              principal_filter=None, host_filter=None, operation=acl.OP_ANY,
                              permission_type=acl.PERM_ANY)
    resp, _ = client.send(req)
    if resp.error_code:
        raise AclError(resp.error_code, resp.error_message)
    return [((r.resource_type, r.resource_name, r.pattern_type), (a.principal, a.host, a.operation, a.permission_type))
            for r in resp.resources for a in r.acls]


def create(client: Client, bindings: list[tuple[Pattern, Entry]]) -> None:
    req = CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
        resource_type=p[0], resource_name=p[1], resource_pattern_type=p[2], principal=e[0], host=e[1],
        operation=e[2], permission_type=e[3]) for p, e in bindings])
    resp, _ = client.send(req)
    for r in resp.results:
        if r.error_code:
            raise AclError(r.error_code, r.error_message)


def delete(client: Client, f: Pattern, entries: Iterable[Entry] | None) -> None:
    """DeleteAcls of the pattern filter with each entry (AccessControlEntry.toFilter), or with
    any entry when ``entries`` is None."""
    def one(e: Entry | None) -> DeleteAclsRequest.DeleteAclsFilter:
        return DeleteAclsRequest.DeleteAclsFilter(
            resource_type_filter=f[0], resource_name_filter=f[1], pattern_type_filter=f[2],
            principal_filter=None if e is None else e[0], host_filter=None if e is None else e[1],
            operation=acl.OP_ANY if e is None else e[2], permission_type=acl.PERM_ANY if e is None else e[3])
    filters = [one(None)] if entries is None else [one(e) for e in entries]
    resp, _ = client.send(DeleteAclsRequest(filters=filters))
    for r in resp.filter_results:
        if r.error_code:
            raise AclError(r.error_code, r.error_message)


# ---- what the options mean (AclCommand's getResourceFilter / getAcl / ...)

class Options:
    def __init__(self, **kw: object) -> None:
        self.__dict__.update(kw)
    topic: tuple[str, ...]
    group: tuple[str, ...]
    transactional_id: tuple[str, ...]
    delegation_token: tuple[str, ...]
    user_principal: tuple[str, ...]
    cluster: bool
    idempotent: bool
    producer: bool
    consumer: bool
    pattern_type: int
    operation: tuple[str, ...]
    allow_principal: tuple[str, ...]
    deny_principal: tuple[str, ...]
    allow_host: tuple[str, ...]
    deny_host: tuple[str, ...]


def resource_filters(o: Options, required: bool) -> list[Pattern]:
    out: list[Pattern] = [(acl.TOPIC, t.strip(), o.pattern_type) for t in o.topic]
    if o.pattern_type == acl.LITERAL and (o.cluster or o.idempotent):
        out.append(CLUSTER_FILTER)
    out += [(acl.GROUP, g.strip(), o.pattern_type) for g in o.group]
    out += [(acl.TRANSACTIONAL_ID, t, o.pattern_type) for t in o.transactional_id]
    out += [(acl.DELEGATION_TOKEN, t.strip(), o.pattern_type) for t in o.delegation_token]
    out += [(acl.USER, u.strip(), o.pattern_type) for u in o.user_principal]
    if not out and required:
        raise click.UsageError("You must provide at least one resource: --topic <topic> or --cluster or "
                               "--group <group> or --delegation-token <Delegation Token ID>")
    return list(dict.fromkeys(out))


def entries(o: Options, operations: set[int]) -> set[Entry]:
    allowed = {parse_principal(p.strip()) for p in o.allow_principal}
    denied = {parse_principal(p.strip()) for p in o.deny_principal}
    allow_hosts = {h.strip() for h in o.allow_host} or ({acl.WILDCARD_HOST} if allowed else set())
    deny_hosts = {h.strip() for h in o.deny_host} or ({acl.WILDCARD_HOST} if denied else set())
    out = {(p, h, op, acl.ALLOW) for p in allowed for op in operations for h in allow_hosts}
    out |= {(p, h, op, acl.DENY) for p in denied for op in operations for h in deny_hosts}
    return out


def filter_to_entries(o: Options) -> dict[Pattern, set[Entry]]:
    """getResourceFilterToAcls: the explicit options, or the --producer/--consumer roles."""
    out: dict[Pattern, set[Entry]] = {}
    if not o.producer and not o.consumer:
        ops = {operation_code(name.strip()) for name in o.operation or ("All",)}
        acls = entries(o, ops)
        out = {f: set(acls) for f in resource_filters(o, True)}
    filters = resource_filters(o, True) if (o.producer or o.consumer) else []
    if o.producer:
        for f in filters:
            if f[0] == acl.TOPIC:
                out[f] = entries(o, {acl.WRITE, acl.DESCRIBE, acl.CREATE})
            elif f[0] == acl.TRANSACTIONAL_ID:
                out[f] = entries(o, {acl.WRITE, acl.DESCRIBE})
        if o.idempotent:
            out[CLUSTER_FILTER] = entries(o, {acl.IDEMPOTENT_WRITE})
    if o.consumer:
        for f in filters:
            if f[0] == acl.TOPIC:
                out.setdefault(f, set()).update(entries(o, {acl.READ, acl.DESCRIBE}))
            elif f[0] == acl.GROUP:
                out.setdefault(f, set()).update(entries(o, {acl.READ}))
    for f, acls in out.items():  # validateOperation
        valid = (*acl.SUPPORTED_OPERATIONS.get(f[0], ()), acl.ALL)
        if any(e[2] not in valid for e in acls):
            raise click.UsageError(f"ResourceType {RESOURCE_TYPES[f[0]]} only supports operations "
                                   f"{', '.join(OPERATIONS[op] for op in valid).join('[]')}")
    return out


def _sorted_entries(acls: Iterable[Entry]) -> list[Entry]:
    return sorted(acls)


def _sorted_patterns(patterns: Iterable[Pattern]) -> list[Pattern]:
    return sorted(patterns, key=lambda p: (p[0], p[1] or "", p[2]))


# ---- the three actions

def add_acls(client: Client, o: Options) -> None:
    if o.pattern_type not in (acl.LITERAL, acl.PREFIXED):
        raise click.UsageError(f"A '--resource-pattern-type' value of '{PATTERN_TYPES[o.pattern_type]}' "
                               "is not valid when adding acls.")
    to_add = filter_to_entries(o)
    if any(not acls for acls in to_add.values()):
        raise click.UsageError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    for resource in _sorted_patterns(to_add):
        existing = {e for p, e in describe(client, resource) if p == resource}
        new = []
        for e in _sorted_entries(to_add[resource]):
            if e in existing:
                click.echo(f"Acl (pattern={pattern_text(resource)}, entry={entry_text(e)}) already exists.")
            else:
                new.append(e)
        if new:
            body = "\n".join("\t" + entry_text(e) for e in new)
            click.echo(f"Adding ACLs for resource `{pattern_text(resource)}`: \n {body}\n")
            create(client, [(resource, e) for e in new])


def _confirm(force: bool, question: str) -> bool:
    if force:
        return True
    click.echo(question)
    line = sys.stdin.readline()
    return line.strip().lower() == "y"


def remove_acls(client: Client, o: Options, force: bool) -> None:
    for f, acls in sorted(filter_to_entries(o).items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])):
        if not acls:
            if _confirm(force, f"Are you sure you want to delete all ACLs for resource filter `{pattern_text(f)}`? (y/n)"):
                delete(client, f, None)
        else:
            listed = "\n".join("\t" + entry_text(e) for e in _sorted_entries(acls))
            if _confirm(force, f"Are you sure you want to remove ACLs: \n {listed}\n from resource filter "
                               f"`{pattern_text(f)}`? (y/n)"):
                delete(client, f, _sorted_entries(acls))


def list_acls(client: Client, o: Options, principals: tuple[str, ...]) -> None:
    filters = resource_filters(o, False) or [(acl.RT_ANY, None, acl.PT_ANY)]
    by_resource: dict[Pattern, set[Entry]] = {}
    for f in filters:
        for p, e in describe(client, f):
            by_resource.setdefault(p, set()).add(e)
    wanted = list(dict.fromkeys(parse_principal(p.strip()) for p in principals))
    if not wanted:
        _print_blocks(by_resource)
    for principal in wanted:
        click.echo(f"ACLs for principal `{principal}`")
        _print_blocks({p: {e for e in acls if e[0] == principal} for p, acls in by_resource.items()})


def _print_blocks(by_resource: dict[Pattern, set[Entry]]) -> None:
    for p in _sorted_patterns(by_resource):
        if by_resource[p]:
            body = "\n".join("\t" + entry_text(e) for e in _sorted_entries(by_resource[p]))
            click.echo(f"Current ACLs for resource `{pattern_text(p)}`:\n{body}\n")


_PATTERN_CHOICES = {"literal": acl.LITERAL, "prefixed": acl.PREFIXED, "match": acl.MATCH, "any": acl.PT_ANY}


@click.command("acls", help="Add, list or remove ACLs (kafka-acls.sh).")
@connection_options
@click.option("--add", "do_add", is_flag=True, help="Indicates you are trying to add ACLs.")
@click.option("--remove", "do_remove", is_flag=True, help="Indicates you are trying to remove ACLs.")
@click.option("--list", "do_list", is_flag=True, help="List ACLs for the specified resource.")
@click.option("--topic", multiple=True, help="Topic to which ACLs should be added or removed ('*': all topics).")
@click.option("--group", multiple=True, help="Consumer group to which ACLs should be added or removed ('*': all).")
@click.option("--cluster", is_flag=True, help="Add/Remove cluster ACLs.")
@click.option("--transactional-id", "transactional_id", multiple=True,
              help="The transactionalId to which ACLs should be added or removed ('*': all).")
@click.option("--delegation-token", "delegation_token", multiple=True,
              help="Delegation token to which ACLs should be added or removed ('*': all tokens).")
@click.option("--user-principal", "user_principal", multiple=True,
              help="A user principal as the resource (CreateTokens / DescribeTokens on it).")
@click.option("--idempotent", is_flag=True, help="With --producer: also IdempotentWrite on the cluster.")
@click.option("--resource-pattern-type", "resource_pattern_type", default="literal",
              type=click.Choice(list(_PATTERN_CHOICES), case_sensitive=False),
              help="literal or prefixed when adding; also match or any when listing or removing.")
@click.option("--operation", multiple=True, help="Operation allowed or denied (repeatable; default All): "
              + ", ".join(acl.OPERATION_NAMES.values()) + ".")
@click.option("--allow-principal", "allow_principal", multiple=True, help="principalType:name, e.g. User:alice.")
@click.option("--deny-principal", "deny_principal", multiple=True, help="principalType:name to deny.")
@click.option("--allow-host", "allow_host", multiple=True, help="Host for --allow-principal (default *).")
@click.option("--deny-host", "deny_host", multiple=True, help="Host for --deny-principal (default *).")
@click.option("--principal", multiple=True, help="With --list: only this principal's ACLs (repeatable).")
@click.option("--producer", is_flag=True, help="Producer role: Write, Describe, Create on the topics.")
@click.option("--consumer", is_flag=True, help="Consumer role: Read, Describe on the topics, Read on the groups.")
@click.option("--force", is_flag=True, help="Assume Yes to all queries and do not prompt.")
@fail("Error while executing ACL command: ")
def acls(bootstrap_server: str, command_config: str | None, do_add: bool, do_remove: bool, do_list: bool,
         topic: tuple[str, ...], group: tuple[str, ...], cluster: bool, transactional_id: tuple[str, ...],
         delegation_token: tuple[str, ...], user_principal: tuple[str, ...],
         idempotent: bool, resource_pattern_type: str, operation: tuple[str, ...],
         allow_principal: tuple[str, ...], deny_principal: tuple[str, ...], allow_host: tuple[str, ...],
         deny_host: tuple[str, ...], principal: tuple[str, ...], producer: bool, consumer: bool,
         force: bool) -> None:
    # AclCommandOptions.checkArgs, in its order
    if [do_add, do_remove, do_list].count(True) != 1:
        raise click.UsageError("Command must include exactly one action: --list, --add, --remove. ")
    if do_list:
        for name, given in (("--producer", producer), ("--consumer", consumer), ("--allow-host", allow_host),
                            ("--allow-principal", allow_principal), ("--deny-host", deny_host),
                            ("--deny-principal", deny_principal)):
            if given:
                raise click.UsageError(f"Option \"[list]\" can't be used with option \"[{name[2:]}]\"")
    for role, on in (("producer", producer), ("consumer", consumer)):
        for name, given in (("operation", operation), ("deny-principal", deny_principal), ("deny-host", deny_host)):
            if on and given:
                raise click.UsageError(f"Option \"[{role}]\" can't be used with option \"[{name}]\"")
    if principal and not do_list:
        raise click.UsageError("The --principal option is only available if --list is set")
    if producer and not topic:
        raise click.UsageError("With --producer you must specify a --topic")
    if idempotent and not producer:
        raise click.UsageError("The --idempotent option is only available if --producer is set")
    if consumer and (not topic or not group or (not producer and (cluster or transactional_id))):
        raise click.UsageError("With --consumer you must specify a --topic and a --group and no --cluster or "
                               "--transactional-id option should be specified.")
    o = Options(topic=topic, group=group, transactional_id=transactional_id, cluster=cluster,
                delegation_token=delegation_token, user_principal=user_principal,
                idempotent=idempotent, producer=producer, consumer=consumer,
                pattern_type=_PATTERN_CHOICES[resource_pattern_type.lower()], operation=operation,
                allow_principal=allow_principal, deny_principal=deny_principal, allow_host=allow_host,
                deny_host=deny_host)
    with connect(bootstrap_server, command_config) as client:
        if do_add:
            add_acls(client, o)
        elif do_remove:
            remove_acls(client, o, force)
        else:
            list_acls(client, o, principal)
