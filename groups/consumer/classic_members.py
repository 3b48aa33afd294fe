"""Members that speak the classic protocol inside a consumer group (online migration, KIP-848):
Kafka's ``classicGroupJoinToConsumerGroup``, ``classicGroupSyncToConsumerGroup``,
``classicGroupHeartbeatToConsumerGroup`` and ``classicGroupLeaveToConsumerGroup``.

Such a member is a consumer-group member like the others; the coordinator assigns it its
partitions, and the classic calls carry what the consumer protocol's heartbeat would:

* JoinGroup: its subscription (ConsumerProtocolSubscription: topics, owned partitions,
  rack) updates the member as a heartbeat does, the member is reconciled with the owned
  partitions it reports (an eager client reports none: it revoked everything), and the
  answer is its member epoch as the generation, with no member list (it is never the
  leader).
* SyncGroup: the answer is the member's current assignment in ConsumerProtocolAssignment
  bytes; REBALANCE_IN_PROGRESS while a newer target waits for it.
* Heartbeat: REBALANCE_IN_PROGRESS when the member is behind the target assignment, has
  partitions to revoke, or waits for partitions another member still owns and could take
  some now: the client then rejoins, which is its reconciliation step.
* LeaveGroup: the members named leave (fenced), as a consumer-protocol leave.

Timers: a member must JoinGroup within its rebalance timeout after being told to rejoin,
and SyncGroup within it after a JoinGroup, or it is fenced; its session is its classic
session timeout.
"""

from __future__ import annotations

from groups.consumer import records as R
from groups.consumer.conversion import (
    MalformedProtocol,
    decode_subscription,
    encode_assignment,
    subscription_version,
)
from groups.consumer.errors import GroupApiError
from groups.consumer.group import ConsumerGroup
from groups.consumer.heartbeat import ConsumerGroupHeartbeats, classic_join_key, classic_sync_key
from groups.consumer.member import ClassicProtocol, ConsumerGroupMember, MemberState
from groups.records import Record
from wire.error_codes import ErrorCode
from wire.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = ["classic_join", "classic_sync", "classic_heartbeat", "classic_leave"]

E = ErrorCode
CONSUMER_PROTOCOL_TYPE = "consumer"


def _validate_member(group: ConsumerGroup, member_id: str, instance_id: str | None
                     ) -> ConsumerGroupMember:
    """Kafka's ``validateConsumerGroupMember``."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise GroupApiError(E.UNKNOWN_MEMBER_ID,
                                f"Member {member_id} is not a member of group {group.group_id}.")
        return member
    member = group.static_member(instance_id)
    if member is None:
        raise GroupApiError(E.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is "
                            f"not a member of group {group.group_id}.")
    if member.member_id != member_id:
        raise GroupApiError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                            f"{instance_id} was fenced by member {member.member_id}.")
    return member


def _supports(group: ConsumerGroup, protocol_type: str, names: list[str]) -> bool:
    """Kafka's ``ConsumerGroup.supportsClassicProtocols``: type ``consumer`` and, when the
    group has classic members, a protocol name every one of them shares."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    classic = [m for m in group.members.values() if m.classic_protocols]
    if not classic:
        return bool(names)
    common = set(p.name for p in classic[0].classic_protocols or ())
    for m in classic[1:]:
        common &= {p.name for p in m.classic_protocols or ()}
    return bool(common & set(names))


