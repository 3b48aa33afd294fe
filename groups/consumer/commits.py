"""Offset commits and fetches from members of a consumer-protocol group (Kafka's
``ConsumerGroup.validateOffsetCommit`` / ``validateOffsetFetch``).

A commit is accepted when its member epoch is the member's current one, or older but not
older than the epoch at which each committed partition was assigned to the member (assigned
or still pending revocation): a member may commit what it consumed before its epoch moved.
Otherwise STALE_MEMBER_EPOCH (a member of the group that joined with JoinGroup, online
migration, gets ILLEGAL_GENERATION instead), for the whole request as in Kafka.  A member id
the group does not know: UNKNOWN_MEMBER_ID.  A consumer-protocol member must use OffsetCommit
v9+ (UNSUPPORTED_VERSION).  An empty group takes simple commits (epoch < 0).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from groups.consumer.group import ConsumerGroup
from groups.consumer.topics import TopicsImage
from wire.error_codes import ErrorCode

__all__ = ["commit_error", "fetch_error"]

E = ErrorCode


def commit_error(group: ConsumerGroup, member_id: str, instance_id: str | None, member_epoch: int,
                 transactional: bool, version: int, partitions: Iterable[tuple[str, int]],
                 image: TopicsImage) -> ErrorCode | None:
    """The request's error, or None when every partition may be committed."""
    if member_epoch < 0 and not group.members:
        return None
    if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
        return None
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    classic = member.uses_classic_protocol
    stale = E.ILLEGAL_GENERATION if classic else E.STALE_MEMBER_EPOCH
    if not transactional and not classic and version < 9:
        return E.UNSUPPORTED_VERSION
    if member_epoch == member.member_epoch:
        return None
    if member_epoch > member.member_epoch:
        return stale
    for topic, partition in partitions:
        info = image.by_name.get(topic)
        topic_id = info.topic_id if info is not None else uuid.UUID(int=0)
        assigned_at = member.assignment_epoch(topic_id, partition)
        if assigned_at is None or member_epoch < assigned_at:
            return stale
    return None


def fetch_error(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode | None:
    """OffsetFetch v9+ with a member id and epoch: both must be the member's."""
    if member_id is None and member_epoch < 0:
        return None
    member = group.members.get(member_id or "")
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if member_epoch != member.member_epoch:
        return E.ILLEGAL_GENERATION if member.uses_classic_protocol else E.STALE_MEMBER_EPOCH
    return None
