"""A consumer-protocol group (Kafka's ``ConsumerGroup`` / ``ModernGroup``): what its records say.

State changes only by :meth:`ConsumerGroup` setters that the record replay calls
(``groups/consumer/records.py``), so a live group and one rebuilt from
``__consumer_offsets`` are the same.  Derived views are kept up to date by the setters:

* ``static_members``: instance id -> member id;
* ``partition_owner``: (topic id, partition) -> epoch of the member that owns it (assigned or
  pending revocation), Kafka's ``currentPartitionEpoch``: a partition is given to a new owner
  only once no member holds it, so it is never owned twice;
* ``state``: Kafka's ``ConsumerGroupState``: ``Empty`` without members, ``Assigning`` while
  the group epoch is ahead of the target assignment's, ``Reconciling`` while a member is not
  at the target, else ``Stable``.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass

from groups.consumer.member import ConsumerGroupMember

__all__ = ["ConsumerGroup", "ResolvedRegex"]

EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD = "Empty", "Assigning", "Reconciling", "Stable", "Dead"


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """Kafka's ``ResolvedRegularExpression``: the topics a regex matched, the metadata version
    it was resolved against and when (ms)."""

    topics: frozenset[str]
    version: int
    timestamp_ms: int


class ConsumerGroup:
    group_type = "consumer"
    protocol_type = "consumer"

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # Kafka 4.3 starts a new group at epoch 1 and its target at epoch 1 (ModernGroup,
        # TargetAssignmentMetadata.INITIAL): the first member's join makes epoch 2
        self.group_epoch = 1
        self.metadata_hash = 0
        self.assignment_epoch = 1
        self.assignment_timestamp_ms = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
        self.static_members: dict[str, str] = {}
        self.partition_owner: dict[tuple[uuid.UUID, int], int] = {}
        self.resolved_regexes: dict[str, ResolvedRegex] = {}
        self.has_partition_metadata_record = False   # a pre-4.0 record to tombstone
        self.dead = False
        self.version = 0   # moves with every record applied (a failed append's revert checks it)
        # the metadata image the hash was last computed from (not stored: recomputed on load)
        self.metadata_seen: object = None

    # -- derived --------------------------------------------------------------------------

    @property
    def state(self) -> str:
        if self.dead:
            return DEAD
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return STABLE

    def is_empty(self) -> bool:
        return not self.members

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member owning the partition, or -1 when none does."""
        return self.partition_owner.get((topic_id, partition), -1)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        if instance_id is None:
            return None
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def target_of(self, member_id: str) -> dict[uuid.UUID, frozenset[int]]:
        return self.target.get(member_id, {})

    def preferred_assignor(self, members: list[ConsumerGroupMember] | None = None) -> str | None:
        """Kafka's ``computePreferredServerAssignor``: the assignor most members name (ties:
        the first counted); None when no member names one."""
        counts = Counter(m.server_assignor for m in (members if members is not None
                                                     else self.members.values())
                         if m.server_assignor)
        return counts.most_common(1)[0][0] if counts else None

    def subscribed_topic_names(self, members: list[ConsumerGroupMember] | None = None
                               ) -> set[str]:
        """Every topic some member subscribes to, by name or through a resolved regex."""
        names: set[str] = set()
        for m in members if members is not None else self.members.values():
            names.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                resolved = self.resolved_regexes.get(m.subscribed_topic_regex)
                if resolved is not None:
                    names.update(resolved.topics)
        return names

    def regex_in_use(self, regex: str, except_member: str | None = None) -> bool:
        return any(m.subscribed_topic_regex == regex for m in self.members.values()
                   if m.member_id != except_member)

    # -- setters (called by replay only) --------------------------------------------------

    def set_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._unown(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._own(member)

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._unown(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def rebuild_partition_owner(self) -> None:
        self.partition_owner = {}
        for member in self.members.values():
            self._own(member)

    def _own(self, member: ConsumerGroupMember) -> None:
        for assigned in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assigned.items():
                for p in partitions:
                    self.partition_owner[(topic_id, p)] = member.member_epoch

    def _unown(self, member: ConsumerGroupMember) -> None:
        for assigned in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assigned.items():
                for p in partitions:
                    self.partition_owner.pop((topic_id, p), None)
