"""Shared builders for the group coordinator tests: a coordinator on a ManualClock, request
builders and a tiny ConsumerProtocol subscription encoder."""

from __future__ import annotations

import itertools
import struct

from groups import GroupConfig, GroupCoordinator
from log.clock import ManualClock
from wire.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

GROUP = "grp"
SESSION_MS = 10_000
REBALANCE_MS = 30_000


def subscription(*topics: str, version: int = 0) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics[], user_data (null)."""
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        b = t.encode()
        out += struct.pack(">h", len(b)) + b
    return out + struct.pack(">i", -1)


def make(delay_ms: int = 0, **overrides) -> tuple[GroupCoordinator, ManualClock]:
    clock = ManualClock(1_000_000)
    counter = itertools.count(1)
    config = GroupConfig(group_initial_rebalance_delay_ms=delay_ms, **overrides)
    return GroupCoordinator(config, clock, new_uuid=lambda: f"u{next(counter)}"), clock


DEFAULT_PROTOCOLS = (("range", subscription("t")),)


def join_req(member_id: str = "", *, group: str = GROUP, instance_id: str | None = None,
             protocols=DEFAULT_PROTOCOLS, session_ms: int = SESSION_MS,
             rebalance_ms: int = REBALANCE_MS, protocol_type: str = "consumer"):
    return JoinGroupRequest(
        group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms,
        member_id=member_id, group_instance_id=instance_id, protocol_type=protocol_type,
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m)
                   for n, m in protocols])


def sync_req(member_id: str, generation: int, assignments: dict[str, bytes] | None = None, *,
             group: str = GROUP, instance_id: str | None = None, protocol_type=None,
             protocol_name=None):
    return SyncGroupRequest(
        group_id=group, generation_id=generation, member_id=member_id,
        group_instance_id=instance_id, protocol_type=protocol_type, protocol_name=protocol_name,
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                     for m, a in (assignments or {}).items()])


def hb_req(member_id: str, generation: int, *, group: str = GROUP, instance_id=None):
    return HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                            group_instance_id=instance_id)


def leave_req(*members: tuple[str, str | None], group: str = GROUP):
    return LeaveGroupRequest(group_id=group, members=[
        LeaveGroupRequest.MemberIdentity(member_id=m, group_instance_id=i) for m, i in members])


def commit_req(offsets: dict[tuple[str, int], int], *, group: str = GROUP, generation: int = -1,
               member_id: str = "", metadata: str | None = "", retention_ms: int = -1,
               instance_id=None, leader_epoch: int = -1):
    topics: dict[str, list] = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=o, committed_metadata=metadata,
            committed_leader_epoch=leader_epoch))
    return OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
        group_instance_id=instance_id, retention_time_ms=retention_ms,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in topics.items()])


def fetch_req(topics: dict[str, list[int]] | None, *, group: str = GROUP):
    return OffsetFetchRequest(group_id=group, topics=None if topics is None else [
        OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
        for t, ps in topics.items()])


def join(coord, member_id: str = "", version: int = 7, client_id: str = "c", **kw):
    """JoinGroup; returns the Result (``.pending``)."""
    return coord.join_group(join_req(member_id, **kw), version, client_id=client_id,
                            client_host="/127.0.0.1")


def join_new_member(coord, version: int = 7, **kw):
    """Do the KIP-394 handshake (v4+) and return the pending JoinGroup of the rejoin."""
    first = join(coord, "", version, **kw).pending
    if first.done() and first.response.error_code == 79:  # static members skip KIP-394
        return join(coord, first.response.member_id, version, **kw).pending
    return first


def stable_group(coord, clock, n: int = 2, version: int = 7, **kw):
    """Bring ``n`` dynamic members to Stable; returns (member ids, generation, leader)."""
    pendings = [join_new_member(coord, version, **kw) for _ in range(n)]
    coord.poll()
    assert all(p.done() for p in pendings), pendings
    responses = [p.response for p in pendings]
    assert all(r.error_code == 0 for r in responses), responses
    ids = [r.member_id for r in responses]
    gen = responses[0].generation_id
    leader = responses[0].leader
    syncs = []
    for mid in ids:
        if mid != leader:
            syncs.append(coord.sync_group(sync_req(mid, gen), 5).pending)
    assignment = {mid: f"assign-{mid}".encode() for mid in ids}
    syncs.append(coord.sync_group(sync_req(leader, gen, assignment), 5).pending)
    assert all(s.done() and s.response.error_code == 0 for s in syncs)
    return ids, gen, leader
