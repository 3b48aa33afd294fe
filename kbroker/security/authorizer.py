"""The authorizer: Kafka's ``AclAuthorizer`` semantics over an ACL table (wire/acl.py) kept
by a store (kbroker/security/acl_store.py: a log-dir file on a single node, ZooKeeper in a cluster).

Configs: ``authorizer.class.name`` (empty: no authorizer, everything allowed, and the request
path pays one ``is None`` test; ``kafka.security.authorizer.AclAuthorizer``,
``kafka.security.auth.SimpleAclAuthorizer`` or
``org.apache.kafka.metadata.authorizer.StandardAuthorizer``: this authorizer; anything else
is a ConfigError), ``super.users`` (``User:a;User:b``), ``allow.everyone.if.no.acl.found``
(default false).

A request is allowed (AclAuthorizer.authorizeAction) when the principal is a super user; or
no ACL applies to the resource and ``allow.everyone.if.no.acl.found``; or no DENY ACL matches
and an ALLOW ACL matches.  The ACLs that apply to resource (type, name) are those of the
literal pattern ``name``, of the literal wildcard ``*`` and of every prefixed pattern that
``name`` starts with.  An ACL matches when its principal is the request's or ``User:*``,
its host the client's address or ``*``, and its operation the one asked or ``All``; an ALLOW
of Read, Write, Delete or Alter also allows Describe, an ALLOW of AlterConfigs also allows
DescribeConfigs (implied operations, ALLOW only: a DENY of Read does not deny Describe).
Denials are logged at INFO on ``kafka.authorizer.logger`` as Kafka does.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any, Protocol

from kbroker.security.acl_store import AclTable
from wire.acl import (
    ALL,
    ALLOW,
    ALTER,
    ALTER_CONFIGS,
    DELETE,
    DENY,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    LITERAL,
    OPERATION_NAMES,
    PREFIXED,
    READ,
    RESOURCE_TYPE_NAMES,
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    WRITE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    ResourcePattern,
    binding_invalid_reason,
)
from wire.error_codes import ErrorCode

log = logging.getLogger("kafka.authorizer.logger")

AUTHORIZER_CLASSES = ("kafka.security.authorizer.AclAuthorizer",
                      "kafka.security.auth.SimpleAclAuthorizer",
                      "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
INT_MIN = -(1 << 31)   # "authorized operations not asked for" on the wire

# The operations an ALLOW of each implies (AclAuthorizer: Describe by Read/Write/Delete/Alter,
# DescribeConfigs by AlterConfigs); ALL implies everything.
_ALLOWING: dict[int, frozenset[int]] = {
    DESCRIBE: frozenset((DESCRIBE, READ, WRITE, DELETE, ALTER, ALL)),
    DESCRIBE_CONFIGS: frozenset((DESCRIBE_CONFIGS, ALTER_CONFIGS, ALL)),
}


# What a change did to each pattern it touched: (entries added, entries removed).
Changes = dict[ResourcePattern, tuple[set[AccessControlEntry], set[AccessControlEntry]]]


class AclStore(Protocol):
    def load(self) -> AclTable: ...
    def store(self, table: AclTable, changes: Changes) -> Future[None]: ...
    def close(self) -> None: ...


class AllowAll:
    """No ``authorizer.class.name``: every principal may do everything (the null object of
    the ``Authorizer`` port, kbroker/server/services.py).  ``configured`` is False, which the ACL
    admin APIs answer with SECURITY_DISABLED and which lets handlers skip filtering work."""

    __slots__ = ()
    configured = False

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str,
                  ) -> bool:
        return True

    def authorize_by_resource_type(self, principal: str, host: str, operation: int,
                                   resource_type: int) -> bool:
        return True

    def authorized_operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type])


ALLOW_ALL = AllowAll()

NO_AUTHORIZER = "No Authorizer is configured."   # Kafka's SECURITY_DISABLED message of the ACL APIs


class NoAcls:
    """No ``authorizer.class.name``: no ACLs to list, and none kept (the null object of the
    ``AclAdmin`` port beside ``AllowAll``).  The ACL admin handlers answer SECURITY_DISABLED
    before they ask it; were it asked, it would answer the same."""

    __slots__ = ()

    def acls(self, flt: AclBindingFilter) -> list[AclBinding]:
        return []

    def create_acls(self, bindings: list[AclBinding]) -> tuple[list[tuple[int, str] | None], Future[None] | None]:
        return [(int(ErrorCode.SECURITY_DISABLED), NO_AUTHORIZER) for _ in bindings], None

    def delete_acls(self, filters: list[AclBindingFilter]) -> tuple[list[list[AclBinding]], Future[None] | None]:
        return [[] for _ in filters], None


NO_ACLS = NoAcls()


class AclAuthorizer:
    configured = True   # the Authorizer port (kbroker/server/services.py); AllowAll's is False

    def __init__(self, store: AclStore, super_users: list[str], allow_if_no_acl: bool) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._table: AclTable = {}
        # per resource type: the prefixed patterns (few; scanned per check)
        self._prefixed: dict[int, list[ResourcePattern]] = {}
        self.replace_all(store.load())

    # ------------------------------------------------------------ the table
    def replace_all(self, table: AclTable) -> None:
        """Install a whole table (start-up, or the ZooKeeper store re-read)."""
        self._table = {p: e for p, e in table.items() if e}
        self._reindex()

    def replace_pattern(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry]) -> None:
        """One pattern's entries as another broker stored them (ZooKeeper notification)."""
        if entries:
            self._table[pattern] = entries
        else:
            self._table.pop(pattern, None)
        self._reindex()

    def pattern_count(self) -> int:
        return len(self._table)

    def _reindex(self) -> None:
        prefixed: dict[int, list[ResourcePattern]] = {}
        for p in self._table:
            if p.pattern_type == PREFIXED:
                prefixed.setdefault(p.resource_type, []).append(p)
        self._prefixed = prefixed

    def _matching_acls(self, resource_type: int, name: str) -> list[AccessControlEntry]:
        table = self._table
        out: list[AccessControlEntry] = []
        for key in (ResourcePattern(resource_type, name, LITERAL),
                    ResourcePattern(resource_type, WILDCARD_RESOURCE, LITERAL)):
            entries = table.get(key)
            if entries:
                out.extend(entries)
        for p in self._prefixed.get(resource_type, ()):
            if name.startswith(p.name):
                out.extend(table[p])
        return out

    # ------------------------------------------------------------ decisions
    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str,
                  log_if_denied: bool = True) -> bool:
        if principal in self.super_users:
            return True
        acls = self._matching_acls(resource_type, name)
        if not acls:
            allowed = self.allow_if_no_acl
        else:
            allowed = not _matches(acls, principal, host, (operation, ALL), DENY) and _matches(
                acls, principal, host, _ALLOWING.get(operation, (operation, ALL)), ALLOW)
        if not allowed and log_if_denied:
            log.info("Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s",
                     principal, OPERATION_NAMES.get(operation, operation), host,
                     RESOURCE_TYPE_NAMES.get(resource_type, resource_type), name)
        return allowed

    def authorized_operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        """The bit field of the supported operations allowed (Kafka's authorizedOperations)."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if self.authorize(principal, host, op, resource_type, name, log_if_denied=False):
                bits |= 1 << op
        return bits

    def authorize_by_resource_type(self, principal: str, host: str, operation: int,
                                   resource_type: int) -> bool:
        """Kafka's Authorizer.authorizeByResourceType default: may the principal do
        ``operation`` on at least one resource of this type?  (InitProducerId without a
        transactional id: WRITE on some topic.)"""
        if self.authorize(principal, host, operation, resource_type, "hardcode", log_if_denied=False):
            return True
        deny: dict[int, set[str]] = {LITERAL: set(), PREFIXED: set()}
        allow: dict[int, set[str]] = {LITERAL: set(), PREFIXED: set()}
        for pattern, entries in self._table.items():
            if pattern.resource_type != resource_type:
                continue
            for e in entries:
                if (e.operation in (operation, ALL) and e.principal in (principal, WILDCARD_PRINCIPAL)
                        and e.host in (host, WILDCARD_HOST)):
                    (deny if e.permission == DENY else allow)[pattern.pattern_type].add(pattern.name)
        if WILDCARD_RESOURCE in deny[LITERAL]:
            return False
        if WILDCARD_RESOURCE in allow[LITERAL]:
            return True
        for name in allow[LITERAL]:
            if name not in deny[LITERAL] and not any(name.startswith(d) for d in deny[PREFIXED]):
                return True
        for prefix in allow[PREFIXED]:
            if not any(prefix.startswith(d) for d in deny[PREFIXED]):
                return True
        return False

    # ------------------------------------------------------------ the admin APIs
    def acls(self, flt: AclBindingFilter) -> list[AclBinding]:
        return [AclBinding(p, e) for p, entries in self._table.items() if flt.matches_pattern(p)
                for e in entries if flt.matches_entry(e)]

    def create_acls(self, bindings: list[AclBinding]) -> tuple[list[tuple[int, str] | None], Future[None] | None]:
        """Add the valid bindings; per binding its error (code, message) or None, and the
        store's future (None when nothing changed)."""
        errors: list[tuple[int, str] | None] = []
        changes: Changes = {}
        for b in bindings:
            err = binding_invalid_reason(b)
            errors.append(err)
            if err is None:
                current = self._table.get(b.pattern, frozenset())
                if b.entry not in current:
                    self._table[b.pattern] = current | {b.entry}
                    changes.setdefault(b.pattern, (set(), set()))[0].add(b.entry)
        if not changes:
            return errors, None
        self._reindex()
        return errors, self.store.store(self._table, changes)

    def delete_acls(self, filters: list[AclBindingFilter]) -> tuple[list[list[AclBinding]], Future[None] | None]:
        """Remove what each filter matches; per filter the bindings it removed (a binding
        matched by two filters is reported by the first, as Kafka does), and the store's
        future (None when nothing changed)."""
        results: list[list[AclBinding]] = []
        changes: Changes = {}
        for flt in filters:
            removed = self.acls(flt)
            for b in removed:
                left = self._table[b.pattern] - {b.entry}
                if left:
                    self._table[b.pattern] = left
                else:
                    del self._table[b.pattern]
                changes.setdefault(b.pattern, (set(), set()))[1].add(b.entry)
            results.append(removed)
        if not changes:
            return results, None
        self._reindex()
        return results, self.store.store(self._table, changes)

    def close(self) -> None:
        self.store.close()


