"""Shared builders for the group coordinator tests: a coordinator on a ManualClock, request
builders and a tiny ConsumerProtocol subscription encoder."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable

from groups import GroupConfig, GroupCoordinator, Record, Result
from groups.result import Write
from log.clock import ManualClock
from wire.error_codes import ErrorCode
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


class StoringCoordinator:
    """A ``GroupCoordinator`` driven as the broker drives it: every call's writes are
    appended to ``log`` (a list standing for ``__consumer_offsets``) and the outcome reported
    with ``Result.appended`` before the Result is handed back, follow-ups included.

    ``fail_with``: None (appends succeed), an ``ErrorCode`` every append answers, or a
    function ``(write) -> ErrorCode`` (``ErrorCode.NONE`` for success).  A failed write's
    records are not added to ``log``.  ``hold()`` keeps the writes unsettled instead
    (``held``), to look at the state while an append is in flight.  Every other attribute is
    the coordinator's."""

    RESULT_METHODS = frozenset({
        "join_group", "sync_group", "heartbeat", "leave_group", "offset_commit",
        "offset_fetch", "offset_delete", "delete_groups", "list_groups", "describe_groups",
        "poll", "on_timer", "unload_partition", "txn_offset_commit", "on_partitions_deleted",
        "consumer_group_heartbeat", "consumer_group_describe",
    })

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator
        self.log: list[Record] = []
        self.fail_with: ErrorCode | Callable[[Write], ErrorCode] | None = None
        self.held: list[Result] | None = None

    def hold(self) -> None:
        self.held = []

    def settle(self, result: Result) -> Result:
        """Append ``result``'s writes and report them, then any follow-up's."""
        current: Result | None = result
        while current is not None:
            if self.held is not None and current.writes:
                self.held.append(current)
                return result
            errors = []
            for write in current.writes:
                error = self._outcome(write)
                if error is ErrorCode.NONE:
                    write.base_offset = len(self.log)  # as the broker's adapter sets it
                    self.log.extend(write.records)
                errors.append(error)
            current = current.appended(errors)
        return result

    def release_held(self) -> None:
        held, self.held = self.held or [], None
        for result in held:
            self.settle(result)

    def _outcome(self, write: Write) -> ErrorCode:
        if self.fail_with is None:
            return ErrorCode.NONE
        if isinstance(self.fail_with, ErrorCode):
            return self.fail_with
        return self.fail_with(write)

    def __getattr__(self, name: str):
        attr = getattr(self.coordinator, name)
        if name not in self.RESULT_METHODS:
            return attr

        def call(*args, **kwargs):
            return self.settle(attr(*args, **kwargs))

        return call


def make(delay_ms: int = 0, **overrides) -> tuple[StoringCoordinator, ManualClock]:
    clock = ManualClock(1_000_000)
    counter = itertools.count(1)
    config = GroupConfig(group_initial_rebalance_delay_ms=delay_ms, **overrides)
    coord = GroupCoordinator(config, clock, new_uuid=lambda: f"u{next(counter)}")
    return StoringCoordinator(coord), clock


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
