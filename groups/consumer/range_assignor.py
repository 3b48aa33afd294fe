"""The ``range`` server-side assignor (a port of Kafka's ``RangeAssignor``, KIP-848 flavour).

Each topic is split into contiguous ranges, one per subscriber, in a fixed member order:
with ``n`` partitions and ``k`` subscribers, each gets ``n // k`` partitions and the first
``n % k`` one more; the first member gets the lowest partitions.  A member that would get
nothing (more subscribers than partitions) gets no entry for the topic.

The member order is what makes the assignment predictable: static members (those with a
``group.instance.id``) first, by instance id, then the others by member id (Java's string
order; ``RangeAssignor.sortMemberIds``).  A static member that rejoins under a new member id
therefore gets the same ranges back, as long as the members, the topics and the
subscriptions are unchanged.

Co-partitioning: when every member subscribes to the same topics and the topics have the
same partition count, every member gets the same partition numbers of every topic (what a
join of co-partitioned streams needs).  That is not a special case but a consequence of
splitting every topic by the same order and the same subscriber count.

Kafka has two methods, ``assignHomogeneousGroup`` (every topic counts all the members as
subscribers) and ``assignHeterogeneousGroup`` (each topic counts its own subscribers); when
all members subscribe to the same topics the two counts are equal, so one loop does both
here.  The current assignment is not an input: stickiness comes only from the stable order.
Kafka 4.3.1's range assignor has no rack-aware logic, so neither has this one.
"""

from __future__ import annotations

import uuid

from groups.consumer.assignor_common import AssignmentInput, java_string_key

__all__ = ["assign_range", "member_order"]


def member_order(spec: AssignmentInput) -> list[str]:
    """``RangeAssignor.sortMemberIds``: static members first by instance id, then the rest
    by member id.  (Two members sharing an instance id, which Kafka never has, keep the
    order of ``spec.member_ids``.)"""

    def key(member_id: str) -> tuple[int, bytes]:
        instance_id = spec.instance_ids.get(member_id)
        if instance_id is not None:
            return (0, java_string_key(instance_id))
        return (1, java_string_key(member_id))

    return sorted(spec.member_ids, key=key)


class _TopicRanges:
    """Kafka's ``RangeAssignor.TopicMetadata``: one topic's split, handed out in order."""

    __slots__ = ("num_partitions", "min_quota", "extra", "next_start")

    def __init__(self, num_partitions: int, num_members: int) -> None:
        self.num_partitions = num_partitions
        self.min_quota, self.extra = divmod(num_partitions, num_members)
        self.next_start = 0

    def next_range(self) -> range:
        """addPartitionsToAssignment: the next member's range (maybe empty)."""
        quota = self.min_quota
        if self.extra > 0:
            quota += 1
            self.extra -= 1
        start = self.next_start
        end = min(start + quota, self.num_partitions)
        self.next_start = end
        return range(start, end)


def assign_range(spec: AssignmentInput) -> dict[str, dict[uuid.UUID, set[int]]]:
    """``RangeAssignor.assign``; returns member id -> topic id -> partitions for every
    member."""
    ordered = member_order(spec)
    subscriber_counts: dict[uuid.UUID, int] = {}
    for member_id in ordered:
        for topic_id in spec.subscriptions[member_id]:
            subscriber_counts[topic_id] = subscriber_counts.get(topic_id, 0) + 1
    topics = {t: _TopicRanges(spec.partition_counts[t], n) for t, n in subscriber_counts.items()}

    result: dict[str, dict[uuid.UUID, set[int]]] = {}
    for member_id in ordered:
        assignment: dict[uuid.UUID, set[int]] = {}
        for topic_id in spec.subscriptions[member_id]:
            partitions = topics[topic_id].next_range()
            if partitions:
                assignment[topic_id] = set(partitions)
        result[member_id] = assignment
    return result
