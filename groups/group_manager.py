"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup for classic groups, with their timers.

A port of the classic-group half of Kafka's ``GroupMetadataManager`` (classicGroupJoin,
classicGroupSync, classicGroupHeartbeat, classicGroupLeave, completeClassicGroupJoin,
expirePendingSync, the heartbeat/session timers).  Method names follow Kafka's so its source
and tests stay a usable reference.

Group state here changes directly, as in Kafka (its classic-group records are written with
``replayRecords = false``); the records this emits are what Kafka persists: an empty
GroupMetadata record when a JoinGroup creates a group, the group's metadata and assignment
when the leader's SyncGroup completes a rebalance, an Empty group when the last member
leaves, and a static member's new member id.

Store, then propagate: the leader's SyncGroup emits the group's record with a continuation
(``result.Write.on_appended``); only once it is appended is the assignment set on the
members and the parked SyncGroups answered (Kafka's ``storeGroup`` callback).  If the append
fails, every parked SyncGroup answers the mapped error and the group rebalances again.  A
static member's new id is kept only once its record is appended.  Every parked answer is
released by the adapter after the call's records are appended (``Pending`` outbox).

Timers (``timers.Timers``, keys as in Kafka): ``heartbeat-<group>-<member>`` is a member's
session (or, for a member added by a join, the new-member join timeout; for a KIP-394
pending member id, its session timeout); ``join-<group>`` ends the join phase (rebalance
timeout, or the initial delay); ``sync-<group>`` ends the sync phase (rebalance timeout).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from groups.append_errors import group_metadata_error
from groups.classic_group import ClassicGroup, GroupError
from groups.config import GroupConfig
from groups.group_state import GroupState
from groups.member import EMPTY_ASSIGNMENT, ClassicGroupMember
from groups.pending import Pending
from groups.records import Record, group_metadata_record
from groups.responses import fix_join_for_version, join_error, sync_error
from groups.result import Write
from groups.timers import Timers
from log.clock import Clock
from wire.error_codes import ErrorCode
from wire.messages import (
    GroupMetadataValue,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = ["GroupManager", "group_metadata_value", "empty_group_metadata_value"]

E = ErrorCode
EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
    GroupState.STABLE, GroupState.DEAD,
)


def group_metadata_value(group: ClassicGroup, assignment: dict[str, bytes]) -> GroupMetadataValue:
    """Kafka's ``newGroupMetadataRecord`` value: every member with its subscription for the
    chosen protocol and its assignment."""
    members = [
        GroupMetadataValue.MemberMetadata(
            member_id=m.member_id, group_instance_id=m.group_instance_id,
            client_id=m.client_id, client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms, session_timeout=m.session_timeout_ms,
            subscription=m.metadata(group.protocol_name), assignment=assignment[m.member_id],
        )
        for m in group.members.values()
    ]
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "", generation=group.generation_id,
        protocol=group.protocol_name, leader=group.leader_id,
        current_state_timestamp=_ts(group), members=members,
    )


def empty_group_metadata_value(group: ClassicGroup) -> GroupMetadataValue:
    """Kafka's ``newEmptyGroupMetadataRecord`` value (written when a join creates a group)."""
    return GroupMetadataValue(protocol_type="", generation=0, protocol=None, leader=None,
                              current_state_timestamp=_ts(group), members=[])


def _ts(group: ClassicGroup) -> int:
    ts = group.current_state_timestamp_ms
    return -1 if ts is None else ts


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat-{group_id}-{member_id}"


def join_key(group_id: str) -> str:
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync-{group_id}"