def classic_join(hb: ConsumerGroupHeartbeats, group: ConsumerGroup, req: JoinGroupRequest,
                 version: int, client_id: str, client_host: str
                 ) -> tuple[JoinGroupResponse, list[R.Change], list[Record]]:
    """A JoinGroup into a consumer group (the caller checked group id and session timeout)."""
    if hb.config.consumer_migration_policy == "disabled":
        raise GroupApiError(E.INCONSISTENT_GROUP_PROTOCOL,
                            f"Cannot join the consumer group {group.group_id} with the classic "
                            "protocol because the group migration is disabled.")
    now = hb.clock.milliseconds()
    unknown = req.member_id == ""
    member_id = hb.new_member_id() if unknown else req.member_id
    if len(group.members) >= hb.config.consumer_max_size and member_id not in group.members:
        raise GroupApiError(E.GROUP_MAX_SIZE_REACHED,
                            "The consumer group has reached its maximum capacity of "
                            f"{hb.config.consumer_max_size} members.")
    protocols = [(p.name, bytes(p.metadata)) for p in req.protocols]
    if not _supports(group, req.protocol_type, [n for n, _ in protocols]):
        raise GroupApiError(E.INCONSISTENT_GROUP_PROTOCOL,
                            f"Member {member_id}'s protocols are not supported.")
    if unknown and version >= 4 and req.group_instance_id is None:
        # KIP-394: the member comes back with the id it is given
        return JoinGroupResponse(error_code=int(E.MEMBER_ID_REQUIRED), member_id=member_id,
                                 generation_id=-1, protocol_name=None, leader="",
                                 members=[]), [], []
    changes: list[R.Change] = []
    if req.group_instance_id is None:
        member = group.members.get(member_id) or ConsumerGroupMember(member_id)
    else:
        existing = group.static_member(req.group_instance_id)
        if existing is None:
            member = group.members.get(member_id) or ConsumerGroupMember(member_id)
        elif existing.member_id == member_id:
            member = existing
        elif not unknown:
            raise GroupApiError(E.FENCED_INSTANCE_ID,
                                f"Static member {member_id} with instance id "
                                f"{req.group_instance_id} was fenced by member {existing.member_id}.")
        else:
            member = existing.update(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            hb.replace_member(group, existing, member, changes)
    try:
        sub = decode_subscription(protocols[0][1])
    except MalformedProtocol:
        raise GroupApiError(E.INCONSISTENT_GROUP_PROTOCOL,
                            f"Member {member_id}'s subscription is malformed.") from None
    rebalance_timeout = req.rebalance_timeout_ms if version >= 1 else req.session_timeout_ms
    updated = member.update(
        instance_id=req.group_instance_id if req.group_instance_id is not None else member.instance_id,
        rack_id=sub.rack_id if sub.rack_id else member.rack_id,
        rebalance_timeout_ms=rebalance_timeout if rebalance_timeout != -1 else member.rebalance_timeout_ms,
        subscribed_topic_names=sub.topics, subscribed_topic_regex=None,
        client_id=client_id, client_host=client_host,
        classic_session_timeout_ms=req.session_timeout_ms,
        classic_protocols=tuple(ClassicProtocol(n, m) for n, m in protocols))
    image = hb.topics()
    owned = [(image.by_name[t].topic_id, list(p)) for t, p in sub.owned if t in image.by_name]
    reconciled = hb.subscribe_and_reconcile(group, member, updated, owned, now, changes)
    hb.timers.cancel(classic_join_key(group.group_id, member_id))
    hb.schedule_session_timeout(group.group_id, member_id, req.session_timeout_ms)
    _schedule_sync_timeout(hb, group.group_id, member_id, reconciled.rebalance_timeout_ms)
    response = JoinGroupResponse(
        error_code=0, member_id=member_id, generation_id=reconciled.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocols[0][0], leader="",
        members=[])
    return response, changes, []


def classic_sync(hb: ConsumerGroupHeartbeats, group: ConsumerGroup, req: SyncGroupRequest,
                 version: int) -> SyncGroupResponse:
    member = _validate_member(group, req.member_id, req.group_instance_id)
    _require_classic(member)
    if member.member_epoch != req.generation_id:
        raise GroupApiError(E.ILLEGAL_GENERATION,
                            f"The request generation id {req.generation_id} is not equal to the "
                            f"member epoch {member.member_epoch} of member {member.member_id}.")
    protocol = (member.classic_protocols or (ClassicProtocol("", b""),))[0].name
    if req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise GroupApiError(E.INCONSISTENT_GROUP_PROTOCOL)
    if req.protocol_name is not None and req.protocol_name != protocol:
        raise GroupApiError(E.INCONSISTENT_GROUP_PROTOCOL)
    _throw_if_rebalance_in_progress(hb, group, member)
    hb.timers.cancel(classic_sync_key(group.group_id, member.member_id))
    hb.schedule_session_timeout(group.group_id, member.member_id, member.classic_session_timeout_ms)
    return SyncGroupResponse(error_code=0, protocol_type=req.protocol_type,
                             protocol_name=req.protocol_name,
                             assignment=encode_assignment(member.assigned, hb.topics(),
                                                          subscription_version(member)))


def classic_heartbeat(hb: ConsumerGroupHeartbeats, group: ConsumerGroup,
                      req: HeartbeatRequest) -> HeartbeatResponse:
    member = _validate_member(group, req.member_id, req.group_instance_id)
    _require_classic(member)
    if member.member_epoch != req.generation_id:
        raise GroupApiError(E.ILLEGAL_GENERATION)
    hb.schedule_session_timeout(group.group_id, member.member_id, member.classic_session_timeout_ms)
    error = E.NONE
    if member.member_epoch < group.assignment_epoch \
            or member.state is MemberState.UNREVOKED_PARTITIONS \
            or (member.state is MemberState.UNRELEASED_PARTITIONS
                and not _waiting_on_unreleased_partition(group, member)):
        error = E.REBALANCE_IN_PROGRESS
        _schedule_join_timeout(hb, group.group_id, member.member_id, member.rebalance_timeout_ms)
    return HeartbeatResponse(error_code=int(error))


def classic_leave(hb: ConsumerGroupHeartbeats, group: ConsumerGroup, req: LeaveGroupRequest,
                  version: int) -> tuple[LeaveGroupResponse, list[R.Change], list[Record]]:
    identities = list(req.members) if version >= 3 else \
        [LeaveGroupRequest.MemberIdentity(member_id=req.member_id)]
    results = []
    leaving: list[ConsumerGroupMember] = []
    for ident in identities:
        code = E.NONE
        try:
            if ident.group_instance_id is None:
                member = group.members.get(ident.member_id)
                if member is None:
                    raise GroupApiError(E.UNKNOWN_MEMBER_ID)
            else:
                member = group.static_member(ident.group_instance_id)
                if member is None:
                    raise GroupApiError(E.UNKNOWN_MEMBER_ID)
                if ident.member_id and member.member_id != ident.member_id:
                    raise GroupApiError(E.FENCED_INSTANCE_ID)
            if member not in leaving:
                leaving.append(member)
        except GroupApiError as err:
            code = err.code
        results.append(LeaveGroupResponse.MemberResponse(
            member_id=ident.member_id, group_instance_id=ident.group_instance_id,
            error_code=int(code)))
    changes: list[R.Change] = []
    extra = hb.fence(group, leaving, changes)
    if version >= 3:
        return LeaveGroupResponse(error_code=0, members=results), changes, extra
    return LeaveGroupResponse(error_code=results[0].error_code, members=[]), changes, extra


def _require_classic(member: ConsumerGroupMember) -> None:
    if not member.uses_classic_protocol:
        raise GroupApiError(E.UNKNOWN_MEMBER_ID,
                            f"Member {member.member_id} does not use the classic protocol.")


def _throw_if_rebalance_in_progress(hb: ConsumerGroupHeartbeats, group: ConsumerGroup,
                                    member: ConsumerGroupMember) -> None:
    """Kafka: a classic member behind the target (and not revoking) must rejoin first."""
    if group.assignment_epoch > member.member_epoch \
            and member.state is not MemberState.UNREVOKED_PARTITIONS:
        _schedule_join_timeout(hb, group.group_id, member.member_id, member.rebalance_timeout_ms)
        raise GroupApiError(E.REBALANCE_IN_PROGRESS,
                            f"A new rebalance is triggered in group {group.group_id} and member "
                            f"{member.member_id} should rejoin to catch up.")


def _waiting_on_unreleased_partition(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Kafka's ``waitingOnUnreleasedPartition``: some target partition the member does not
    have yet is still owned by another member (rejoining now would not get it)."""
    for topic_id, partitions in group.target_of(member.member_id).items():
        have = member.assigned.get(topic_id, {})
        for p in partitions:
            if p not in have and group.current_partition_epoch(topic_id, p) != -1:
                return True
    return False


def _schedule_join_timeout(hb: ConsumerGroupHeartbeats, group_id: str, member_id: str,
                           timeout_ms: int) -> None:
    key = classic_join_key(group_id, member_id)
    if not hb.timers.is_scheduled(key):
        hb.timers.schedule(key, hb.clock.milliseconds() + max(timeout_ms, 0),
                           lambda: hb.expire(group_id, member_id,
                                             "the classic member failed to join within the "
                                             "rebalance timeout"))


def _schedule_sync_timeout(hb: ConsumerGroupHeartbeats, group_id: str, member_id: str,
                           timeout_ms: int) -> None:
    hb.timers.schedule(classic_sync_key(group_id, member_id), hb.clock.milliseconds() + max(timeout_ms, 0),
                       lambda: hb.expire(group_id, member_id,
                                         "the member failed to sync within timeout"))
