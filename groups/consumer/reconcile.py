"""Reconciling a member towards its target assignment (Kafka's ``CurrentAssignmentBuilder``).

The member's state machine, as in Kafka:

* ``STABLE``: at a new target epoch, compute the next assignment; otherwise, when its
  subscription changed, drop the topics it no longer subscribes to.
* ``UNREVOKED_PARTITIONS``: it keeps its epoch until its heartbeat's owned partitions no
  longer include any partition pending revocation (``owned`` None = not reported: still
  owned); then it moves on.
* ``UNRELEASED_PARTITIONS``: it is at the target epoch but some target partitions are still
  owned by another member; each heartbeat gives it those that were released meanwhile.

The next assignment (``compute_next``): assigned' = assigned ∩ target; pending revocation =
assigned - assigned'; to assign = target - assigned' - partitions owned by someone else.
Revoke first: while anything is to be revoked the member stays at its epoch and gets nothing
new; only then it moves to the target epoch and gets the free partitions.  So no partition
is ever owned by two members.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping

from groups.consumer.member import Assigned, ConsumerGroupMember, MemberState

__all__ = ["reconcile", "FencedMemberEpoch"]

Owned = list[tuple[uuid.UUID, list[int]]] | None   # a heartbeat's TopicPartitions


class FencedMemberEpoch(Exception):
    """Kafka's FencedMemberEpochException (FENCED_MEMBER_EPOCH)."""


def reconcile(member: ConsumerGroupMember, *, target_epoch: int,
              target: Mapping[uuid.UUID, frozenset[int]], subscribed_topic_ids: set[uuid.UUID],
              has_subscription_changed: bool, owned: Owned,
              current_partition_epoch: Callable[[uuid.UUID, int], int]) -> ConsumerGroupMember:
    """The member's next state (or ``member`` itself when it cannot move)."""
    builder = _Builder(member, target_epoch, target, subscribed_topic_ids, owned,
                       current_partition_epoch)
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return builder.compute_next(member.member_epoch, member.assigned)
        if has_subscription_changed:
            return builder.update_current(member.member_epoch, member.assigned)
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if builder.owns_any(member.pending_revocation):
            if has_subscription_changed:
                return builder.update_current(member.member_epoch, member.assigned)
            return member
        return builder.compute_next(member.member_epoch, member.assigned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return builder.compute_next(member.member_epoch, member.assigned)
    # UNKNOWN: a state from a newer coordinator; start over from nothing (Kafka fences it)
    if owned is None or owned:
        raise FencedMemberEpoch("The consumer group member is in a unknown state. "
                                "The member must abandon all its partitions and rejoin.")
    return builder.compute_next(target_epoch, member.assigned)


class _Builder:
    def __init__(self, member: ConsumerGroupMember, target_epoch: int,
                 target: Mapping[uuid.UUID, frozenset[int]], subscribed: set[uuid.UUID],
                 owned: Owned, current_partition_epoch: Callable[[uuid.UUID, int], int]) -> None:
        self.member = member
        self.target_epoch = target_epoch
        self.target = target
        self.subscribed = subscribed
        self.owned = owned
        self.current_partition_epoch = current_partition_epoch

    def owns_any(self, revoking: Assigned) -> bool:
        """Does the heartbeat still report a partition of ``revoking`` (None: not reported)?"""
        if self.owned is None:
            return True
        for topic_id, partitions in self.owned:
            pending = revoking.get(topic_id)
            if pending and any(p in pending for p in partitions):
                return True
        return False

    def update_current(self, epoch: int, assigned: Assigned) -> ConsumerGroupMember:
        """Kafka's ``updateCurrentAssignment``: drop topics no longer subscribed (quick path)."""
        member = self.member
        if not self.subscribed and not member.pending_revocation:
            new_assigned: Assigned = {}
            new_pending: Assigned = assigned
        else:
            new_assigned = assigned
            new_pending = member.pending_revocation
            for topic_id, partitions in assigned.items():
                if topic_id not in self.subscribed:
                    if new_assigned is assigned:
                        new_assigned = dict(assigned)
                        new_pending = {t: dict(p) for t, p in member.pending_revocation.items()}
                    del new_assigned[topic_id]
                    new_pending.setdefault(topic_id, {}).update(partitions)
        if new_assigned is assigned:
            return member
        if new_pending and self.owns_any(new_pending):
            return member.with_epoch(epoch).update(
                state=MemberState.UNREVOKED_PARTITIONS, assigned=new_assigned,
                pending_revocation=new_pending)
        return member.with_epoch(epoch).update(assigned=new_assigned)

    def compute_next(self, epoch: int, assigned: Assigned) -> ConsumerGroupMember:
        member = self.member
        unreleased = False
        new_assigned: Assigned = {}
        new_pending: Assigned = {}
        to_assign: dict[uuid.UUID, set[int]] = {}
        for topic_id in _union(self.target, assigned):
            target = self.target.get(topic_id, frozenset()) if topic_id in self.subscribed \
                else frozenset()
            current = assigned.get(topic_id, {})
            kept = {p: e for p, e in current.items() if p in target}
            revoking = {p: e for p, e in current.items() if p not in kept}
            own_pending = member.pending_revocation.get(topic_id, {})
            pending_assignment = set()
            for p in target:
                if p in kept:
                    continue
                if self.current_partition_epoch(topic_id, p) != -1 and p not in own_pending:
                    unreleased = True   # another member still owns it
                    continue
                pending_assignment.add(p)
            if kept:
                new_assigned[topic_id] = kept
            if revoking:
                new_pending[topic_id] = revoking
            if pending_assignment:
                to_assign[topic_id] = pending_assignment
        if new_pending and self.owns_any(new_pending):
            return member.with_epoch(epoch).update(
                state=MemberState.UNREVOKED_PARTITIONS, assigned=new_assigned,
                pending_revocation=new_pending)
        # nothing to revoke: the member moves to the target epoch with the free partitions
        for topic_id, partitions in to_assign.items():
            epochs = new_assigned.setdefault(topic_id, {})
            for p in partitions:
                epochs[p] = self.target_epoch
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return member.with_epoch(self.target_epoch).update(
            state=state, assigned=new_assigned, pending_revocation={})


def _union(a: Iterable[uuid.UUID], b: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    seen = dict.fromkeys(a)
    seen.update(dict.fromkeys(b))
    return list(seen)
