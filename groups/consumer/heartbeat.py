"""ConsumerGroupHeartbeat (API 68): joining, reconciling and leaving a consumer-protocol group.

A port of Kafka's ``GroupMetadataManager.consumerGroupHeartbeat`` / ``consumerGroupLeave``
and the checks of ``GroupCoordinatorService``.  One heartbeat, in Kafka's order:

1. validate the request (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR);
2. find or create the group (a classic group of that id: GROUP_ID_NOT_FOUND unless it is an
   empty one, which is replaced) and the member (new at epoch 0; else the epoch must be the
   member's, or its previous one with a subset of its partitions: a retried heartbeat whose
   answer was lost; else FENCED_MEMBER_EPOCH; static members by instance id);
3. update the member's subscription (a ConsumerGroupMemberMetadata record when anything
   changed); a changed topic list or a resolved regex bumps the group epoch, as does a
   change of the subscribed topics' metadata (ConsumerGroupMetadata record);
4. when the group epoch is ahead of the target assignment's, the assignor computes a new
   target (ConsumerGroupTargetAssignmentMember records for the members whose target
   changed, then ConsumerGroupTargetAssignmentMetadata);
5. reconcile the member towards its target (``reconcile.py``; a
   ConsumerGroupCurrentMemberAssignment record when it moved);
6. the session timer restarts; while partitions wait to be revoked the rebalance timer runs.

The records are applied to the group at once (``records.apply``, the same code a restart
replays) and the answer leaves after they are appended; when the append fails, the group
is put back as it was before the call (Kafka reverts its timeline snapshot) and the member
gets the mapped error.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable

from groups.append_errors import group_metadata_error
from groups.config import GroupConfig
from groups.consumer import records as R
from groups.consumer import target
from groups.consumer.errors import GroupApiError
from groups.consumer.group import ConsumerGroup
from groups.consumer.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupMember,
    MemberState,
)
from groups.consumer.reconcile import FencedMemberEpoch, reconcile
from groups.consumer.topics import EMPTY_IMAGE, TopicsImage
from groups.records import Record
from groups.result import Write
from groups.timers import Timers
from log.clock import Clock
from wire.error_codes import ErrorCode
from wire.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

__all__ = ["ConsumerGroupHeartbeats"]

E = ErrorCode
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1


class ConsumerGroupHeartbeats:
    """Every consumer-protocol group of this coordinator, and its heartbeats' logic.

    ``classic_conflict(group_id, create)`` is the classic coordinator's answer when a classic
    group holds that id: None when there is none (or ``create`` and it was an empty one,
    which it removed and whose tombstone it returns in ``take_records``), else raises."""

    def __init__(self, config: GroupConfig, clock: Clock, timers: Timers,
                 topics: Callable[[], TopicsImage] | None = None,
                 new_uuid: Callable[[], str] | None = None) -> None:
        self.config = config
        self.clock = clock
        self.timers = timers
        self.topics = topics or (lambda: EMPTY_IMAGE)
        self.groups: dict[str, ConsumerGroup] = {}
        self._new_uuid = new_uuid or (lambda: _random_member_id())
        self._writes: list[Write] = []
        self.classic_conflict: Callable[[str, bool], list[Record]] = lambda group_id, create: []
        # the coordinator's conversion of a consumer group whose remaining members all speak
        # the classic protocol (returns its records); None: never downgrade
        self.downgrade: Callable[[ConsumerGroup, set[str]], list[Record]] | None = None
        self._last_regex_refresh: dict[str, int] = {}
        self.rebalances = 0   # group epoch bumps (Kafka's consumer-group-rebalance sensor)

    # -- the coordinator's collector ------------------------------------------------------

    def new_member_id(self) -> str:
        return self._new_uuid()

    def take(self) -> list[Write]:
        writes, self._writes = self._writes, []
        return writes

    def _now(self) -> int:
        return self.clock.milliseconds()

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self.config.consumer_heartbeat_interval_ms

    def session_timeout_ms(self, group_id: str) -> int:
        return self.config.consumer_session_timeout_ms

    # -- the API ----------------------------------------------------------------------------

    def heartbeat(self, req: ConsumerGroupHeartbeatRequest, version: int, *, client_id: str = "",
                  client_host: str = "") -> tuple[ConsumerGroupHeartbeatResponse, Write | None]:
        """The answer and the write to append before it leaves (None: nothing to store)."""
        try:
            self._validate(req, version)
            before = self._snapshot(req.group_id)
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                response, changes, extra = self._leave(req)
            else:
                response, changes, extra = self._heartbeat(req, version, client_id, client_host)
        except GroupApiError as err:
            return ConsumerGroupHeartbeatResponse(error_code=int(err.code),
                                                  error_message=err.message), None
        records = extra + [R.encode(c) for c in changes]
        if not records:
            return response, None
        write = Write(req.group_id, records)
        after = self.groups.get(req.group_id)
        after_version = -1 if after is None else after.version

        def on_appended(error: ErrorCode) -> None:
            if error is E.NONE:
                return
            self._restore(req.group_id, before, after, after_version)
            response.error_code = int(group_metadata_error(error))
            response.member_epoch, response.assignment = 0, None
            response.heartbeat_interval_ms = 0

        write.on_appended = on_appended
        return response, write

    def _validate(self, req: ConsumerGroupHeartbeatRequest, version: int) -> None:
        """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
        def invalid(message: str) -> GroupApiError:
            return GroupApiError(E.INVALID_REQUEST, message)

        if (version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or req.member_epoch > 0
                or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH) and not req.member_id:
            raise invalid("MemberId can't be empty.")
        if not req.group_id:
            raise invalid("GroupId can't be empty.")
        if req.instance_id is not None and not req.instance_id:
            raise invalid("InstanceId can't be empty.")
        if req.rack_id is not None and not req.rack_id:
            raise invalid("RackId can't be empty.")
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be "
                              "non-null when (re-)joining.")
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if req.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        assignors = self.config.consumer_assignors
        if req.server_assignor is not None and req.server_assignor not in assignors:
            raise GroupApiError(E.UNSUPPORTED_ASSIGNOR,
                                f"ServerAssignor {req.server_assignor} is not supported. "
                                f"Supported assignors: {', '.join(assignors)}.")

    # -- joining and heartbeating -----------------------------------------------------------

    def _group(self, group_id: str, create: bool, extra: list[Record]) -> ConsumerGroup:
        """Kafka's ``getOrMaybeCreateConsumerGroup`` (a new group exists once its first
        record is applied)."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        extra.extend(self.classic_conflict(group_id, create))
        group = self.groups.get(group_id)   # an upgraded classic group
        if group is not None:
            return group
        if not create:
            raise GroupApiError(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        return ConsumerGroup(group_id)

    def _apply(self, group: ConsumerGroup, changes: list[R.Change], change: R.Change) -> None:
        if group.group_id not in self.groups and change[2] is not None:
            self.groups[group.group_id] = group
        R.apply(self.groups, change)
        changes.append(change)

    def _heartbeat(self, req: ConsumerGroupHeartbeatRequest, version: int, client_id: str,
                   client_host: str) -> tuple[ConsumerGroupHeartbeatResponse, list[R.Change],
                                              list[Record]]:
        now = self._now()
        group_id = req.group_id
        joining = req.member_epoch == 0
        extra: list[Record] = []
        group = self._group(group_id, joining, extra)
        member_id = req.member_id or self._new_uuid()
        if len(group.members) >= self.config.consumer_max_size and member_id not in group.members:
            raise GroupApiError(E.GROUP_MAX_SIZE_REACHED,
                                "The consumer group has reached its maximum capacity of "
                                f"{self.config.consumer_max_size} members.")
        owned = None if req.topic_partitions is None else \
            [(tp.topic_id, list(tp.partitions)) for tp in req.topic_partitions]
        changes: list[R.Change] = []
        if req.instance_id is None:
            member = self._dynamic_member(group, member_id, req.member_epoch, owned, joining)
        else:
            member = self._static_member(group, member_id, req.member_epoch, req.instance_id,
                                         owned, joining, changes)

        updated = member.update(
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            server_assignor=req.server_assignor if req.server_assignor is not None
            else member.server_assignor,
            subscribed_topic_names=tuple(req.subscribed_topic_names)
            if req.subscribed_topic_names is not None else member.subscribed_topic_names,
            subscribed_topic_regex=(req.subscribed_topic_regex or None)
            if req.subscribed_topic_regex is not None else member.subscribed_topic_regex,
            client_id=client_id, client_host=client_host,
            classic_session_timeout_ms=None, classic_protocols=None)

        reconciled = self.subscribe_and_reconcile(group, member, updated, owned, now, changes)
        self.schedule_session_timeout(group_id, member_id)
        self._schedule_rebalance_timeout(group, reconciled)

        response = ConsumerGroupHeartbeatResponse(
            member_id=member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group_id))
        full = req.rebalance_timeout_ms != -1 and (
            req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None) \
            and req.topic_partitions is not None
        if joining or full or reconciled.assigned != member.assigned:
            response.assignment = ConsumerGroupHeartbeatResponse.Assignment(topic_partitions=[
                ConsumerGroupHeartbeatResponse.TopicPartitions(topic_id=t, partitions=sorted(p))
                for t, p in reconciled.assigned.items() if p])
        return response, changes, extra

    def subscribe_and_reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember,
                                updated: ConsumerGroupMember, owned: list | None, now: int,
                                changes: list[R.Change]) -> ConsumerGroupMember:
        """Steps 3-5 of a heartbeat (and of a classic member's JoinGroup): store the
        member's new subscription, move the group epoch if it must, compute the target if it
        is behind, and reconcile the member; returns the member as it now is."""
        group_id, member_id = group.group_id, updated.member_id
        # Kafka's hasMemberSubscriptionChanged: only the topic names count here (a new
        # member is compared with an empty one)
        names_changed = updated.subscribed_topic_names != member.subscribed_topic_names
        image = self.topics()
        regex_status = self._update_regexes(group, member, updated, image, now, changes)
        subscription_changed = names_changed or regex_status > 0
        if updated != member or member_id not in group.members:
            self._apply(group, changes, R.subscription(group_id, updated))
            updated = group.members[member_id]
        bump = names_changed or regex_status == 2
        if bump or group.metadata_seen is not image:
            self._update_group_epoch(group, bump, image, changes)
        target_epoch, target = self._target_assignment(group, updated, image, now, changes)
        updated = group.members[member_id]
        try:
            reconciled = reconcile(
                updated, target_epoch=target_epoch, target=target,
                subscribed_topic_ids=self._subscribed_ids(group, updated, image),
                has_subscription_changed=subscription_changed, owned=owned,
                current_partition_epoch=group.current_partition_epoch)
        except FencedMemberEpoch as err:
            raise GroupApiError(E.FENCED_MEMBER_EPOCH, str(err)) from None
        if reconciled != updated:
            self._apply(group, changes, R.current_assignment(group_id, reconciled))
        return reconciled

    def _dynamic_member(self, group: ConsumerGroup, member_id: str, epoch: int,
                        owned: list | None, joining: bool) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise GroupApiError(E.UNKNOWN_MEMBER_ID,
                                    f"Member {member_id} is not a member of group {group.group_id}.")
            return ConsumerGroupMember(member_id)
        _check_epoch(member, epoch, owned)
        return member

    def _static_member(self, group: ConsumerGroup, member_id: str, epoch: int,
                       instance_id: str, owned: list | None, joining: bool,
                       changes: list[R.Change]) -> ConsumerGroupMember:
        """Kafka's ``getOrMaybeSubscribeStaticConsumerGroupMember``: a static member that comes
        back (after leaving with epoch -2) takes over its predecessor's place and
        assignment under its new member id."""
        existing = group.static_member(instance_id)
        if joining:
            if existing is None:
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            if existing.member_id == member_id:
                return existing
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise GroupApiError(
                    E.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} cannot join the "
                    f"group because the instance id is owned by {existing.member_id} member.")
            replacement = existing.update(member_id=member_id, member_epoch=0,
                                          previous_member_epoch=0)
            self.replace_member(group, existing, replacement, changes)
            return replacement
        if existing is None:
            raise GroupApiError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupApiError(E.FENCED_INSTANCE_ID,
                                f"Static member {member_id} with instance id {instance_id} was "
                                f"fenced by member {existing.member_id}.")
        _check_epoch(existing, epoch, owned)
        return existing

    def replace_member(self, group: ConsumerGroup, old: ConsumerGroupMember,
                        new: ConsumerGroupMember, changes: list[R.Change]) -> None:
        """Kafka's ``replaceMember``: the old id's records go, the new id gets its
        subscription, its target and its current assignment."""
        group_id = group.group_id
        target = group.target_of(old.member_id)
        for change in (R.current_assignment_tombstone(group_id, old.member_id),
                       R.target_member_tombstone(group_id, old.member_id),
                       R.subscription_tombstone(group_id, old.member_id),
                       R.subscription(group_id, new),
                       R.target_member(group_id, new.member_id, target),
                       R.current_assignment(group_id, new)):
            self._apply(group, changes, change)
        self.timers.cancel(_session_key(group_id, old.member_id))
        self.timers.cancel(_rebalance_key(group_id, old.member_id))

    # -- regular expressions, group epoch and target assignment (target.py) ---------------------

    def _update_regexes(self, group: ConsumerGroup, member: ConsumerGroupMember,
                        updated: ConsumerGroupMember, image: TopicsImage, now: int,
                        changes: list[R.Change]) -> int:
        return target.update_regexes(group, member, updated, image, now, self._last_regex_refresh,
                                     lambda change: self._apply(group, changes, change))

    def _update_group_epoch(self, group: ConsumerGroup, bump: bool, image: TopicsImage,
                            changes: list[R.Change]) -> None:
        if target.update_group_epoch(group, bump, image,
                                     lambda change: self._apply(group, changes, change)):
            self.rebalances += 1

    def _subscribed_ids(self, group: ConsumerGroup, member: ConsumerGroupMember,
                        image: TopicsImage) -> set[uuid.UUID]:
        return target.subscribed_ids(group, member, image)

    def _target_assignment(self, group: ConsumerGroup, member: ConsumerGroupMember,
                           image: TopicsImage, now: int, changes: list[R.Change]
                           ) -> tuple[int, dict[uuid.UUID, frozenset[int]]]:
        """Kafka's ``maybeUpdateTargetAssignment``: (target epoch, the member's target)."""
        if group.assignment_epoch < group.group_epoch and target.can_compute_next_target(
                group.assignment_timestamp_ms, self.config.consumer_assignment_interval_ms, now):
            target.recompute_target(group, image, now, self.config.consumer_assignors[0],
                                    lambda change: self._apply(group, changes, change))
        return group.assignment_epoch, group.target_of(member.member_id)

    # -- leaving and fencing ------------------------------------------------------------------

    def _leave(self, req: ConsumerGroupHeartbeatRequest
               ) -> tuple[ConsumerGroupHeartbeatResponse, list[R.Change], list[Record]]:
        group = self.groups.get(req.group_id)
        if group is None:
            raise GroupApiError(E.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
        response = ConsumerGroupHeartbeatResponse(member_id=req.member_id,
                                                  member_epoch=req.member_epoch)
        changes: list[R.Change] = []
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise GroupApiError(E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a "
                                    f"member of group {req.group_id}.")
            return response, changes, self.fence(group, [member], changes)
        member = group.static_member(req.instance_id)
        if member is None:
            raise GroupApiError(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if member.member_id != req.member_id:
            raise GroupApiError(E.FENCED_INSTANCE_ID,
                                f"Static member {req.member_id} with instance id "
                                f"{req.instance_id} was fenced by member {member.member_id}.")
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # it keeps its place (and its target) until its session ends; its partitions are
            # counted from epoch 0 when it comes back
            leaving = member.update(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                    pending_revocation={},
                                    assigned={t: dict.fromkeys(p, 0)
                                              for t, p in member.assigned.items()})
            self._apply(group, changes, R.current_assignment(group.group_id, leaving))
            self.timers.cancel(_rebalance_key(group.group_id, member.member_id))
            return ConsumerGroupHeartbeatResponse(
                member_id=member.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
            ), changes, []
        return response, changes, self.fence(group, [member], changes)

    def fence(self, group: ConsumerGroup, members: list[ConsumerGroupMember],
              changes: list[R.Change]) -> list[Record]:
        """Kafka's ``consumerGroupFenceMembers``: the members' records go, regexes nobody
        uses any more go, and the group epoch moves (with the new metadata hash).  When only
        classic-protocol members remain and the migration policy allows it, the group
        becomes a classic group instead (``downgrade``): the records are in the returned
        list then."""
        if not members:
            return []
        group_id = group.group_id
        gone = {m.member_id for m in members}
        remaining = [m for m in group.members.values() if m.member_id not in gone]
        if remaining and all(m.uses_classic_protocol for m in remaining) \
                and self.config.consumer_migration_policy in ("downgrade", "bidirectional") \
                and self.downgrade is not None:
            self.drop_timers(group)
            return self.downgrade(group, gone)
        for m in members:
            for change in (R.current_assignment_tombstone(group_id, m.member_id),
                           R.target_member_tombstone(group_id, m.member_id),
                           R.subscription_tombstone(group_id, m.member_id)):
                self._apply(group, changes, change)
            self.timers.cancel(_session_key(group_id, m.member_id))
            self.timers.cancel(_rebalance_key(group_id, m.member_id))
            self.timers.cancel(classic_join_key(group_id, m.member_id))
            self.timers.cancel(classic_sync_key(group_id, m.member_id))
        for pattern in sorted(group.resolved_regexes):
            if not any(x.subscribed_topic_regex == pattern for x in group.members.values()
                       if x.member_id not in gone):
                self._apply(group, changes, R.regex_tombstone(group_id, pattern))
        image = self.topics()
        group.metadata_seen = image
        self.rebalances += 1
        self._apply(group, changes, R.epoch(group_id, group.group_epoch + 1,
                                            image.group_hash(group.subscribed_topic_names())))
        return []

    # -- timers -------------------------------------------------------------------------------

    def schedule_session_timeout(self, group_id: str, member_id: str,
                                 timeout_ms: int | None = None) -> None:
        """The member's session restarts: ``group.consumer.session.timeout.ms``, or a classic
        member's own session timeout."""
        if timeout_ms is None:
            timeout_ms = self.session_timeout_ms(group_id)
        self.timers.schedule(_session_key(group_id, member_id), self._now() + timeout_ms,
                             lambda: self.expire(group_id, member_id, "session timeout"))

    def _schedule_rebalance_timeout(self, group: ConsumerGroup,
                                    member: ConsumerGroupMember) -> None:
        """Kafka: a member asked to revoke partitions must do so within its rebalance timeout
        (started when it entered UNREVOKED_PARTITIONS), or it is fenced."""
        key = _rebalance_key(group.group_id, member.member_id)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if not self.timers.is_scheduled(key):
                epoch = member.member_epoch
                group_id, member_id = group.group_id, member.member_id

                def expire() -> None:
                    g = self.groups.get(group_id)
                    m = None if g is None else g.members.get(member_id)
                    if m is not None and m.member_epoch == epoch \
                            and m.state is MemberState.UNREVOKED_PARTITIONS:
                        self.expire(group_id, member_id, "rebalance timeout")

                self.timers.schedule(key, self._now() + max(member.rebalance_timeout_ms, 0), expire)
        else:
            self.timers.cancel(key)

    def expire(self, group_id: str, member_id: str, why: str) -> None:
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None:
            return
        changes: list[R.Change] = []
        extra = self.fence(group, [member], changes)
        self._writes.append(Write(group_id, extra + [R.encode(c) for c in changes]))

    def drop(self, group_id: str) -> None:
        """The group leaves memory without records (it became a classic group)."""
        group = self.groups.pop(group_id, None)
        if group is not None:
            self.drop_timers(group)
            group.dead = True
        self._last_regex_refresh.pop(group_id, None)

    def take_over(self, group_id: str, changes: list[R.Change]) -> None:
        """Delete an empty group with these tombstones (written as one write of the next
        Result): its id goes to a classic group, or DeleteGroups removed it."""
        group = self.groups.get(group_id)
        if group is not None:
            self.drop_timers(group)
        for change in changes:
            R.apply(self.groups, change)
        self.groups.pop(group_id, None)
        self._last_regex_refresh.pop(group_id, None)
        self._writes.append(Write(group_id, [R.encode(c) for c in changes]))

    def drop_timers(self, group: ConsumerGroup) -> None:
        for member_id in group.members:
            for key in (_session_key(group.group_id, member_id),
                        _rebalance_key(group.group_id, member_id),
                        classic_join_key(group.group_id, member_id),
                        classic_sync_key(group.group_id, member_id)):
                self.timers.cancel(key)

    # -- revert -------------------------------------------------------------------------------

    def _snapshot(self, group_id: str) -> ConsumerGroup | None:
        group = self.groups.get(group_id)
        return None if group is None else _copy_group(group)

    def _restore(self, group_id: str, before: ConsumerGroup | None,
                 after: ConsumerGroup | None, after_version: int) -> None:
        """Put the group back as it was before a call whose records were not stored, unless
        a later call changed it since (that one's records came after and stand or fall
        with their own append)."""
        current = self.groups.get(group_id)
        if current is not after or (current is not None and current.version != after_version):
            return
        if before is None:
            self.groups.pop(group_id, None)
        else:
            before.rebuild_partition_owner()
            self.groups[group_id] = before
            before.metadata_seen = None


