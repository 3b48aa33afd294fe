"""Where the two group types meet (KIP-848 online migration), for ``GroupCoordinator``:

* the classic APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) for a group id that a
  consumer group holds are answered by ``groups/consumer/classic_members.py``; a JoinGroup
  for an *empty* consumer group deletes it and the id goes to a new classic group (Kafka's
  ``maybeDeleteEmptyConsumerGroup``);
* ``upgrade``: a consumer-protocol heartbeat for a live classic group converts it
  (``groups/consumer/conversion.py``), as ``group.consumer.migration.policy`` allows;
* ``downgrade``: the last consumer-protocol member leaving a group of classic members turns
  it back into a classic group, which then rebalances.

Store, then propagate, as elsewhere: answers leave after the write of their records; a
failed write answers the mapped error (the conversion itself is not rolled back: Kafka
reverts its in-memory snapshot there, kbroker's state then differs until the group's
partition is loaded again; noted in NOT_IMPLEMENTED.md).
"""

from __future__ import annotations

from typing import Any

from groups.append_errors import group_metadata_error
from groups.classic_group import ClassicGroup
from groups.consumer import classic_members
from groups.consumer import records as R
from groups.consumer.conversion import (
    DOWNGRADE,
    UPGRADE,
    MalformedProtocol,
    encode_assignment,
    from_classic,
)
from groups.consumer.errors import GroupApiError
from groups.consumer.group import ConsumerGroup
from groups.group_manager import group_metadata_value
from groups.group_state import GroupState
from groups.member import ClassicGroupMember
from groups.records import Record, group_metadata_record, group_metadata_tombstone
from groups.responses import join_error, sync_error
from groups.result import Result, Write
from wire.error_codes import ErrorCode
from wire.messages import HeartbeatResponse, LeaveGroupResponse

__all__ = ["Migration"]

E = ErrorCode


