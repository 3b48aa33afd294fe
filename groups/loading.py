"""Loading and unloading ``__consumer_offsets`` partitions for ``GroupCoordinator`` (a mixin:
the coordinator's state is ``self``): Kafka's ``GroupMetadataManager`` load/replay and
``onResignation``.

Restart = replay: ``begin_load`` / ``replay`` every record in offset order /
``replay_end_txn`` for control records / ``complete_load``.  Records of both group types
are replayed (classic: types 0-2; consumer groups: types 3-8 and 16); a consumer-group
record for an id a classic group holds replaces it (the classic group's tombstone comes
first in Kafka's order).  Unloading drops the partition's groups and answers their parked
requests NOT_COORDINATOR.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groups.classic_group import ClassicGroup
from groups.consumer import records as consumer_records
from groups.group_state import GroupState
from groups.member import ClassicGroupMember
from groups.records import (
    CONSUMER_GROUP_RECORD_TYPES,
    decode_any_key,
    decode_any_value,
    decode_value,
)
from groups.responses import join_error, sync_error
from groups.result import Result
from wire.error_codes import ErrorCode
from wire.messages import GroupMetadataKey, GroupMetadataValue, OffsetCommitKey

__all__ = ["GroupLoading"]

E = ErrorCode


class GroupLoading:
    """Mixed into ``GroupCoordinator``."""

    groups: dict[str, ClassicGroup]
    offsets: Any
    consumer: Any
    members: Any
    loading: bool
    loading_partitions: set[int]
    owned_partitions: set[int] | None
    partition_for: Callable[[str], int]
    complete_txn: Callable[[int, bool, list[int]], None]
    _result: Callable[..., Result]
    _now: Callable[[], int]

    def begin_load(self, partition: int | None = None) -> None:
        """Loading starts: of every partition (None, a single broker's start-up) or of
        ``__consumer_offsets`` partition ``partition`` (this broker became its leader)."""
        if partition is None:
            self.loading = True
        else:
            self.loading_partitions.add(partition)

    def complete_load(self, partition: int | None = None) -> None:
        """Loading ends; a partition loaded is owned from now on."""
        if partition is None:
            self.loading = False
            return
        self.loading_partitions.discard(partition)
        if self.owned_partitions is not None:
            self.owned_partitions.add(partition)

    def unload_partition(self, partition: int) -> Result:
        """This broker stopped leading ``__consumer_offsets`` partition ``partition`` (Kafka's
        ``GroupCoordinator.onResignation`` / ``removeGroupsForPartition``): its groups leave
        memory, their timers are cancelled, and their parked requests answer NOT_COORDINATOR
        (JoinGroups of a rebalancing group, SyncGroups of a completing one), released through
        the returned Result's deliveries.  Later requests for them answer NOT_COORDINATOR."""
        self.loading_partitions.discard(partition)
        if self.owned_partitions is not None:
            self.owned_partitions.discard(partition)
        for group in [g for g in self.groups.values()
                      if self.partition_for(g.group_id) == partition]:
            self._unload_group(group)
        for cgroup in [g for g in self.consumer.groups.values()
                       if self.partition_for(g.group_id) == partition]:
            self.consumer.drop_timers(cgroup)
            cgroup.dead = True
            del self.consumer.groups[cgroup.group_id]
        for group_id in [g for g in self.offsets.offsets if self.partition_for(g) == partition]:
            del self.offsets.offsets[group_id]
        for group_id in [g for g in self.offsets.txn.open_by_group
                         if self.partition_for(g) == partition]:
            self.offsets.txn.drop_group(group_id)
        return self._result()

    def _unload_group(self, group: ClassicGroup) -> None:
        """Kafka's ``onGroupUnloaded``: Dead, parked answers NOT_COORDINATOR, timers gone."""
        previous = group.state
        group.state = GroupState.DEAD
        for member in list(group.members.values()):
            if previous is GroupState.PREPARING_REBALANCE:
                group.complete_join(member, join_error(member.member_id, E.NOT_COORDINATOR))
            elif previous in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                group.complete_sync(member, sync_error(E.NOT_COORDINATOR))
        self.members.drop_group_timers(group)
        self.groups.pop(group.group_id, None)

    def replay(self, key: bytes, value: bytes | None, offset: int = -1,
               producer_id: int = -1) -> None:
        """Apply one ``__consumer_offsets`` record (restart = replay them all in order):
        ``offset`` is its offset in the partition, ``producer_id`` >= 0 when it is in a
        transactional batch (a TxnOffsetCommit, pending until ``replay_end_txn``)."""
        record_type, key_struct = decode_any_key(key)
        if key_struct is None:
            return
        if record_type in CONSUMER_GROUP_RECORD_TYPES:
            decoded_value = None if value is None else decode_any_value(record_type, value)[1]
            self._replay_consumer(record_type, key_struct, decoded_value)
            return
        decoded = decode_value(key_struct, value)
        if isinstance(key_struct, OffsetCommitKey):
            self.offsets.replay(key_struct, decoded, self._now(), offset, producer_id)
        else:
            self._replay_group(key_struct, decoded)

    def _replay_consumer(self, record_type: int, key, value) -> None:
        """A consumer-protocol group record; a classic group of that id (an empty one the
        consumer group replaced: its tombstone comes first) gives way."""
        if value is not None and key.group_id in self.groups:
            classic = self.groups.pop(key.group_id)
            self.members.drop_group_timers(classic)
        consumer_records.apply(self.consumer.groups, (record_type, key, value))
        group = self.consumer.groups.get(key.group_id)
        if group is not None and record_type == 5 and key.member_id in group.members:
            # Kafka starts every loaded member's session when the partition loads
            self.consumer.schedule_session_timeout(key.group_id, key.member_id)

    def replay_end_txn(self, producer_id: int, commit: bool, partition: int) -> None:
        """A COMMIT/ABORT control record of ``producer_id`` read from ``__consumer_offsets``
        partition ``partition`` during a load: as ``complete_txn`` for that partition."""
        self.complete_txn(producer_id, commit, [partition])

    def _replay_group(self, key: GroupMetadataKey, value: GroupMetadataValue | None) -> None:
        """Kafka's ``GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)``."""
        old = self.groups.get(key.group)
        if value is None:
            if old is not None:
                self.members.drop_group_timers(old)
                old.state = GroupState.DEAD
                del self.groups[key.group]
            return
        if old is not None:
            self.members.drop_group_timers(old)
        group = ClassicGroup(
            key.group, GroupState.STABLE if value.members else GroupState.EMPTY,
            generation_id=value.generation,
            protocol_type=value.protocol_type or None, protocol_name=value.protocol,
            leader_id=value.leader,
            current_state_timestamp_ms=None if value.current_state_timestamp == -1
            else value.current_state_timestamp)
        for m in value.members:
            group.add(ClassicGroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                rebalance_timeout_ms=m.session_timeout if m.rebalance_timeout == -1
                else m.rebalance_timeout,
                session_timeout_ms=m.session_timeout, protocol_type=value.protocol_type,
                protocols=[(value.protocol or "", bytes(m.subscription))],
                assignment=bytes(m.assignment)))
        group.subscribed_topics = group.compute_subscribed_topics()
        self.groups[key.group] = group
        # Kafka schedules every loaded member's session expiry when the partition loads.
        for member in group.members.values():
            self.members._reschedule_heartbeat(group, member)