class GroupManager:
    """Membership requests and timers over the shared ``groups`` map."""

    def __init__(
        self,
        groups: dict[str, ClassicGroup],
        config: GroupConfig,
        clock: Clock,
        timers: Timers,
        new_uuid: Callable[[], str] | None = None,
    ) -> None:
        self.groups = groups
        self.config = config
        self.clock = clock
        self.timers = timers
        self._new_uuid = new_uuid or (lambda: str(uuid.uuid4()))
        self._out: list[Write] = []
        # Parked answers completed since the last take(): released after the append.
        self.outbox: list[Pending] = []

    # -- plumbing --------------------------------------------------------------------------

    def _now(self) -> int:
        return self.clock.milliseconds()

    def take(self) -> tuple[list[Write], list[Pending]]:
        """The writes and completed answers since the last take (one call's worth)."""
        out, self._out = self._out, []
        done = self.outbox[:]
        self.outbox.clear()  # in place: every Pending holds this list
        return out, done

    def add_write(self, write: Write) -> None:
        self._out.append(write)

    def _emit(self, record: Record, group_id: str,
              on_appended: Callable[[ErrorCode], None] | None = None) -> None:
        self._out.append(Write(group_id, [record], on_appended))

    def new_pending(self, api: str, version: int) -> Pending:
        """A parked answer whose release waits for its call's records."""
        normalize = fix_join_for_version if api == "JoinGroup" else None
        return Pending(api, version, normalize, self.outbox)

    def _schedule(self, key: str, delay_ms: int, fn: Callable[[], None]) -> None:
        self.timers.schedule(key, self._now() + max(0, delay_ms), fn)

    def get_or_create(self, group_id: str, create: bool) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        if group is None and create:
            group = ClassicGroup(group_id, EMPTY, current_state_timestamp_ms=self._now())
            self.groups[group_id] = group
        return group

    # -- JoinGroup -------------------------------------------------------------------------

    def join_group(self, req: JoinGroupRequest, version: int, client_id: str,
                   client_host: str) -> Pending:
        """Kafka's ``classicGroupJoinToClassicGroup`` (the caller checked group id and
        session timeout bounds)."""
        pending = self.new_pending("JoinGroup", version)
        member_id = req.member_id
        is_unknown = member_id == ""
        is_new_group = req.group_id not in self.groups
        group = self.get_or_create(req.group_id, is_unknown)
        if group is None:
            pending.complete(join_error(member_id, E.UNKNOWN_MEMBER_ID))
            return pending
        records_before = len(self._out)
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            pending.complete(join_error("", E.GROUP_MAX_SIZE_REACHED))
        elif is_unknown:
            self._join_new_member(req, version, group, client_id, client_host, pending)
        else:
            self._join_existing_member(req, version, group, client_id, client_host, pending)
        if is_new_group and len(self._out) == records_before:
            self._emit(group_metadata_record(empty_group_metadata_value(group), group.group_id),
                       group.group_id)
        return pending

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if group.is_in(EMPTY, DEAD):
            return True
        if group.is_in(PREPARING):
            return (group.has_member(member_id) and group.member(member_id).is_awaiting_join) \
                or group.num_awaiting_join < max_size
        return group.has_member(member_id) or len(group.members) < max_size

    @staticmethod
    def _protocols(req: JoinGroupRequest) -> list[tuple[str, bytes]]:
        return [(p.name, bytes(p.metadata)) for p in req.protocols]

    @staticmethod
    def _rebalance_timeout(req: JoinGroupRequest, version: int) -> int:
        # JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout.
        return req.session_timeout_ms if version == 0 else req.rebalance_timeout_ms

    def _join_new_member(self, req, version, group, client_id, client_host, pending) -> None:
        if group.is_in(DEAD):
            pending.complete(join_error("", E.COORDINATOR_NOT_AVAILABLE))
            return
        names = [p.name for p in req.protocols]
        if not group.supports_protocols(req.protocol_type, names):
            pending.complete(join_error("", E.INCONSISTENT_GROUP_PROTOCOL))
            return
        instance_id = req.group_instance_id if version >= 5 else None
        new_member_id = f"{instance_id if instance_id is not None else client_id}-{self._new_uuid()}"
        if instance_id is not None:
            existing = group.static_member_id(instance_id)
            if existing is not None:
                self._update_static_member_then_rebalance_or_complete_join(
                    req, version, group, existing, new_member_id, pending)
            else:
                self._add_member_then_rebalance_or_complete_join(
                    req, version, group, new_member_id, client_id, client_host, pending)
        elif version >= 4:
            # KIP-394: hand out the id, keep it pending, expire it after the session timeout.
            group.add_pending_member(new_member_id)
            gid = group.group_id
            self._schedule(heartbeat_key(gid, new_member_id), req.session_timeout_ms,
                           lambda: self._expire_member_heartbeat(gid, new_member_id))
            pending.complete(join_error(new_member_id, E.MEMBER_ID_REQUIRED))
        else:
            self._add_member_then_rebalance_or_complete_join(
                req, version, group, new_member_id, client_id, client_host, pending)

    def _join_existing_member(self, req, version, group, client_id, client_host, pending) -> None:
        member_id = req.member_id
        instance_id = req.group_instance_id if version >= 5 else None
        names = [p.name for p in req.protocols]
        if group.is_in(DEAD):
            pending.complete(join_error(member_id, E.COORDINATOR_NOT_AVAILABLE))
        elif not group.supports_protocols(req.protocol_type, names):
            pending.complete(join_error(member_id, E.INCONSISTENT_GROUP_PROTOCOL))
        elif group.is_pending_member(member_id):
            if instance_id is not None:  # Kafka: IllegalStateException (cannot happen)
                pending.complete(join_error(member_id, E.UNKNOWN_SERVER_ERROR))
                return
            self._add_member_then_rebalance_or_complete_join(
                req, version, group, member_id, client_id, client_host, pending)
        else:
            try:
                group.validate_member(member_id, instance_id)
            except GroupError as err:
                pending.complete(join_error(member_id, err.code))
                return
            member = group.member(member_id)
            protocols = self._protocols(req)
            if group.is_in(PREPARING):
                self._update_member_then_rebalance_or_complete_join(req, version, group, member,
                                                                    pending)
            elif group.is_in(COMPLETING):
                if member.matches(protocols):
                    # Same metadata (the member lost the JoinGroup response): answer again.
                    pending.complete(self._join_response(
                        group, member_id, with_members=group.is_leader(member_id)))
                else:
                    self._update_member_then_rebalance_or_complete_join(req, version, group,
                                                                        member, pending)
            elif group.is_in(STABLE):
                if group.is_leader(member_id) or not member.matches(protocols):
                    # The leader's JoinGroup forces a rebalance (e.g. topic metadata changed).
                    self._update_member_then_rebalance_or_complete_join(req, version, group,
                                                                        member, pending)
                else:
                    pending.complete(self._join_response(group, member_id, with_members=False))
            else:
                pending.complete(join_error(member_id, E.UNKNOWN_MEMBER_ID))

    def _join_response(self, group: ClassicGroup, member_id: str, *, with_members: bool,
                       leader: str | None = None) -> JoinGroupResponse:
        members = []
        if with_members:
            members = [
                JoinGroupResponse.JoinGroupResponseMember(
                    member_id=m.member_id, group_instance_id=m.group_instance_id,
                    metadata=m.metadata(group.protocol_name))
                for m in group.members.values()
            ]
        return JoinGroupResponse(
            error_code=0, generation_id=group.generation_id, protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=(group.leader_id if leader is None else leader) or "",
            skip_assignment=False, member_id=member_id, members=members)

    def _update_member_then_rebalance_or_complete_join(self, req, version, group, member,
                                                      pending) -> None:
        group.update_member(member, self._protocols(req), self._rebalance_timeout(req, version),
                            req.session_timeout_ms, pending)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _add_member_then_rebalance_or_complete_join(self, req, version, group, member_id,
                                                   client_id, client_host, pending) -> None:
        instance_id = req.group_instance_id if version >= 5 else None
        member = ClassicGroupMember(
            member_id=member_id, group_instance_id=instance_id, client_id=client_id,
            client_host=client_host, rebalance_timeout_ms=self._rebalance_timeout(req, version),
            session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type,
            protocols=self._protocols(req), awaiting_join=pending, is_new=True)
        if group.is_in(PREPARING) and group.previous_state is EMPTY:
            group.new_member_added = True  # lets the initial delay stretch
        group.add(member)
        # A new member cannot heartbeat while its JoinGroup is parked: bound it by the
        # new-member join timeout instead of the session timeout (Kafka, KAFKA-9232).
        self._reschedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _update_static_member_then_rebalance_or_complete_join(
            self, req, version, group, old_id, new_id, pending) -> None:
        current_leader = group.leader_id
        old_member = group.member(old_id)
        old_settings = (old_member.protocols, old_member.rebalance_timeout_ms,
                        old_member.session_timeout_ms)
        new_member = group.replace_static_member(req.group_instance_id, old_id, new_id)
        self.timers.cancel(heartbeat_key(group.group_id, old_id))
        self._reschedule_heartbeat(group, new_member)
        group.update_member(new_member, self._protocols(req), self._rebalance_timeout(req, version),
                            req.session_timeout_ms, pending)
        if group.is_in(STABLE):
            if (group.protocol_name or "") == group.select_protocol():
                # KIP-345: same protocol choice -> no rebalance; persist the new member id.
                # The answer names the leader as it was before the replacement, so a static
                # leader that restarted acts as a follower and just syncs its assignment back
                # (JoinGroup v9+ would instead skip the assignment for the leader).
                self._emit(group_metadata_record(
                    group_metadata_value(group, group.group_assignment()), group.group_id),
                    group.group_id, self._on_static_member_stored(
                        group, req.group_instance_id, old_id, new_member, old_settings,
                        current_leader, pending))
            else:
                self._maybe_prepare_rebalance_or_complete_join(group)
        elif group.is_in(COMPLETING):
            # The leader may already be assigning with the old id: rebalance.
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    def _on_static_member_stored(self, group: ClassicGroup, instance_id: str, old_id: str,
                                 new_member: ClassicGroupMember, old_settings, current_leader,
                                 pending: Pending) -> Callable[[ErrorCode], None]:
        """Kafka's callback in ``updateStaticMemberThenRebalanceOrCompleteJoin``: answer the
        join once the new member id is stored; if it was not, go back to the old id (the
        record on disk still names it) and answer the mapped error."""
        new_id = new_member.member_id

        def on_appended(append_error: ErrorCode) -> None:
            if group.member_or_none(new_id) is not new_member:
                return  # replaced or removed meanwhile: its parked join was answered then
            if append_error is E.NONE:
                group.complete_join(new_member, self._join_response(
                    group, new_id, with_members=False, leader=current_leader))
                return
            protocols, rebalance_ms, session_ms = old_settings
            group.update_member(new_member, protocols, rebalance_ms, session_ms, None)
            self.timers.cancel(heartbeat_key(group.group_id, new_id))
            old_member = group.replace_static_member(instance_id, new_id, old_id)
            self._reschedule_heartbeat(group, old_member)
            pending.complete(JoinGroupResponse(
                error_code=int(group_metadata_error(append_error)), member_id="",
                generation_id=group.generation_id, protocol_type=group.protocol_type,
                protocol_name=group.protocol_name, leader=current_leader or "",
                skip_assignment=False, members=[]))

        return on_appended

    # -- rebalance -------------------------------------------------------------------------

    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if group.is_in(PREPARING) and group.previous_state is not EMPTY \
                and group.has_all_members_joined():
            self._complete_join(group)

    def _prepare_rebalance(self, group: ClassicGroup) -> None:
        if group.is_in(COMPLETING):
            self._reset_and_propagate_assignment_with_error(group, E.REBALANCE_IN_PROGRESS)
        group.pending_sync_members.clear()
        self.timers.cancel(sync_key(group.group_id))
        initial = group.is_in(EMPTY)
        gid = group.group_id
        if initial:
            delay_ms = self.config.group_initial_rebalance_delay_ms
            remaining_ms = max(group.rebalance_timeout_ms() - delay_ms, 0)
            self._schedule(join_key(gid), delay_ms,
                           lambda: self._try_complete_initial_rebalance(gid, delay_ms, remaining_ms))
        group.transition_to(PREPARING, self._now())
        if not initial:
            if group.has_all_members_joined():
                self._complete_join(group)
            else:
                self._schedule(join_key(gid), group.rebalance_timeout_ms(),
                               lambda: self._complete_join_by_id(gid))

    def _try_complete_initial_rebalance(self, group_id: str, delay_ms: int,
                                        remaining_ms: int) -> None:
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self._schedule(join_key(group_id), new_delay,
                           lambda: self._try_complete_initial_rebalance(group_id, new_delay,
                                                                         new_remaining))
        else:
            self._complete_join(group)

    def _complete_join_by_id(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        """Kafka's ``completeClassicGroupJoin``."""
        gid = group.group_id
        self.timers.cancel(join_key(gid))
        for failed in [m for m in group.not_yet_rejoined() if not m.is_static]:
            group.remove(failed.member_id)
            self.timers.cancel(heartbeat_key(gid, failed.member_id))
        if group.is_in(DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: try again after another rebalance timeout; sessions will
            # expire the silent members meanwhile.
            self._schedule(join_key(gid), group.rebalance_timeout_ms(),
                           lambda: self._complete_join_by_id(gid))
            return
        group.init_next_generation(self._now())
        if group.is_in(EMPTY):
            self._emit(group_metadata_record(group_metadata_value(group, {}), gid), gid)
            return
        for member in list(group.members.values()):
            response = self._join_response(group, member.member_id,
                                           with_members=group.is_leader(member.member_id))
            group.complete_join(member, response)
            self._reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        self._schedule(sync_key(gid), group.rebalance_timeout_ms(),
                       lambda: self._expire_pending_sync(gid, generation))

    def _expire_pending_sync(self, group_id: str, generation_id: int) -> None:
        group = self.groups.get(group_id)
        if group is None or generation_id != group.generation_id:
            return
        if group.is_in(COMPLETING, STABLE) and group.pending_sync_members:
            for member_id in list(group.pending_sync_members):
                group.remove(member_id)
                self.timers.cancel(heartbeat_key(group_id, member_id))
            self._prepare_rebalance(group)

    def _reset_and_propagate_assignment_with_error(self, group: ClassicGroup, code: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = EMPTY_ASSIGNMENT
        self._propagate_assignment(group, code)

    def _set_and_propagate_assignment(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, EMPTY_ASSIGNMENT)
        self._propagate_assignment(group, E.NONE)

    def _propagate_assignment(self, group: ClassicGroup, code: ErrorCode) -> None:
        ok = code is E.NONE
        for member in list(group.members.values()):
            response = SyncGroupResponse(
                error_code=int(code),
                protocol_type=group.protocol_type if ok else None,
                protocol_name=group.protocol_name if ok else None,
                assignment=member.assignment if ok else EMPTY_ASSIGNMENT)
            if group.complete_sync(member, response):
                self._reschedule_heartbeat(group, member)

    # -- heartbeats and member expiry ------------------------------------------------------

    def _reschedule_heartbeat(self, group: ClassicGroup, member: ClassicGroupMember,
                              timeout_ms: int | None = None) -> None:
        gid, mid = group.group_id, member.member_id
        self._schedule(heartbeat_key(gid, mid),
                       member.session_timeout_ms if timeout_ms is None else timeout_ms,
                       lambda: self._expire_member_heartbeat(gid, mid))

    def _expire_member_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.is_in(DEAD):
            return
        if group.is_pending_member(member_id):
            group.remove(member_id)
            if group.is_in(PREPARING) and group.has_all_members_joined():
                self._complete_join(group)
        elif group.has_member(member_id):
            member = group.member(member_id)
            if not member.has_satisfied_heartbeat():
                self._remove_member_and_update_group(group, member)

    def _remove_member_and_update_group(self, group: ClassicGroup,
                                        member: ClassicGroupMember) -> None:
        # A new member may time out with its JoinGroup parked: answer it so it can retry.
        group.complete_join(member, join_error("", E.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.is_in(STABLE, COMPLETING):
            self._maybe_prepare_rebalance_or_complete_join(group)
        elif group.is_in(PREPARING) and group.has_all_members_joined():
            self._complete_join(group)

    # -- SyncGroup -------------------------------------------------------------------------

    def sync_group(self, req: SyncGroupRequest, version: int) -> Pending:
        """Kafka's ``classicGroupSync``."""
        pending = self.new_pending("SyncGroup", version)
        group = self.groups.get(req.group_id)
        if group is None or group.is_in(EMPTY):
            pending.complete(sync_error(E.UNKNOWN_MEMBER_ID))
            return pending
        error = self._validate_sync(group, req, version)
        if error is not None:
            pending.complete(sync_error(error))
        elif group.is_in(PREPARING):
            pending.complete(sync_error(E.REBALANCE_IN_PROGRESS))
        elif group.is_in(COMPLETING):
            member = group.member(req.member_id)
            member.awaiting_sync = pending
            self._remove_pending_sync_member(group, req.member_id)
            if group.is_leader(req.member_id):
                assignment = {a.member_id: bytes(a.assignment) for a in req.assignments}
                for member_id in group.members:
                    assignment.setdefault(member_id, EMPTY_ASSIGNMENT)
                self._emit(group_metadata_record(group_metadata_value(group, assignment),
                                                 group.group_id), group.group_id,
                           self._on_assignment_stored(group, assignment))
        elif group.is_in(STABLE):
            self._remove_pending_sync_member(group, req.member_id)
            member = group.member(req.member_id)
            pending.complete(SyncGroupResponse(
                error_code=0, protocol_type=group.protocol_type,
                protocol_name=group.protocol_name, assignment=member.assignment))
        return pending

    def _on_assignment_stored(self, group: ClassicGroup,
                              assignment: dict[str, bytes]) -> Callable[[ErrorCode], None]:
        """Kafka's ``storeGroup`` callback in ``classicGroupSync``: another member may have
        joined (or the group been deleted) while the record was being appended, so act only
        if the group is still completing the same generation."""
        generation = group.generation_id

        def on_appended(append_error: ErrorCode) -> None:
            if self.groups.get(group.group_id) is not group or not group.is_in(COMPLETING) \
                    or group.generation_id != generation:
                return
            if append_error is E.NONE:
                self._set_and_propagate_assignment(group, assignment)
                group.transition_to(STABLE, self._now())
            else:
                self._reset_and_propagate_assignment_with_error(
                    group, group_metadata_error(append_error))
                self._maybe_prepare_rebalance_or_complete_join(group)

        return on_appended

    def _validate_sync(self, group: ClassicGroup, req: SyncGroupRequest, version: int):
        if group.is_in(DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(req.member_id, req.group_instance_id if version >= 3 else None)
        except GroupError as err:
            return err.code
        if req.generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        if version >= 5 and (
            _inconsistent(req.protocol_type, group.protocol_type)
            or _inconsistent(req.protocol_name, group.protocol_name)
        ):
            return E.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.is_in(COMPLETING, STABLE) or not group.pending_sync_members:
            self.timers.cancel(sync_key(group.group_id))

    # -- Heartbeat -------------------------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest, version: int) -> HeartbeatResponse:
        group = self.groups.get(req.group_id)
        if group is None:
            return HeartbeatResponse(error_code=int(E.UNKNOWN_MEMBER_ID))
        if group.is_in(DEAD):
            return HeartbeatResponse(error_code=int(E.COORDINATOR_NOT_AVAILABLE))
        try:
            group.validate_member(req.member_id, req.group_instance_id if version >= 3 else None)
        except GroupError as err:
            return HeartbeatResponse(error_code=int(err.code))
        if req.generation_id != group.generation_id:
            return HeartbeatResponse(error_code=int(E.ILLEGAL_GENERATION))
        if group.is_in(EMPTY):
            return HeartbeatResponse(error_code=int(E.UNKNOWN_MEMBER_ID))
        self._reschedule_heartbeat(group, group.member(req.member_id))
        if group.is_in(PREPARING):
            return HeartbeatResponse(error_code=int(E.REBALANCE_IN_PROGRESS))
        return HeartbeatResponse(error_code=0)

    def touch_member(self, group: ClassicGroup, member_id: str) -> None:
        """An accepted OffsetCommit from a member counts as a heartbeat."""
        if group.has_member(member_id):
            self._reschedule_heartbeat(group, group.member(member_id))

    # -- LeaveGroup ------------------------------------------------------------------------

    def leave_group(self, req: LeaveGroupRequest, version: int) -> LeaveGroupResponse:
        """Kafka's ``classicGroupLeave``; v0-2 carry one member id, v3+ a batch."""
        identities = (
            list(req.members) if version >= 3
            else [LeaveGroupRequest.MemberIdentity(member_id=req.member_id)]
        )
        group = self.groups.get(req.group_id)
        if group is None or group.is_in(DEAD):
            code = E.UNKNOWN_MEMBER_ID if group is None else E.COORDINATOR_NOT_AVAILABLE
            return LeaveGroupResponse(error_code=int(code), members=[])
        results: list[LeaveGroupResponse.MemberResponse] = []
        removed_any = False
        for ident in identities:
            mid, iid = ident.member_id, ident.group_instance_id
            code = E.NONE
            if mid == "":
                # Admin removal by group.instance.id (KIP-345).
                existing = group.static_member_id(iid)
                if existing is not None:
                    self._remove_current_member(group, existing)
                    removed_any = True
                else:
                    code = E.UNKNOWN_MEMBER_ID
            elif group.is_pending_member(mid):
                group.remove(mid)
                self.timers.cancel(heartbeat_key(group.group_id, mid))
                removed_any = True
            else:
                try:
                    group.validate_member(mid, iid)
                except GroupError as err:
                    code = err.code
                else:
                    self._remove_current_member(group, mid)
                    removed_any = True
            results.append(LeaveGroupResponse.MemberResponse(
                member_id=mid, group_instance_id=iid, error_code=int(code)))
        if removed_any:
            if group.is_in(STABLE, COMPLETING):
                self._maybe_prepare_rebalance_or_complete_join(group)
            elif group.is_in(PREPARING) and group.has_all_members_joined():
                self._complete_join(group)
        if version >= 3:
            return LeaveGroupResponse(error_code=0, members=results)
        return LeaveGroupResponse(error_code=results[0].error_code, members=[])

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.member(member_id)
        self.timers.cancel(heartbeat_key(group.group_id, member_id))
        group.complete_join(member, join_error("", E.UNKNOWN_MEMBER_ID))
        group.remove(member_id)

    # -- deletion --------------------------------------------------------------------------

    def drop_group_timers(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.timers.cancel(join_key(gid))
        self.timers.cancel(sync_key(gid))
        for mid in list(group.members) + list(group.pending_join_members):
            self.timers.cancel(heartbeat_key(gid, mid))


def _inconsistent(requested: str | None, actual: str | None) -> bool:
    """SyncGroup v5: a protocol type/name that is given must match the group's."""
    return requested is not None and requested != actual
