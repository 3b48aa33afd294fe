"""ConsumerGroupDescribe (API 69) and a consumer group's ListGroups entry (Kafka's
``ConsumerGroup.asDescribedGroup`` / ``asListedGroup``).

A member's assignment includes its partitions pending revocation (it is still responsible
for them until it revokes them); its target is what the assignor gave it.  Topic names come
from the current metadata; a topic id the metadata no longer has is left out.
"""

from __future__ import annotations

import uuid

from groups.consumer.group import ConsumerGroup
from groups.consumer.member import Assigned, ConsumerGroupMember
from groups.consumer.topics import TopicsImage
from wire.messages import ConsumerGroupDescribeResponse, ListGroupsResponse

__all__ = ["described_group", "listed_group"]

_D = ConsumerGroupDescribeResponse


def _topic_partitions(parts: dict[uuid.UUID, set[int]], image: TopicsImage) -> list:
    out = []
    for topic_id, partitions in parts.items():
        info = image.by_id.get(topic_id)
        if info is None or not partitions:
            continue
        out.append(_D.TopicPartitions(topic_id=topic_id, topic_name=info.name,
                                      partitions=sorted(partitions)))
    return out


def _merged(*assigned: Assigned) -> dict[uuid.UUID, set[int]]:
    out: dict[uuid.UUID, set[int]] = {}
    for a in assigned:
        for topic_id, partitions in a.items():
            out.setdefault(topic_id, set()).update(partitions)
    return out


def described_member(group: ConsumerGroup, m: ConsumerGroupMember, image: TopicsImage) -> object:
    target = {t: set(p) for t, p in group.target_of(m.member_id).items()}
    return _D.Member(
        member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
        member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
        subscribed_topic_names=list(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex or "",   # Kafka describes "" for none
        assignment=_D.Assignment(topic_partitions=_topic_partitions(
            _merged(m.assigned, m.pending_revocation), image)),
        target_assignment=_D.Assignment(topic_partitions=_topic_partitions(target, image)),
        member_type=0 if m.uses_classic_protocol else 1)


def described_group(group: ConsumerGroup, default_assignor: str, image: TopicsImage) -> object:
    return _D.DescribedGroup(
        error_code=0, group_id=group.group_id, group_state=group.state,
        group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
        assignor_name=group.preferred_assignor() or default_assignor,
        members=[described_member(group, m, image) for m in group.members.values()])


def listed_group(group: ConsumerGroup) -> object:
    return ListGroupsResponse.ListedGroup(group_id=group.group_id, protocol_type="consumer",
                                          group_state=group.state, group_type="consumer")
