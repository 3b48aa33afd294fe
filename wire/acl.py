"""ACL vocabulary as Kafka's ``org.apache.kafka.common.acl`` / ``resource`` packages define it:
the wire codes of resource types, pattern types, operations and permission types, the
``AclBinding`` (a resource pattern plus an access control entry) and the matching rules of
``AclBindingFilter`` (DescribeAcls / DeleteAcls).

Codes (the bytes on the wire, Kafka's enums):
  ResourceType: UNKNOWN 0, ANY 1, TOPIC 2, GROUP 3, CLUSTER 4, TRANSACTIONAL_ID 5,
                DELEGATION_TOKEN 6, USER 7
  PatternType:  UNKNOWN 0, ANY 1, MATCH 2, LITERAL 3, PREFIXED 4
  AclOperation: UNKNOWN 0, ANY 1, ALL 2, READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
                DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
                IDEMPOTENT_WRITE 12, CREATE_TOKENS 13, DESCRIBE_TOKENS 14
  AclPermissionType: UNKNOWN 0, ANY 1, DENY 2, ALLOW 3
Names (Kafka's ZooKeeper JSON and its tools): "Topic", "Read", "Allow", "DescribeConfigs"...
"""

from __future__ import annotations

from dataclasses import dataclass

# ---- ResourceType
RT_ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 1, 2, 3, 4, 5, 6, 7
RESOURCE_TYPE_NAMES = {TOPIC: "Topic", GROUP: "Group", CLUSTER: "Cluster",
                       TRANSACTIONAL_ID: "TransactionalId", DELEGATION_TOKEN: "DelegationToken",
                       USER: "User"}
RESOURCE_TYPES_BY_NAME = {v: k for k, v in RESOURCE_TYPE_NAMES.items()}

# ---- PatternType
PT_ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
PATTERN_TYPE_NAMES = {LITERAL: "LITERAL", PREFIXED: "PREFIXED"}

# ---- AclOperation
OP_ANY, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 1, 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
CREATE_TOKENS, DESCRIBE_TOKENS = 13, 14
OPERATION_NAMES = {ALL: "All", READ: "Read", WRITE: "Write", CREATE: "Create", DELETE: "Delete",
                   ALTER: "Alter", DESCRIBE: "Describe", CLUSTER_ACTION: "ClusterAction",
                   DESCRIBE_CONFIGS: "DescribeConfigs", ALTER_CONFIGS: "AlterConfigs",
                   IDEMPOTENT_WRITE: "IdempotentWrite", CREATE_TOKENS: "CreateTokens",
                   DESCRIBE_TOKENS: "DescribeTokens"}
OPERATIONS_BY_NAME = {v: k for k, v in OPERATION_NAMES.items()}

# ---- AclPermissionType
PERM_ANY, DENY, ALLOW = 1, 2, 3
PERMISSION_NAMES = {DENY: "Deny", ALLOW: "Allow"}
PERMISSIONS_BY_NAME = {v: k for k, v in PERMISSION_NAMES.items()}

WILDCARD_RESOURCE = "*"        # ResourcePattern.WILDCARD_RESOURCE
WILDCARD_PRINCIPAL = "User:*"  # AclEntry.WildcardPrincipalString
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"

# Kafka's AclEntry.supportedOperations(resourceType): what authorized_operations may hold.
SUPPORTED_OPERATIONS: dict[int, tuple[int, ...]] = {
    TOPIC: (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DESCRIBE, DELETE),
    CLUSTER: (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER,
              DESCRIBE),
    TRANSACTIONAL_ID: (DESCRIBE, WRITE),
    DELEGATION_TOKEN: (DESCRIBE,),
    USER: (CREATE_TOKENS, DESCRIBE_TOKENS),
}


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: int   # a concrete type (TOPIC...), never ANY
    name: str
    pattern_type: int    # LITERAL or PREFIXED


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str       # "User:alice", or "User:*"
    host: str            # an IP address, or "*"
    operation: int       # a concrete operation or ALL
    permission: int      # ALLOW or DENY


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls/DeleteAcls select: None fields match anything (Kafka's null)."""
    resource_type: int
    name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches_pattern(self, p: ResourcePattern) -> bool:
        """ResourcePatternFilter.matches."""
        if self.resource_type != RT_ANY and self.resource_type != p.resource_type:
            return False
        if self.pattern_type not in (PT_ANY, MATCH) and self.pattern_type != p.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type == PT_ANY or self.pattern_type == p.pattern_type:
            return self.name == p.name
        # MATCH: the patterns that would apply to a resource called ``name``
        if p.pattern_type == LITERAL:
            return self.name == p.name or p.name == WILDCARD_RESOURCE
        return self.name.startswith(p.name)

    def matches_entry(self, e: AccessControlEntry) -> bool:
        """AccessControlEntryFilter.matches."""
        return ((self.principal is None or self.principal == e.principal)
                and (self.host is None or self.host == e.host)
                and (self.operation == OP_ANY or self.operation == e.operation)
                and (self.permission == PERM_ANY or self.permission == e.permission))

    def matches(self, b: AclBinding) -> bool:
        return self.matches_pattern(b.pattern) and self.matches_entry(b.entry)

    def invalid_reason(self) -> str | None:
        """Why Kafka refuses this filter (UNKNOWN codes), or None."""
        if self.resource_type not in RESOURCE_TYPE_NAMES and self.resource_type != RT_ANY:
            return "Filter contain UNKNOWN elements"
        if self.pattern_type not in (PT_ANY, MATCH, LITERAL, PREFIXED):
            return "Filter contain UNKNOWN elements"
        if self.operation not in OPERATION_NAMES and self.operation != OP_ANY:
            return "Filter contain UNKNOWN elements"
        if self.permission not in (PERM_ANY, DENY, ALLOW):
            return "Filter contain UNKNOWN elements"
        return None


INVALID_REQUEST = 42        # wire.error_codes.ErrorCode.INVALID_REQUEST
UNKNOWN_SERVER_ERROR = -1  # what Kafka's IllegalArgumentException becomes (ApiError.fromThrowable)


def binding_invalid_reason(b: AclBinding) -> tuple[int, str] | None:
    """Why CreateAcls refuses this binding, as (error code, message): Kafka's
    CreateAclsRequest.validate and AclApis (INVALID_REQUEST), AclAuthorizer.validateAclBinding
    (IllegalArgumentException: UNKNOWN_SERVER_ERROR); None when it may be stored."""
    p, e = b.pattern, b.entry
    if (p.resource_type not in RESOURCE_TYPE_NAMES or p.pattern_type not in (LITERAL, PREFIXED)
            or e.operation not in OPERATION_NAMES or e.permission not in (ALLOW, DENY)):
        return INVALID_REQUEST, "Invalid ACL creation: contains UNKNOWN or ANY/MATCH elements"
    if p.resource_type == CLUSTER and p.name != CLUSTER_NAME:
        return INVALID_REQUEST, f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not p.name:
        return INVALID_REQUEST, "Invalid empty resource name specified"
    if ":" not in e.principal or e.principal.startswith(":"):
        return INVALID_REQUEST, (f"Could not parse principal from `{e.principal}` (no colon is "
                                 "found separating the principal type from the principal name)")
    if "/" in p.name:
        return UNKNOWN_SERVER_ERROR, f"ACL binding contains invalid resource name: {p.name}"
    return None
