"""The ``uniform`` server-side assignor (Kafka's ``UniformAssignor``, the default one).

Goals, in priority order: *balance* (members' partition counts differ by at most one, where
the subscriptions allow it) and then *stickiness* (keep as much of each member's current
target assignment as possible).  Like Kafka, two algorithms, chosen by the subscription type:

Homogeneous (every member subscribes to the same topics): a port of
``UniformHomogeneousAssignmentBuilder``.

1. The partitions of the subscribed topics that nobody holds are "unassigned": topic by topic
   (Kafka: hash-set order; here Kafka's topic id order), partitions ascending.
2. Quotas: ``total // members`` each, and ``total % members`` members get one more.  Members
   are walked in order; each keeps its current partitions up to its quota (topics in id order,
   partitions ascending) and gives up the rest, which join the end of the unassigned list.
   A member that holds fewer than ``minimum + 1`` passes the extra slot on to a later member,
   unless only as many members remain as extra slots do: so members already holding an extra
   partition keep it, and the slots otherwise go to the last members.
3. The unassigned list is dealt out in order to the members below quota, member by member.

Heterogeneous (subscriptions differ): a port of ``UniformHeterogeneousAssignmentBuilder``.

1. Each member keeps the partitions it holds of topics it still subscribes to.
2. Unassigned partitions are given out topic by topic, topics ordered by partitions per
   subscriber (descending), then subscriber count (ascending), then topic id; each partition
   goes to the subscriber with the fewest partitions in total (ties: member order).
3. Balancing: for each topic with two or more subscribers, partitions move from its most
   loaded subscribers (their highest-numbered partitions of the topic first) to its least
   loaded ones until the two differ by at most one; the topics are passed over again until a
   whole pass moves nothing, at most 16 passes (Kafka's ``MAX_ITERATION_COUNT``).  With
   overlapping, non-identical subscriptions the result may be only nearly balanced.

Both pick members through a *balancer* (Kafka's inner ``MemberAssignmentBalancer``) that
keeps the subscribers sorted by load and hands out the least loaded one round-robin level by
level, and the most loaded one likewise from the other end.

Kafka 4.3.1's uniform assignor has no rack-aware logic (``racksForPartition`` is never
called), so neither has this one.  Kafka's hash-map iteration orders are replaced by sorted
ones (see ``assignor_common``); the member order is the caller's (``AssignmentInput``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from groups.consumer.assignor_common import AssignmentInput, PartitionAssignorError, kafka_uuid_key

__all__ = ["assign_homogeneous", "assign_heterogeneous", "MAX_ITERATION_COUNT"]

Target = dict[str, dict[uuid.UUID, set[int]]]

MAX_ITERATION_COUNT = 16   # Kafka's UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT


# -- homogeneous ----------------------------------------------------------------------------


def assign_homogeneous(spec: AssignmentInput, topic_order: Sequence[uuid.UUID] | None = None
                       ) -> Target:
    """``UniformHomogeneousAssignmentBuilder.build``: every member subscribes to the same
    topics (those of ``spec.member_ids[0]``).  ``topic_order`` is the order in which the
    never-assigned partitions are listed (Kafka: its hash set's order); default: topic id
    order.  Returns member id -> topic id -> partitions for every member."""
    member_ids = spec.member_ids
    if not member_ids:
        return {}
    subscribed = spec.subscriptions[member_ids[0]]
    if not subscribed:
        return {m: {} for m in member_ids}
    if topic_order is None:
        topic_order = sorted(subscribed, key=kafka_uuid_key)

    held = {(t, p) for m in member_ids for t, parts in spec.assigned[m].items() for p in parts}

    # The partitions that nobody holds, and the total to share.
    unassigned: list[tuple[uuid.UUID, int]] = []
    total = 0
    for topic_id in topic_order:
        count = spec.partition_counts[topic_id]
        unassigned.extend((topic_id, p) for p in range(count) if (topic_id, p) not in held)
        total += count

    member_count = len(member_ids)
    minimum_quota, remaining_extra = divmod(total, member_count)

    # maybeRevokePartitions: keep up to the quota, give up the rest.
    target: Target = {}
    unfilled: list[tuple[str, int]] = []
    for index, member_id in enumerate(member_ids):
        quota = minimum_quota
        has_extra = False
        if remaining_extra > 0:
            quota += 1
            has_extra = True
        kept: dict[uuid.UUID, set[int]] = {}
        for topic_id, parts in spec.assigned[member_id].items():
            if topic_id not in subscribed:
                continue   # Kafka removes the topic (never the case after AssignmentInput)
            if len(parts) <= quota:
                quota -= len(parts)
                kept[topic_id] = set(parts)
            else:
                keep, give_up = parts[:quota], parts[quota:]
                quota = 0
                if keep:
                    kept[topic_id] = set(keep)
                unassigned.extend((topic_id, p) for p in give_up)
        if quota > 0 and has_extra and member_count - index > remaining_extra:
            # Leave the extra partition to a later member, unless this member is one of the
            # last `remaining_extra` members and must take it.
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((member_id, quota))
        if has_extra:
            remaining_extra -= 1
        target[member_id] = kept

    # assignRemainingPartitions: deal the unassigned partitions out in order.
    next_index = 0
    for member_id, quota in unfilled:
        assignment = target[member_id]
        for _ in range(quota):
            if next_index >= len(unassigned):
                break
            topic_id, partition = unassigned[next_index]
            next_index += 1
            assignment.setdefault(topic_id, set()).add(partition)
    if next_index < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return target


# -- heterogeneous --------------------------------------------------------------------------


class _MemberBalancer:
    """Kafka's ``UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer``.

    Holds one topic's subscribers sorted by load (``sizes``, shared with the builder and
    updated by it as partitions move) and two ranges over them: ``[0, least_end)``, the least
    loaded members, which grows rightwards level by level as its members get partitions, and
    ``[most_start, most_end)``, the most loaded ones, which grows leftwards as its members give
    partitions up; members with nothing to give are swapped out past ``most_end``.
    """

    __slots__ = ("sizes", "members", "least_end", "least_count", "next_least",
                 "most_start", "most_end", "most_count", "next_most")

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.members: list[int] = []
        self.least_end = 0          # exclusive
        self.least_count = -1       # the range's partition count before it gets more
        self.next_least = 0
        self.most_start = 0         # inclusive
        self.most_end = 0           # exclusive
        self.most_count = 1         # the range's partition count before it gives any up
        self.next_most = -1

    def initialize(self, members: Sequence[int]) -> int:
        """Reset for a topic's subscribers; returns the largest minus the smallest load."""
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        self.members = sorted(members, key=lambda i: (sizes[i], i))
        n = len(self.members)
        self.least_end = 0
        self.least_count = sizes[self.members[0]] - 1
        self.next_least = 0
        self.most_start = n
        self.most_end = n
        self.most_count = sizes[self.members[-1]] + 1
        self.next_most = n - 1
        return sizes[self.members[-1]] - sizes[self.members[0]]

    def next_least_loaded(self) -> int:
        """The member to give the next partition to (assumes it gets one)."""
        if self.next_least >= self.least_end:
            # Every member of the range got one: raise its level and try to widen it.
            self.least_count += 1
            while (self.least_end < len(self.members)
                   and self.sizes[self.members[self.least_end]] == self.least_count):
                self.least_end += 1
            self.next_least = 0
        member = self.members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        """The member to take the next partition from, or -1 if none is left."""
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # The range was emptied by exclusions: make sure it widens below.
                self.most_count = self.sizes[self.members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while (self.most_start > 0
                   and self.sizes[self.members[self.most_start - 1]] == self.most_count):
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drop the member last returned by :meth:`next_most_loaded` from the most loaded
        range (it has nothing of this topic to give)."""
        members = self.members
        i = self.next_most + 1
        members[i], members[self.most_end - 1] = members[self.most_end - 1], members[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _HeterogeneousBuilder:
    """Kafka's ``UniformHeterogeneousAssignmentBuilder``; members are numbered by their
    position in ``spec.member_ids``."""

    def __init__(self, spec: AssignmentInput) -> None:
        self.spec = spec
        self.member_ids = spec.member_ids
        self.counts = spec.partition_counts
        self.topic_subscribers: dict[uuid.UUID, list[int]] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic_id in spec.subscriptions[member_id]:
                self.topic_subscribers.setdefault(topic_id, []).append(index)
        self.sizes = [0] * len(self.member_ids)
        self.owners = {t: [-1] * self.counts[t] for t in self.topic_subscribers}
        self.target: Target = {}

    def _topic_key(self, topic_id: uuid.UUID) -> tuple[float, int, tuple[int, int]]:
        # Partitions per subscriber descending (Java's double division, as here), then
        # subscriber count ascending, then topic id ascending.
        subscribers = len(self.topic_subscribers[topic_id])
        return (-(self.counts[topic_id] / subscribers), subscribers, kafka_uuid_key(topic_id))

    def _sorted_topics(self, topic_ids: Sequence[uuid.UUID] | set[uuid.UUID]
                       ) -> list[uuid.UUID]:
        return sorted(topic_ids, key=self._topic_key)

    def build(self) -> Target:
        if not self.topic_subscribers:
            return {m: {} for m in self.member_ids}
        self._keep_subscribed()
        self._assign_remaining(self._unassigned())
        self._balance()
        return self.target

    def _keep_subscribed(self) -> None:
        """maybeRevokePartitions: keep what each member holds of topics it subscribes to."""
        for index, member_id in enumerate(self.member_ids):
            subscribed = self.spec.subscriptions[member_id]
            kept: dict[uuid.UUID, set[int]] = {}
            for topic_id, parts in self.spec.assigned[member_id].items():
                if topic_id not in subscribed:
                    continue
                self.sizes[index] += len(parts)
                owners = self.owners[topic_id]
                for p in parts:
                    owners[p] = index
                kept[topic_id] = set(parts)
            self.target[member_id] = kept

    def _unassigned(self) -> dict[uuid.UUID, list[int]]:
        """computeUnassignedPartitions."""
        result = {}
        for topic_id, owners in self.owners.items():
            free = [p for p, owner in enumerate(owners) if owner == -1]
            if free:
                result[topic_id] = free
        return result

    def _assign_remaining(self, unassigned: dict[uuid.UUID, list[int]]) -> None:
        """assignRemainingPartitions: each to its topic's least loaded subscriber."""
        balancer = _MemberBalancer(self.sizes)
        for topic_id in self._sorted_topics(set(unassigned)):
            balancer.initialize(self.topic_subscribers[topic_id])
            for partition in unassigned[topic_id]:
                self._assign(topic_id, partition, balancer.next_least_loaded())

    def _balance(self) -> None:
        """balance and balanceTopics: pass over the topics with 2+ subscribers until a whole
        pass moves nothing, at most MAX_ITERATION_COUNT passes."""
        topic_ids = {t for t, s in self.topic_subscribers.items() if len(s) >= 2}
        if not topic_ids:
            return
        ordered = self._sorted_topics(topic_ids)
        last_rebalanced = -1
        balancer = _MemberBalancer(self.sizes)
        for _ in range(MAX_ITERATION_COUNT):
            for topic_index, topic_id in enumerate(ordered):
                if topic_index == last_rebalanced:
                    return   # a whole pass since this topic moved nothing
                moved = self._balance_topic(topic_id, balancer)
                if moved > 0 or last_rebalanced == -1:
                    last_rebalanced = topic_index

    def _balance_topic(self, topic_id: uuid.UUID, balancer: _MemberBalancer) -> int:
        """balanceTopic: move the topic's partitions from its most to its least loaded
        subscribers; returns how many moved."""
        moved = 0
        if balancer.initialize(self.topic_subscribers[topic_id]) <= 1:
            return moved
        owners = self.owners[topic_id]
        # The topic's partitions grouped by owner, and each owner's [start, end) slice.
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1

        while not balancer.is_balanced():
            while True:
                most_loaded = balancer.next_most_loaded()
                if most_loaded == -1:
                    break
                if most_loaded not in end or end[most_loaded] - start[most_loaded] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most_loaded == -1:
                break   # nobody has anything of this topic left to give
            end[most_loaded] -= 1
            partition = partitions[end[most_loaded]]
            least_loaded = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._assign(topic_id, partition, least_loaded)
            moved += 1
        return moved

    def _assign(self, topic_id: uuid.UUID, partition: int, member_index: int) -> None:
        """assignPartition: move (or give) a partition to a member."""
        owners = self.owners[topic_id]
        old = owners[partition]
        if old != -1:
            assignment = self.target[self.member_ids[old]]
            parts = assignment.get(topic_id)
            if parts is not None:
                parts.discard(partition)
                if not parts:
                    del assignment[topic_id]
            self.sizes[old] -= 1
        self.target[self.member_ids[member_index]].setdefault(topic_id, set()).add(partition)
        owners[partition] = member_index
        self.sizes[member_index] += 1


def assign_heterogeneous(spec: AssignmentInput) -> Target:
    """``UniformHeterogeneousAssignmentBuilder.build``: members' subscriptions may differ.
    Returns member id -> topic id -> partitions for every member."""
    return _HeterogeneousBuilder(spec).build()
