"""Where ACLs are kept, in Kafka's AclAuthorizer layout.

ZooKeeper (Kafka's ZkAclStore): a literal pattern is the znode ``/kafka-acl/<Type>/<name>``,
a prefixed one ``/kafka-acl-extended/prefixed/<Type>/<name>``; each holds
``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
"operation":"Read","host":"*"}]}``.  A change is announced by a persistent sequential
``/kafka-acl-changes/acl_changes_NNNNNNNNNN`` holding ``TOPIC:foo`` (literal: the Java enum
name, a colon, the name) or ``/kafka-acl-extended-changes/acl_changes_NNNNNNNNNN`` holding
``{"version":1,"resourceType":"TOPIC","name":"foo","patternType":"PREFIXED"}``.

Single node: one JSON file in the first log dir, ``kbroker-acls.json``, mapping those same
znode paths to those same documents (``{"/kafka-acl/Topic/foo": {"version":1,"acls":[...]}}``),
written whole (temp file, fsync, rename: kbroker/configs/json_file.py) so kill -9 leaves the old or
the new set, never half.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Future
from typing import Any

from kbroker.configs.json_file import JsonFileWriter, read_json
from wire.acl import (
    LITERAL,
    OPERATION_NAMES,
    OPERATIONS_BY_NAME,
    PERMISSION_NAMES,
    PERMISSIONS_BY_NAME,
    PREFIXED,
    RESOURCE_TYPE_NAMES,
    RESOURCE_TYPES_BY_NAME,
    AccessControlEntry,
    ResourcePattern,
)

FILE_NAME = "kbroker-acls.json"
LITERAL_ROOT = "/kafka-acl"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"

AclTable = dict[ResourcePattern, frozenset[AccessControlEntry]]


def znode_path(p: ResourcePattern) -> str:
    root = LITERAL_ROOT if p.pattern_type == LITERAL else PREFIXED_ROOT
    return f"{root}/{RESOURCE_TYPE_NAMES[p.resource_type]}/{p.name}"


def pattern_of_path(path: str) -> ResourcePattern | None:
    """The pattern a znode path (or file key) names; None for anything else."""
    for root, pattern_type in ((PREFIXED_ROOT, PREFIXED), (LITERAL_ROOT, LITERAL)):
        if path.startswith(root + "/"):
            type_name, _, name = path[len(root) + 1:].partition("/")
            rtype = RESOURCE_TYPES_BY_NAME.get(type_name)
            if rtype is None or not name:
                return None
            return ResourcePattern(rtype, name, pattern_type)
    return None


def encode_acls(entries: frozenset[AccessControlEntry]) -> dict[str, Any]:
    """Kafka's AclEntry.toJsonCompatibleMap per entry (sorted: a stable document)."""
    acls = [{"principal": e.principal, "permissionType": PERMISSION_NAMES[e.permission],
             "operation": OPERATION_NAMES[e.operation], "host": e.host}
            for e in sorted(entries, key=lambda e: (e.principal, e.host, e.operation, e.permission))]
    return {"version": 1, "acls": acls}


def decode_acls(doc: Any) -> frozenset[AccessControlEntry]:
    if isinstance(doc, (bytes, str)):
        doc = json.loads(doc) if doc else {}
    out = set()
    for a in (doc or {}).get("acls", []):
        out.add(AccessControlEntry(a["principal"], a["host"], OPERATIONS_BY_NAME[a["operation"]],
                                   PERMISSIONS_BY_NAME[a["permissionType"]]))
    return frozenset(out)


def _enum_name(resource_type: int) -> str:
    """Java's ResourceType.toString(): TOPIC, TRANSACTIONAL_ID..."""
    name = RESOURCE_TYPE_NAMES[resource_type]
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name)).upper()


def change_notification(p: ResourcePattern) -> tuple[str, bytes]:
    """(sequential znode prefix path, data) announcing a change of ``p`` (Kafka's
    LiteralAclChangeStore / ExtendedAclChangeStore encodings)."""
    if p.pattern_type == LITERAL:
        return (f"{LITERAL_CHANGES}/{CHANGE_PREFIX}",
                f"{_enum_name(p.resource_type)}:{p.name}".encode())
    return (f"{EXTENDED_CHANGES}/{CHANGE_PREFIX}",
            json.dumps({"version": 1, "resourceType": _enum_name(p.resource_type), "name": p.name,
                        "patternType": "PREFIXED"}).encode())


class AclFileStore:
    """The single-node store: ``kbroker-acls.json`` in the first log dir."""

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, FILE_NAME)
        self._writer = JsonFileWriter(self.path)

    def load(self) -> AclTable:
        table: AclTable = {}
        for path, doc in read_json(self.path, {}).items():
            pattern = pattern_of_path(path)
            entries = decode_acls(doc)
            if pattern is not None and entries:
                table[pattern] = entries
        return table

    def store(self, table: AclTable, changes: Any) -> Future[None]:
        """Write the whole table; done once durable.  (``changes``: for the ZooKeeper store.)"""
        return self._writer.write({znode_path(p): encode_acls(e) for p, e in table.items() if e})

    def close(self) -> None:
        self._writer.close()