def _copy_group(group: ConsumerGroup) -> ConsumerGroup:
    clone = copy.copy(group)
    clone.members = dict(group.members)
    clone.target = dict(group.target)
    clone.static_members = dict(group.static_members)
    clone.partition_owner = {}   # rebuilt from the members if the snapshot is restored
    clone.resolved_regexes = dict(group.resolved_regexes)
    return clone


def _check_epoch(member: ConsumerGroupMember, epoch: int, owned: list | None) -> None:
    """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``: 0 rejoins; the previous epoch is
    accepted with a subset of the partitions (the answer that bumped it was lost)."""
    if epoch == 0:
        return
    if epoch > member.member_epoch:
        raise GroupApiError(E.FENCED_MEMBER_EPOCH,
                            f"The consumer group member has a greater member epoch ({epoch}) "
                            f"than the one known by the group coordinator ({member.member_epoch}). "
                            "The member must abandon all its partitions and rejoin.")
    if epoch < member.member_epoch:
        if epoch != member.previous_member_epoch or not _is_subset(owned, member):
            raise GroupApiError(E.FENCED_MEMBER_EPOCH,
                                f"The consumer group member has a smaller member epoch ({epoch}) "
                                f"than the one known by the group coordinator "
                                f"({member.member_epoch}). The member must abandon all its "
                                "partitions and rejoin.")


def _is_subset(owned: list | None, member: ConsumerGroupMember) -> bool:
    if owned is None:
        return False
    for topic_id, partitions in owned:
        have = member.assigned.get(topic_id, {})
        if any(p not in have for p in partitions):
            return False
    return True


def _session_key(group_id: str, member_id: str) -> str:
    return f"consumer-session-{group_id}-{member_id}"


def _rebalance_key(group_id: str, member_id: str) -> str:
    return f"consumer-rebalance-{group_id}-{member_id}"


def classic_join_key(group_id: str, member_id: str) -> str:
    """A classic member told to rejoin must JoinGroup before this timer fires."""
    return f"consumer-classic-join-{group_id}-{member_id}"


def classic_sync_key(group_id: str, member_id: str) -> str:
    """A classic member that joined must SyncGroup before this timer fires."""
    return f"consumer-classic-sync-{group_id}-{member_id}"


def _random_member_id() -> str:
    from wire.uuids import random_uuid, uuid_to_string

    return uuid_to_string(random_uuid())
