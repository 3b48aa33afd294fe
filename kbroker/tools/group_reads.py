"""What ``kbroker consumer-groups`` and ``kbroker console-consumer`` read about groups, as
Kafka's admin client reads it: a group described with ConsumerGroupDescribe (API 69) first
and DescribeGroups when the coordinator answers GROUP_ID_NOT_FOUND or does not serve API 69,
the listings of ListGroups (with v5's filters), and committed offsets (OffsetFetch).  Also the
``%-Ns`` column format the printed tables share (Java's padding)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbroker.tools.client import Client, KafkaError, ToolError
from kbroker.tools.common import (
    java_hash_order,
    java_string_hash,
)
from wire.codec import decode_at
from wire.error_codes import ErrorCode
from wire.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerProtocolAssignment,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetFetchRequest,
)

MISSING = "-"

# org.apache.kafka.common.GroupState / GroupType as the tool prints them (toString); parsed
# case-insensitively, as GroupState.parse / GroupType.parse do
STATES = {s.lower(): s for s in ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty",
                                 "Assigning", "Reconciling")}
TYPES = {"classic": "Classic", "consumer": "Consumer"}
# Kafka's exception (class, default message) for the errors DeleteGroups answers per group
@dataclass
class Group:
    """A described group.  Members are dicts: id, instance, client, host, assignment
    ([(topic, partition)]), and for a consumer group epoch (the member epoch), target (its
    target assignment) and upgraded (ConsumerGroupDescribe v1's member type: False for a
    member of the classic protocol, None when unknown)."""

    group_id: str
    state: str
    protocol_type: str
    assignor: str
    coordinator: int
    members: list[dict[str, Any]]
    group_type: str = "classic"
    group_epoch: int | None = None
    assignment_epoch: int | None = None


@dataclass
class Listing:
    group_id: str
    group_type: str   # "Classic", "Consumer" or "Unknown" (GroupType.toString)
    state: str        # GroupState.toString ("Unknown" when not listed)


def decode_assignment(data: bytes | None) -> list[tuple[str, int]]:
    """A consumer's assignment (ConsumerProtocolAssignment: int16 version, then the body)."""
    if not data or len(data) < 2:
        return []
    version = min(int.from_bytes(data[:2], "big", signed=True), 3)
    a, _ = decode_at(ConsumerProtocolAssignment, data, version, 2)
    return [(tp.topic, p) for tp in a.assigned_partitions for p in tp.partitions]


def list_groups(client: Client, with_state: bool = False) -> list[tuple[str, str]]:
    """(group id, state) of every consumer group on every broker (``--list``'s groups)."""
    return [(g.group_id, g.state) for g in list_listings(client, regular=True)]


def list_listings(client: Client, states: list[str] | None = None, types: list[str] | None = None,
                  regular: bool = False) -> list[Listing]:
    """Kafka's ``Admin.listGroups(ListGroupsOptions.forConsumerGroups()...)``: ListGroups to every
    broker with the states and types filters (``regular``: classic and consumer groups, the
    plain ``--list``), groups of protocol type "" or "consumer" only, in the iteration order of
    the admin client's HashMap of listings (by group id)."""
    client.metadata([])
    found: dict[str, Listing] = {}
    for node in sorted(client.nodes):
        v = client.version(16, node)
        type_filter = ["classic", "consumer"] if regular else list(types or [])
        req = ListGroupsRequest(states_filter=list(states or []) if v >= 4 else [],
                                types_filter=type_filter if v >= 5 else [])
        resp, v = client.send(req, node=node)
        if resp.error_code:
            raise KafkaError(resp.error_code, what="ListGroups")
        for g in resp.groups:
            if g.protocol_type not in ("consumer", ""):
                continue
            group_type = TYPES.get(g.group_type.lower(), "Unknown") if v >= 5 and g.group_type else "Unknown"
            state = STATES.get(g.group_state.lower(), "Unknown") if v >= 4 else "Unknown"
            if v < 4 and states and state.lower() not in {s.lower() for s in states}:
                continue
            found[g.group_id] = Listing(g.group_id, group_type, state)
    return [found[g] for g in java_hash_order(list(found), java_string_hash)]


