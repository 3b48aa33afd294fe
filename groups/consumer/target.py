"""What a heartbeat recomputes for the whole group: resolved regexes, the group epoch and the
target assignment (Kafka's ``maybeUpdateRegularExpressions``, ``updateSubscriptionMetadata``
and ``maybeUpdateTargetAssignment`` with its ``TargetAssignmentBuilder``).

Each function changes the group only through ``apply(change)``: the caller applies the
record to the group and keeps it for the write.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from groups.consumer import records as R
from groups.consumer.assignors import MemberSpec, PartitionAssignorError, TopicSpec, assign
from groups.consumer.errors import GroupApiError
from groups.consumer.group import ConsumerGroup, ResolvedRegex
from groups.consumer.member import ConsumerGroupMember
from groups.consumer.topics import TopicsImage
from wire.error_codes import ErrorCode

__all__ = ["compile_regex", "update_regexes", "update_group_epoch", "subscribed_ids",
           "recompute_target", "can_compute_next_target", "REGEX_BATCH_REFRESH_MIN_INTERVAL_MS"]

E = ErrorCode
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000   # Kafka's GroupMetadataManager constant
Apply = Callable[[R.Change], None]


def compile_regex(pattern: str) -> re.Pattern[str]:
    """The regex a member subscribes with (Kafka compiles RE2/J syntax; Python's ``re``
    reads that syntax the same for what RE2 accepts), matched against whole topic names."""
    try:
        return re.compile(pattern)
    except re.error as err:
        raise GroupApiError(E.INVALID_REGULAR_EXPRESSION,
                            f"SubscribedTopicRegex `{pattern}` is not a valid regular "
                            f"expression: {err}.") from None


def update_regexes(group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                   image: TopicsImage, now: int, last_refresh: dict[str, int], apply: Apply) -> int:
    """Kafka's ``maybeUpdateRegularExpressions``, resolving at once (Kafka resolves off
    the coordinator's thread and comes back): 0 no change, 1 the member's regex changed,
    2 changed and resolved (the group epoch must move).  ``last_refresh``: group id -> when
    its regexes were last resolved (ms)."""
    old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
    status = 0
    require_refresh = False
    if old != new:
        status = 1
        if old and not group.regex_in_use(old, except_member=member.member_id):
            if old in group.resolved_regexes:
                apply(R.regex_tombstone(group.group_id, old))
        if new:
            if not group.regex_in_use(new, except_member=member.member_id):
                compile_regex(new)
                require_refresh = True
            elif new in group.resolved_regexes:
                status = 2
        elif old:
            status = 2
    regexes = {m.subscribed_topic_regex for m in group.members.values()
               if m.subscribed_topic_regex and m.member_id != member.member_id}
    if new:
        regexes.add(new)
    if not regexes:
        return status
    last = last_refresh.get(group.group_id, -REGEX_BATCH_REFRESH_MIN_INTERVAL_MS - 1)
    unresolved = any(r not in group.resolved_regexes for r in regexes)
    stale = any(group.resolved_regexes[r].version < image.version
                for r in regexes if r in group.resolved_regexes)
    if not (require_refresh or unresolved or
            (stale and now > last + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS)):
        return status
    last_refresh[group.group_id] = now
    resolved_any = False
    for pattern in sorted(regexes):
        try:
            compiled = re.compile(pattern)
        except re.error:
            continue   # validated when it came in; Kafka logs and ignores it
        topics = frozenset(n for n in image.by_name if compiled.fullmatch(n))
        previous = group.resolved_regexes.get(pattern)
        if previous is not None and previous.topics == topics:
            continue
        apply(R.regex(group.group_id, pattern, ResolvedRegex(topics, image.version, now)))
        resolved_any = True
    return 2 if resolved_any else status


def update_group_epoch(group: ConsumerGroup, bump: bool, image: TopicsImage, apply: Apply) -> bool:
    """Kafka's ``updateSubscriptionMetadata``: a new metadata hash bumps the epoch too.
    True when the epoch moved (a rebalance)."""
    metadata_hash = image.group_hash(group.subscribed_topic_names())
    group.metadata_seen = image
    if metadata_hash != group.metadata_hash:
        bump = True
    if bump:
        apply(R.epoch(group.group_id, group.group_epoch + 1, metadata_hash))
    if group.has_partition_metadata_record:
        apply(R.partition_metadata_tombstone(group.group_id))
    return bump


def subscribed_ids(group: ConsumerGroup, member: ConsumerGroupMember,
                   image: TopicsImage) -> set[uuid.UUID]:
    """The ids of the existing topics the member subscribes to, by name or regex."""
    names = set(member.subscribed_topic_names)
    if member.subscribed_topic_regex:
        resolved = group.resolved_regexes.get(member.subscribed_topic_regex)
        if resolved is not None:
            names |= resolved.topics
    return {image.by_name[n].topic_id for n in names if n in image.by_name}


def can_compute_next_target(assignment_timestamp_ms: int, interval_ms: int, now_ms: int) -> bool:
    """Kafka's ``canComputeNextTargetAssignment``: at once when there is no target yet (or
    its time is unknown: 0) or the interval is 0, else once the interval has passed since
    the last computation."""
    if assignment_timestamp_ms == 0 or interval_ms == 0:
        return True
    return now_ms >= assignment_timestamp_ms + interval_ms


def recompute_target(group: ConsumerGroup, image: TopicsImage, now: int, default_assignor: str,
                     apply: Apply) -> None:
    """Run the group's preferred assignor and store the new target at the group epoch
    (Kafka's ``TargetAssignmentBuilder``: only members whose target changed get a record,
    then the metadata record)."""
    assignor = group.preferred_assignor() or default_assignor
    specs = {}
    for m in group.members.values():
        specs[m.member_id] = MemberSpec(
            subscribed_topic_ids=frozenset(subscribed_ids(group, m, image)),
            rack_id=m.rack_id, instance_id=m.instance_id, assigned=group.target_of(m.member_id))
    topic_ids = {t for s in specs.values() for t in s.subscribed_topic_ids}
    topics = {t: TopicSpec(name=image.by_id[t].name, num_partitions=image.by_id[t].num_partitions,
                           partition_racks=image.by_id[t].partition_racks)
              for t in topic_ids}
    try:
        new_target = assign(assignor, specs, topics)
    except PartitionAssignorError as err:
        raise GroupApiError(E.UNKNOWN_SERVER_ERROR,
                            f"Failed to compute a new target assignment for epoch "
                            f"{group.group_epoch}: {err}") from None
    for member_id in sorted(new_target):
        partitions = {t: p for t, p in new_target[member_id].items() if p}
        if partitions != group.target_of(member_id) or member_id not in group.target:
            apply(R.target_member(group.group_id, member_id, partitions))
    apply(R.target_metadata(group.group_id, group.group_epoch, now))