class Migration:
    def __init__(self, coordinator: Any) -> None:
        """``coordinator``: the ``GroupCoordinator`` (not imported: it imports this module)."""
        self.c = coordinator
        coordinator.consumer.classic_conflict = self.upgrade
        coordinator.consumer.downgrade = self.downgrade

    # -- classic calls for a consumer group ---------------------------------------------------

    def owns(self, group_id: str) -> bool:
        """True when the classic call for ``group_id`` is a consumer group's to answer."""
        return group_id in self.c.consumer.groups

    def join_group(self, req: Any, version: int, client_id: str, client_host: str) -> Result | None:
        """None: an empty consumer group made way, the classic coordinator goes on."""
        c = self.c
        group = c.consumer.groups[req.group_id]
        pending = c.members.new_pending("JoinGroup", version)
        if not group.members:
            c.consumer.take_over(req.group_id, c._consumer_group_tombstones(group))
            return None
        try:
            response, changes, extra = classic_members.classic_join(
                c.consumer, group, req, version, client_id, client_host)
        except GroupApiError as err:
            pending.complete(join_error(req.member_id, err.code))
            return c._result(pending=pending)
        pending.complete(response)
        return c._result(pending=pending, writes=self._write(req.group_id, changes, extra, response))

    def sync_group(self, req: Any, version: int) -> Result:
        c = self.c
        pending = c.members.new_pending("SyncGroup", version)
        try:
            pending.complete(classic_members.classic_sync(c.consumer, c.consumer.groups[req.group_id],
                                                          req, version))
        except GroupApiError as err:
            pending.complete(sync_error(err.code))
        return c._result(pending=pending)

    def heartbeat(self, req: Any, version: int) -> Result:
        c = self.c
        try:
            response = classic_members.classic_heartbeat(c.consumer, c.consumer.groups[req.group_id], req)
        except GroupApiError as err:
            response = HeartbeatResponse(error_code=int(err.code))
        return c._result(response)

    def leave_group(self, req: Any, version: int) -> Result:
        c = self.c
        try:
            response, changes, extra = classic_members.classic_leave(
                c.consumer, c.consumer.groups[req.group_id], req, version)
        except GroupApiError as err:
            return c._result(LeaveGroupResponse(error_code=int(err.code)))
        return c._result(response, writes=self._write(req.group_id, changes, extra, response))

    @staticmethod
    def _write(group_id: str, changes: list[R.Change], extra: list[Record], response: Any
               ) -> list[Write] | None:
        records = extra + [R.encode(ch) for ch in changes]
        if not records:
            return None

        def on_appended(error: ErrorCode) -> None:
            if error is not E.NONE:
                response.error_code = int(group_metadata_error(error))

        return [Write(group_id, records, on_appended)]

    # -- conversions ------------------------------------------------------------------------

    def upgrade(self, group_id: str, create: bool) -> list[Record]:
        """A consumer-protocol heartbeat for ``group_id`` where a classic group may hold it
        (Kafka's ``getOrMaybeCreateConsumerGroup``): nothing to do without one; an empty
        one makes way (its offsets stay: they are the group's); a live one is converted
        when the policy allows, else GROUP_ID_NOT_FOUND."""
        c = self.c
        classic = c.groups.get(group_id)
        if classic is None:
            return []
        if create and classic.is_in(GroupState.EMPTY):
            c.members.drop_group_timers(classic)
            classic.state = GroupState.DEAD
            del c.groups[group_id]
            return [group_metadata_tombstone(group_id)]
        if not create:
            raise GroupApiError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        why = None
        if c.config.consumer_migration_policy not in UPGRADE:
            why = "online upgrade is disabled"
        elif not classic.uses_consumer_protocol():
            why = "the group does not use the consumer embedded protocol"
        elif len(classic.members) > c.config.consumer_max_size:
            why = "the group size exceeds the consumer group maximum size"
        if why is not None:
            raise GroupApiError(E.GROUP_ID_NOT_FOUND,
                                f"Cannot upgrade classic group {group_id} to consumer group "
                                f"because {why}.")
        image = c.consumer.topics()
        try:
            changes = from_classic(classic, image)
        except MalformedProtocol:
            raise GroupApiError(E.GROUP_ID_NOT_FOUND,
                                f"Cannot upgrade classic group {group_id} to consumer group "
                                "because the embedded consumer protocol is malformed.") from None
        # parked classic calls learn that a new rebalance began and come back
        for member in classic.members.values():
            classic.complete_join(member, join_error(member.member_id, E.REBALANCE_IN_PROGRESS))
            classic.complete_sync(member, sync_error(E.REBALANCE_IN_PROGRESS))
        c.members.drop_group_timers(classic)
        classic.state = GroupState.DEAD
        del c.groups[group_id]
        for change in changes:
            R.apply(c.consumer.groups, change)
        group = c.consumer.groups[group_id]
        group.metadata_seen = image
        for member in group.members.values():
            c.consumer.schedule_session_timeout(group_id, member.member_id,
                                                member.classic_session_timeout_ms)
        return [group_metadata_tombstone(group_id)] + [R.encode(ch) for ch in changes]

    def downgrade(self, group: ConsumerGroup, leaving: set[str]) -> list[Record]:
        """Kafka's ``convertToClassicGroup``: the consumer group's tombstones, then the
        classic group's GroupMetadata record; the classic group starts a rebalance."""
        c = self.c
        if c.config.consumer_migration_policy not in DOWNGRADE:
            return []
        gid = group.group_id
        tombstones = [R.encode(ch) for ch in c._consumer_group_tombstones(group)]
        assert gid not in c.groups, "a group id is one type at a time"
        now = c.clock.milliseconds()
        classic = ClassicGroup(gid, GroupState.STABLE, generation_id=group.group_epoch,
                               protocol_type="consumer", current_state_timestamp_ms=now)
        staying = [m for m in group.members.values() if m.member_id not in leaving]
        for m in staying:
            classic.add(ClassicGroupMember(
                member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.classic_session_timeout_ms or 0, protocol_type="consumer",
                protocols=[(p.name, p.metadata) for p in m.classic_protocols or ()]))
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        image = c.consumer.topics()
        for m in classic.members.values():
            meta = m.metadata(classic.protocol_name)
            version = int.from_bytes(meta[:2], "big", signed=True) if len(meta) >= 2 else 0
            m.assignment = encode_assignment(group.target_of(m.member_id), image, version)
        record = group_metadata_record(group_metadata_value(classic, classic.group_assignment()), gid)
        c.consumer.drop(gid)
        c.groups[gid] = classic
        for m in classic.members.values():
            c.members._reschedule_heartbeat(classic, m)
        c.members._prepare_rebalance(classic)
        return tombstones + [record]
