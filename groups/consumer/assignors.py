"""Server-side partition assignors of the consumer group protocol (KIP-848): ``uniform``
(Kafka's ``UniformAssignor``, the default) and ``range`` (Kafka's ``RangeAssignor``).

Theory of operation
-------------------
When the group epoch moves, the coordinator asks an assignor for a new *target* assignment:
:func:`assign` gets every member (its resolved subscription, rack, instance id and current
target assignment) and the subscribed topics (partition counts, replica racks), and returns
every member's new target.  The coordinator then reconciles each member towards it.

This module is the front, Kafka's ``ConsumerGroupPartitionAssignor`` implementations'
``assign``: it cleans the input into an :class:`~groups.consumer.assignor_common.AssignmentInput`
(Kafka's ``GroupSpec`` and ``SubscribedTopicDescriber``), decides whether the subscriptions
are homogeneous, and calls the ported builders:

* ``uniform``: ``uniform_assignor.assign_homogeneous`` (``UniformHomogeneousAssignmentBuilder``)
  when every member subscribes to the same topics, else ``assign_heterogeneous``
  (``UniformHeterogeneousAssignmentBuilder``);
* ``range``: ``range_assignor.assign_range`` (``RangeAssignor``).

Cleaning (what Kafka's callers guarantee, done here so that any input is safe):

* subscribed topic ids not in ``topics`` are dropped (Kafka resolves subscriptions against the
  metadata image, so a deleted or not yet created topic is never subscribed);
* a member's current assignment keeps only topics it subscribes to, partitions below the
  topic's partition count, and a partition held by two members stays with the first.  Kafka
  drops unsubscribed topics itself; the last two never happen in Kafka.

Orders: members are sorted by member id (Kafka iterates a hash map); topics, where Kafka
iterates a hash set, in Kafka's ``Uuid`` order; see ``assignor_common``.  The same input
therefore always gives the same output.

Subscription type: Kafka's ``ConsumerGroup.subscriptionType`` is computed from the subscribed
topic *names* and regular expressions; here only resolved ids are known, so a group is
homogeneous when every member's resolved (existing) subscription is the same set.

Racks: Kafka 4.3.1's uniform and range assignors are not rack-aware, so ``rack_id`` and
``partition_racks`` are accepted and ignored.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from groups.consumer.assignor_common import (
    AssignmentInput,
    PartitionAssignorError,
    java_string_key,
    kafka_uuid_key,
)
from groups.consumer.range_assignor import assign_range
from groups.consumer.uniform_assignor import assign_heterogeneous, assign_homogeneous

__all__ = ["ASSIGNORS", "MemberSpec", "TopicSpec", "PartitionAssignorError", "assign",
           "assignment_input", "is_homogeneous"]

ASSIGNORS: tuple[str, ...] = ("uniform", "range")   # the names, default first


def _empty() -> Mapping[Any, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as the assignor sees it."""

    # the resolved subscription (names and regex already resolved to ids)
    subscribed_topic_ids: frozenset[uuid.UUID]
    rack_id: str | None = None
    instance_id: str | None = None
    # the member's CURRENT TARGET assignment (stickiness input); not hashed (a mapping)
    assigned: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=_empty, hash=False)


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    num_partitions: int
    # partition -> racks of its replicas (may be empty: no rack info); not hashed (a mapping)
    partition_racks: Mapping[int, frozenset[str]] = field(default_factory=_empty, hash=False)


def assignment_input(members: Mapping[str, MemberSpec],
                     topics: Mapping[uuid.UUID, TopicSpec]) -> AssignmentInput:
    """The cleaned input of the builders (see the module docstring)."""
    member_ids = tuple(sorted(members, key=java_string_key))
    subscriptions = {m: frozenset(t for t in members[m].subscribed_topic_ids if t in topics)
                     for m in member_ids}
    subscribed = set().union(*subscriptions.values()) if subscriptions else set()
    counts: dict[uuid.UUID, int] = {}
    for topic_id in subscribed:
        count = topics[topic_id].num_partitions
        if count < 0:
            raise ValueError(f"topic {topic_id} has a negative partition count {count}")
        counts[topic_id] = count

    claimed: set[tuple[uuid.UUID, int]] = set()
    assigned: dict[str, dict[uuid.UUID, tuple[int, ...]]] = {}
    for member_id in member_ids:
        member_subscriptions = subscriptions[member_id]
        current = members[member_id].assigned
        kept: dict[uuid.UUID, tuple[int, ...]] = {}
        for topic_id in sorted(current, key=kafka_uuid_key):
            if topic_id not in member_subscriptions:
                continue
            count = counts[topic_id]
            parts = []
            for p in sorted(current[topic_id]):
                if 0 <= p < count and (topic_id, p) not in claimed:
                    claimed.add((topic_id, p))
                    parts.append(p)
            if parts:
                kept[topic_id] = tuple(parts)
        assigned[member_id] = kept

    return AssignmentInput(
        member_ids=member_ids,
        subscriptions=subscriptions,
        assigned=assigned,
        instance_ids={m: members[m].instance_id for m in member_ids},
        partition_counts=counts,
    )


def is_homogeneous(spec: AssignmentInput) -> bool:
    """Every member subscribes to the same (existing) topics."""
    return len({spec.subscriptions[m] for m in spec.member_ids}) <= 1


def assign(assignor: str, members: Mapping[str, MemberSpec],
           topics: Mapping[uuid.UUID, TopicSpec]) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    """The new target assignment: every member id of `members` is a key of the result (an
    empty dict when it gets nothing); topic ids in a member's subscription that are not in
    `topics` are ignored (Kafka: topic deleted / not yet existing). Raises ValueError for an
    unknown assignor name."""
    if assignor not in ASSIGNORS:
        raise ValueError(f"Unknown assignor {assignor!r}; known: {', '.join(ASSIGNORS)}")
    spec = assignment_input(members, topics)
    if not spec.member_ids:
        return {}
    if assignor == "range":
        target = assign_range(spec)
    elif is_homogeneous(spec):
        target = assign_homogeneous(spec)
    else:
        target = assign_heterogeneous(spec)
    result: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
    for member_id in spec.member_ids:
        assignment = target.get(member_id, {})
        result[member_id] = {t: frozenset(parts)
                             for t in sorted(assignment, key=kafka_uuid_key)
                             if (parts := assignment[t])}
    return result