def _matches(acls: list[AccessControlEntry], principal: str, host: str, operations: Any,
             permission: int) -> bool:
    for e in acls:
        if (e.permission == permission and e.operation in operations
                and (e.principal == principal or e.principal == WILDCARD_PRINCIPAL)
                and (e.host == host or e.host == WILDCARD_HOST)):
            return True
    return False


def parse_super_users(value: str | None) -> list[str]:
    """``super.users``: principals separated by semicolons (Kafka's AclAuthorizer)."""
    return [p.strip() for p in (value or "").split(";") if p.strip()]


def client_host(peer: str) -> str:
    """The client's address from a connection's ``host:port`` peer string."""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return host.strip("[]")


def build_authorizer(config: Any, log_dir: str) -> AclAuthorizer | None:
    """The authorizer ``authorizer.class.name`` asks for (None when empty); an unknown class
    is a ConfigError at start-up.  Its ACLs: the log-dir file (kbroker/security/acl_store.py)."""
    from kbroker.configs.config import ConfigError
    from kbroker.security.acl_store import AclFileStore

    name = (config["authorizer.class.name"] or "").strip()
    if not name:
        return None
    if name not in AUTHORIZER_CLASSES:
        raise ConfigError(f"Invalid value {name} for configuration authorizer.class.name: "
                          f"only {', '.join(AUTHORIZER_CLASSES)} are supported")
    return AclAuthorizer(AclFileStore(log_dir), parse_super_users(config["super.users"]),
                         config["allow.everyone.if.no.acl.found"])