def _partitions(assignment: Any) -> list[tuple[str, int]]:
    return [(tp.topic_name, p) for tp in assignment.topic_partitions for p in tp.partitions]


def describe_group(client: Client, group_id: str) -> Group:
    """Kafka's ``Admin.describeConsumerGroups`` for one group: ConsumerGroupDescribe, then
    DescribeGroups if the group is not a consumer group (or API 69 is not served)."""
    node = client.find_coordinator(group_id)
    if client.supports(ConsumerGroupDescribeRequest.API_KEY, node):
        resp, v = client.send(ConsumerGroupDescribeRequest(group_ids=[group_id],
                                                           include_authorized_operations=False), node=node)
        d = resp.groups[0]
        if not d.error_code:
            members = [{"id": m.member_id, "instance": m.instance_id or "", "client": m.client_id,
                        "host": m.client_host, "assignment": _partitions(m.assignment),
                        "target": _partitions(m.target_assignment), "epoch": m.member_epoch,
                        "upgraded": None if v < 1 or m.member_type < 0 else m.member_type == 1}
                       for m in d.members]
            return Group(group_id, STATES.get(d.group_state.lower(), d.group_state), "consumer",
                         d.assignor_name, node, members, "consumer", d.group_epoch, d.assignment_epoch)
        if d.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
            raise KafkaError(d.error_code, d.error_message, what=f"ConsumerGroupDescribe {group_id}")
    resp, _ = client.send(DescribeGroupsRequest(groups=[group_id], include_authorized_operations=False),
                          node=node)
    g = resp.groups[0]
    if g.error_code:
        raise KafkaError(g.error_code, what=f"DescribeGroups {group_id}")
    if g.protocol_type not in ("consumer", ""):
        raise ToolError(f"java.lang.IllegalArgumentException: GroupId {group_id} is not a consumer group "
                        f"({g.protocol_type}).")
    members = [{"id": m.member_id, "instance": m.group_instance_id or "", "client": m.client_id,
                "host": m.client_host,
                "assignment": decode_assignment(m.member_assignment) if g.protocol_type == "consumer" else [],
                "target": None, "epoch": None, "upgraded": None}
               for m in g.members]
    return Group(group_id, g.group_state, g.protocol_type, g.protocol_data, node, members)


def committed_offsets(client: Client, group_id: str, node: int) -> dict[tuple[str, int], int]:
    """Every committed offset of the group (OffsetFetch with all topics); -1 entries dropped."""
    return {tp: offset for tp, (offset, _) in committed_with_epochs(client, group_id, node).items()}


def committed_with_epochs(client: Client, group_id: str, node: int
                          ) -> dict[tuple[str, int], tuple[int, int | None]]:
    """Every committed offset of the group with its leader epoch (None when not committed)."""
    v = client.version(9, node)
    if v >= 8:
        req = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=group_id, member_id=None, member_epoch=-1, topics=None)], require_stable=True)
        resp, _ = client.send(req, node=node)
        grp = resp.groups[0]
        if grp.error_code:
            raise KafkaError(grp.error_code, what=f"OffsetFetch {group_id}")
        topics = grp.topics
    else:
        req = OffsetFetchRequest(group_id=group_id, topics=None, require_stable=True)
        resp, v = client.send(req, node=node)
        if getattr(resp, "error_code", 0):
            raise KafkaError(resp.error_code, what=f"OffsetFetch {group_id}")
        topics = resp.topics
    out = {}
    for t in topics:
        for p in t.partitions:
            if not p.error_code and p.committed_offset >= 0:
                epoch = p.committed_leader_epoch if v >= 5 and p.committed_leader_epoch >= 0 else None
                out[(t.name, p.partition_index)] = (p.committed_offset, epoch)
    return out


def fmt_columns(widths: list[int | None], values: list[Any]) -> str:
    """Java's ``%-Ns`` joined by spaces; width None is a bare ``%s``."""
    return " ".join(str(v) if w is None else f"{v!s:<{w}}" for w, v in zip(widths, values, strict=True))
