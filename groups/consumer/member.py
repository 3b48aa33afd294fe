"""A member of a consumer-protocol group (Kafka's ``ConsumerGroupMember``, ``MemberState``).

A member is a value: every change makes a new one (``dataclasses.replace``), so the
coordinator can compare the member before and after a heartbeat (Kafka's builder pattern)
and a record carries exactly what changed.

Assignments are ``{topic id: {partition: assignment epoch}}``: the epoch at which the
partition was given to the member (Kafka 4.3's ``AssignmentEpochs``).  An offset commit
with an older member epoch is accepted for a partition the member got at or before that
epoch (``ConsumerGroup.createAssignmentEpochValidator``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from enum import IntEnum

__all__ = ["Assigned", "ConsumerGroupMember", "MemberState", "LEAVE_GROUP_MEMBER_EPOCH",
           "LEAVE_GROUP_STATIC_MEMBER_EPOCH", "as_sets", "at_epoch"]

Assigned = dict[uuid.UUID, dict[int, int]]   # topic id -> partition -> assignment epoch

LEAVE_GROUP_MEMBER_EPOCH = -1          # a member leaving (or fenced)
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2   # a static member leaving for a while (it keeps its place)


class MemberState(IntEnum):
    """Kafka's ``MemberState``, stored as an int8 in ConsumerGroupCurrentMemberAssignment."""

    STABLE = 0                  # reconciled to its epoch's target
    UNREVOKED_PARTITIONS = 1    # must give up partitions before it gets new ones
    UNRELEASED_PARTITIONS = 2   # waits for partitions another member still owns
    UNKNOWN = 127

    @classmethod
    def of(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN

    @property
    def label(self) -> str:
        """As Kafka's ``MemberState.toString`` prints it (ConsumerGroupDescribe, tools)."""
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    """One protocol of a classic member in a consumer group (JoinGroup's name + metadata)."""

    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None   # None: no regex ("" is stored as None)
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    assigned: Assigned = field(default_factory=dict, compare=True)
    pending_revocation: Assigned = field(default_factory=dict, compare=True)
    # a member that joined with JoinGroup (online migration): its session timeout and protocols
    classic_session_timeout_ms: int | None = None
    classic_protocols: tuple[ClassicProtocol, ...] | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_protocols is not None

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch

    def assignment_epoch(self, topic_id: uuid.UUID, partition: int) -> int | None:
        """The epoch the member got ``partition`` at: assigned first, then pending revocation."""
        epoch = self.assigned.get(topic_id, {}).get(partition)
        if epoch is None:
            epoch = self.pending_revocation.get(topic_id, {}).get(partition)
        return epoch

    def update(self, **changes: object) -> ConsumerGroupMember:
        return replace(self, **changes)  # type: ignore[arg-type]

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        """Kafka's ``Builder.updateMemberEpoch``: the previous epoch moves along."""
        return replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)


def as_sets(assigned: Assigned) -> dict[uuid.UUID, frozenset[int]]:
    return {t: frozenset(p) for t, p in assigned.items() if p}


def at_epoch(partitions: dict[uuid.UUID, frozenset[int]] | dict[uuid.UUID, set[int]],
               epoch: int) -> Assigned:
    return {t: dict.fromkeys(sorted(p), epoch) for t, p in partitions.items() if p}
