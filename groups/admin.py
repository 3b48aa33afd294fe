"""The group admin APIs of ``GroupCoordinator`` (a mixin: the coordinator's state is
``self``): DeleteGroups, ListGroups and DescribeGroups, over both group types.

* DeleteGroups: a group must be Empty (NON_EMPTY_GROUP); its offsets' tombstones then its
  own go in one write; it is gone at once and put back, with the mapped error, if they are
  not stored (Kafka reverts its snapshot).
* ListGroups: every loaded group of either type with its type, protocol type and state;
  the states (v4+) and types (v5+) filters are case-insensitive.
* DescribeGroups answers for classic groups; a consumer-protocol group is described as an
  unknown one (Dead, no error, as Kafka answers versions below 6).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groups.append_errors import group_metadata_error
from groups.classic_group import ClassicGroup
from groups.consumer.describe import listed_group
from groups.group_state import GroupState
from groups.records import group_metadata_tombstone
from groups.result import Result, Write
from wire.error_codes import ErrorCode
from wire.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)

__all__ = ["GroupAdmin"]

E = ErrorCode


class GroupAdmin:
    """Mixed into ``GroupCoordinator``; reads its groups, offsets and consumer groups."""

    groups: dict[str, ClassicGroup]
    offsets: Any
    consumer: Any
    loading: bool
    loading_partitions: set[int]
    group_error: Callable[[str], ErrorCode | None]
    _result: Callable[..., Result]
    _remove_group: Callable[[ClassicGroup], None]
    _consumer_group_tombstones: Callable[[Any], list]

    def delete_groups(self, req: DeleteGroupsRequest, version: int) -> Result:
        """DeleteGroups v0-2: offsets tombstones then the group tombstone, per group."""
        writes: list[Write] = []
        results = []
        for group_id in req.groups_names:
            code = E.NONE
            group = self.groups.get(group_id)
            if (early := self.group_error(group_id)) is not None:
                code = early
            elif group_id in self.consumer.groups:
                results.append(self._delete_consumer_group(group_id, writes))
                continue
            elif group is None or group.is_in(GroupState.DEAD):
                code = E.GROUP_ID_NOT_FOUND
            elif not group.is_in(GroupState.EMPTY):
                code = E.NON_EMPTY_GROUP
            entry = DeleteGroupsResponse.DeletableGroupResult(group_id=group_id,
                                                              error_code=int(code))
            results.append(entry)
            if code is E.NONE:
                records = self.offsets.delete_all(group_id)
                records.append(group_metadata_tombstone(group_id))
                offsets = self.offsets.offsets.get(group_id, {})
                self._remove_group(group)
                writes.append(Write(group_id, records,
                                    self._on_group_deletion_stored(group, offsets, entry)))
        return self._result(DeleteGroupsResponse(results=results), writes=writes)

    def _delete_consumer_group(self, group_id: str, writes: list[Write]
                               ) -> DeleteGroupsResponse.DeletableGroupResult:
        """A consumer group must be Empty; its offsets' tombstones, then its own, go in one
        write; it is gone at once and put back if they are not stored."""
        group = self.consumer.groups[group_id]
        entry = DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=0)
        if group.members:
            entry.error_code = int(E.NON_EMPTY_GROUP)
            return entry
        records = self.offsets.delete_all(group_id)
        offsets = self.offsets.offsets.get(group_id, {})
        self.offsets.offsets.pop(group_id, None)
        self.offsets.txn.drop_group(group_id)
        changes = self._consumer_group_tombstones(group)
        self.consumer.take_over(group_id, changes)
        tombstones = self.consumer.take()

        def on_appended(append_error: ErrorCode) -> None:
            if append_error is E.NONE:
                return
            entry.error_code = int(group_metadata_error(append_error))
            if group_id not in self.consumer.groups and group_id not in self.groups:
                group.dead = False
                self.consumer.groups[group_id] = group
                if offsets:
                    self.offsets.offsets[group_id] = offsets

        writes.append(Write(group_id, records + [r for w in tombstones for r in w.records],
                            on_appended))
        return entry

    def _on_group_deletion_stored(self, group: ClassicGroup, offsets: dict,
                                  entry: DeleteGroupsResponse.DeletableGroupResult
                                  ) -> Callable[[ErrorCode], None]:
        """The group is removed at once (no later call may see it) and put back, Empty with
        its offsets, if its tombstones are not stored; the group answers the mapped error
        (Kafka's coordinator reverts its snapshot and maps the append error)."""
        def on_appended(append_error: ErrorCode) -> None:
            if append_error is E.NONE:
                return
            entry.error_code = int(group_metadata_error(append_error))
            if group.group_id in self.groups:  # recreated meanwhile: that one is newer
                return
            group.state = GroupState.EMPTY
            self.groups[group.group_id] = group
            if offsets:
                self.offsets.offsets[group.group_id] = offsets

        return on_appended

    def list_groups(self, req: ListGroupsRequest, version: int) -> Result:
        """ListGroups v0-5 (states filter v4+, types filter v5+, case-insensitive like
        Kafka); both group types."""
        # Kafka lists the groups loaded so far, with LOAD_IN_PROGRESS while any partition loads
        error = E.COORDINATOR_LOAD_IN_PROGRESS if self.loading or self.loading_partitions \
            else E.NONE
        if self.loading:
            return self._result(ListGroupsResponse(error_code=int(error)))
        states = {s.lower() for s in req.states_filter} if version >= 4 else set()
        types = {t.lower() for t in req.types_filter} if version >= 5 else set()
        listed = []
        for group in self.groups.values():
            if states and group.state.lower() not in states:
                continue
            if types and "classic" not in types:
                continue
            listed.append(ListGroupsResponse.ListedGroup(
                group_id=group.group_id, protocol_type=group.protocol_type or "",
                group_state=str(group.state), group_type="classic"))
        for cgroup in self.consumer.groups.values():
            if states and cgroup.state.lower() not in states:
                continue
            if types and "consumer" not in types:
                continue
            listed.append(listed_group(cgroup))
        return self._result(ListGroupsResponse(error_code=int(error), groups=listed))

    def describe_groups(self, req: DescribeGroupsRequest, version: int) -> Result:
        """DescribeGroups v0-5: an unknown group is described as Dead with no error."""
        described = []
        for group_id in req.groups:
            if (early := self.group_error(group_id)) is not None:
                described.append(DescribeGroupsResponse.DescribedGroup(
                    group_id=group_id, error_code=int(early)))
                continue
            group = self.groups.get(group_id)
            if group is None:
                described.append(DescribeGroupsResponse.DescribedGroup(
                    group_id=group_id, group_state=str(GroupState.DEAD), protocol_type="",
                    protocol_data="", members=[]))
                continue
            stable = group.is_in(GroupState.STABLE)
            members = [
                DescribeGroupsResponse.DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.group_instance_id,
                    client_id=m.client_id, client_host=m.client_host,
                    member_metadata=m.metadata(group.protocol_name) if stable else b"",
                    member_assignment=m.assignment if stable else b"")
                for m in group.members.values()
            ]
            described.append(DescribeGroupsResponse.DescribedGroup(
                group_id=group_id, group_state=str(group.state),
                protocol_type=group.protocol_type or "",
                protocol_data=(group.protocol_name or "") if stable else "",
                members=members))
        return self._result(DescribeGroupsResponse(groups=described))
