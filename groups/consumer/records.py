"""The consumer-protocol group records of ``__consumer_offsets`` and their replay.

Kafka's ``GroupCoordinatorRecordHelpers`` (what is written) and
``GroupMetadataManager.replay`` (what a record does to the group).  Every key has layout 0
and every value version 0 (Kafka 4.4's schemas); the record type is the key's ``apiKey``:

====  =====================================  ============================================
type  record                                 replay
====  =====================================  ============================================
3     ConsumerGroupMetadata (epoch, hash)     group epoch; tombstone: the group is gone
4     ConsumerGroupPartitionMetadata          (pre-4.0) remembered only to tombstone it
5     ConsumerGroupMemberMetadata             the member's subscription; tombstone: removed
6     ConsumerGroupTargetAssignmentMetadata   the target assignment's epoch
7     ConsumerGroupTargetAssignmentMember     one member's target partitions
8     ConsumerGroupCurrentMemberAssignment    epochs, state, assigned / revoking partitions;
                                              tombstone: epoch -1, nothing assigned
16    ConsumerGroupRegularExpression          the topics a regex resolved to
====  =====================================  ============================================

A member leaves as Kafka writes it: current assignment tombstone, target assignment
tombstone, then subscription tombstone (the subscription tombstone of a member still at an
epoch >= 0 is refused by Kafka's replay; here it is applied all the same).

The live coordinator applies the records it writes with the same functions (``apply``), so
the group in memory is the one a restart rebuilds.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from groups.consumer.group import ConsumerGroup, ResolvedRegex
from groups.consumer.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    Assigned,
    ClassicProtocol,
    ConsumerGroupMember,
    MemberState,
)
from groups.records import Record, coordinator_record
from wire.messages import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)

__all__ = ["Change", "apply", "encode", "epoch", "epoch_tombstone", "subscription",
           "subscription_tombstone", "target_member", "target_member_tombstone",
           "target_metadata", "target_metadata_tombstone", "current_assignment",
           "current_assignment_tombstone", "regex", "regex_tombstone",
           "partition_metadata_tombstone"]

Change = tuple[int, Any, Any]   # (record type, key struct, value struct or None)

_TP = ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions


def epoch(group_id: str, group_epoch: int, metadata_hash: int) -> Change:
    return (3, ConsumerGroupMetadataKey(group_id=group_id),
            ConsumerGroupMetadataValue(epoch=group_epoch, metadata_hash=metadata_hash))


def epoch_tombstone(group_id: str) -> Change:
    return (3, ConsumerGroupMetadataKey(group_id=group_id), None)


def partition_metadata_tombstone(group_id: str) -> Change:
    return (4, ConsumerGroupPartitionMetadataKey(group_id=group_id), None)


def subscription(group_id: str, m: ConsumerGroupMember) -> Change:
    classic = None
    if m.classic_protocols is not None:
        classic = ConsumerGroupMemberMetadataValue.ClassicMemberMetadata(
            session_timeout_ms=m.classic_session_timeout_ms or 0,
            supported_protocols=[ConsumerGroupMemberMetadataValue.ClassicProtocol(
                name=p.name, metadata=p.metadata) for p in m.classic_protocols])
    return (5, ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=m.member_id),
            ConsumerGroupMemberMetadataValue(
                instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
                client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex or "",   # Kafka's "no regex"
                rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor,
                classic_member_metadata=classic))


def subscription_tombstone(group_id: str, member_id: str) -> Change:
    return (5, ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None)


def target_metadata(group_id: str, assignment_epoch: int, timestamp_ms: int) -> Change:
    return (6, ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id),
            ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=assignment_epoch,
                                                       assignment_timestamp=timestamp_ms))


def target_metadata_tombstone(group_id: str) -> Change:
    return (6, ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id), None)


def target_member(group_id: str, member_id: str,
                  partitions: dict[uuid.UUID, frozenset[int]]) -> Change:
    tp = ConsumerGroupTargetAssignmentMemberValue.TopicPartition
    return (7, ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
            ConsumerGroupTargetAssignmentMemberValue(topic_partitions=[
                tp(topic_id=t, partitions=sorted(p)) for t, p in partitions.items() if p]))


def target_member_tombstone(group_id: str, member_id: str) -> Change:
    return (7, ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None)


def _tps(assigned: Assigned) -> list[Any]:
    out = []
    for topic_id, partitions in assigned.items():
        if not partitions:
            continue
        ordered = sorted(partitions)
        out.append(_TP(topic_id=topic_id, partitions=ordered,
                       assignment_epochs=[partitions[p] for p in ordered]))
    return out


def current_assignment(group_id: str, m: ConsumerGroupMember) -> Change:
    return (8, ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=m.member_id),
            ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
                state=int(m.state), assigned_partitions=_tps(m.assigned),
                partitions_pending_revocation=_tps(m.pending_revocation)))


def current_assignment_tombstone(group_id: str, member_id: str) -> Change:
    return (8, ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None)


def regex(group_id: str, pattern: str, resolved: ResolvedRegex) -> Change:
    return (16, ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=pattern),
            ConsumerGroupRegularExpressionValue(topics=sorted(resolved.topics),
                                                version=resolved.version,
                                                timestamp=resolved.timestamp_ms))


def regex_tombstone(group_id: str, pattern: str) -> Change:
    return (16, ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=pattern),
            None)


def encode(change: Change) -> Record:
    record_type, key, value = change
    return coordinator_record(record_type, key, value, 0)


# -- replay ---------------------------------------------------------------------------------

def _assigned(tps: list[Any] | None) -> Assigned:
    out: Assigned = {}
    for tp in tps or []:
        epochs = tp.assignment_epochs
        if epochs is None or len(epochs) != len(tp.partitions):
            epochs = [0] * len(tp.partitions)   # written before assignment epochs: epoch 0
        if tp.partitions:
            out[tp.topic_id] = dict(zip(tp.partitions, epochs, strict=True))
    return out


def apply(groups: dict[str, ConsumerGroup], change: Change) -> None:
    """Replay one record into ``groups`` (group id -> group); any record but a tombstone
    creates the group it names."""
    record_type, key, value = change
    group_id = key.group_id
    group = groups.get(group_id)
    if group is None:
        if value is None:
            return
        group = groups[group_id] = ConsumerGroup(group_id)
    group.version += 1
    if record_type == 3:
        if value is None:
            group.dead = True
            del groups[group_id]
            return
        group.group_epoch = value.epoch
        group.metadata_hash = value.metadata_hash
    elif record_type == 4:
        group.has_partition_metadata_record = value is not None
    elif record_type == 5:
        if value is None:
            group.remove_member(key.member_id)
            return
        old = group.members.get(key.member_id) or ConsumerGroupMember(key.member_id)
        classic = value.classic_member_metadata
        group.set_member(replace(
            old, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=tuple(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex or None,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor or None,
            classic_session_timeout_ms=None if classic is None else classic.session_timeout_ms,
            classic_protocols=None if classic is None else tuple(
                ClassicProtocol(p.name, bytes(p.metadata)) for p in classic.supported_protocols)))
    elif record_type == 6:
        if value is None:
            group.assignment_epoch, group.assignment_timestamp_ms = 0, 0
        else:
            group.assignment_epoch = value.assignment_epoch
            group.assignment_timestamp_ms = value.assignment_timestamp
    elif record_type == 7:
        if value is None:
            group.target.pop(key.member_id, None)
        else:
            group.target[key.member_id] = {
                tp.topic_id: frozenset(tp.partitions) for tp in value.topic_partitions
                if tp.partitions}
    elif record_type == 8:
        old = group.members.get(key.member_id) or ConsumerGroupMember(key.member_id)
        if value is None:
            if key.member_id not in group.members:
                return
            group.set_member(replace(old, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                     previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                     state=MemberState.STABLE, assigned={},
                                     pending_revocation={}))
            return
        group.set_member(replace(
            old, member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
            state=MemberState.of(value.state), assigned=_assigned(value.assigned_partitions),
            pending_revocation=_assigned(value.partitions_pending_revocation)))
    elif record_type == 16:
        if value is None:
            group.resolved_regexes.pop(key.regular_expression, None)
        else:
            group.resolved_regexes[key.regular_expression] = ResolvedRegex(
                frozenset(value.topics), value.version, value.timestamp)
