"""Kafka's ``TopicDeletionManager`` (TopicDeletionManager.scala, 3.x) over a :class:`Step`.

A topic queued in ``/admin/delete_topics`` is deleted in two phases:

1. *Start* (``onTopicDeletion``): its partitions go Offline then NonExistent, every live
   broker gets an UpdateMetadata with leader -2 for them (so they stop serving), each
   replica on a live broker goes Offline (StopReplica without delete, out of the ISR) then
   DeletionStarted (StopReplica with ``delete_partition``).  Replicas on dead brokers go
   DeletionIneligible and the topic becomes *ineligible*: it waits, queued, until the
   broker comes back (``resume_deletion_for_topics`` from broker startup) - a topic is
   never deleted while one of its replicas cannot be told to delete its log.
2. *Complete* (``completeDeleteTopic``), once every replica answered its StopReplica
   without error (``complete_replica_deletion``): ``/brokers/topics/<t>`` and everything
   under it, ``/config/topics/<t>`` and ``/admin/delete_topics/<t>`` are deleted (fenced)
   and the topic leaves the context.  A replica whose StopReplica failed goes
   DeletionIneligible and the topic waits for a retry (broker restart or failover).

With ``delete.topic.enable=false`` the ``/admin/delete_topics`` entries are removed and
nothing is deleted.
"""

from __future__ import annotations

from collections.abc import Iterable

from cluster import znodes
from cluster.controller.context import PartitionState, ReplicaState
from cluster.controller.partition_state_machine import handle_state_changes
from cluster.controller.replica_state_machine import handle_replica_state_changes
from cluster.controller.step import Step
from cluster.coordination import Delete, NoNodeError

__all__ = [
    "complete_replica_deletion",
    "delete_topic_deletion_entries",
    "enqueue_topics_for_deletion",
    "fail_replica_deletion",
    "init",
    "mark_topic_ineligible",
    "resume_deletion_for_topics",
    "resume_deletions",
]

PartitionReplica = tuple[str, int, int]


def init(step: Step, topics_to_delete: Iterable[str], ineligible: Iterable[str]) -> None:
    ctx = step.ctx
    if step.config.delete_topic_enable:
        ctx.topics_to_be_deleted |= set(topics_to_delete)
        ctx.topics_ineligible_for_deletion |= set(ineligible) & ctx.topics_to_be_deleted
    else:
        delete_topic_deletion_entries(step, topics_to_delete)


def delete_topic_deletion_entries(step: Step, topics: Iterable[str]) -> None:
    for topic in sorted(topics):
        step.write([Delete(znodes.delete_topic_path(topic))], (NoNodeError,))


def enqueue_topics_for_deletion(step: Step, topics: Iterable[str]) -> None:
    if step.config.delete_topic_enable:
        step.ctx.topics_to_be_deleted |= set(topics)
        resume_deletions(step)


def mark_topic_ineligible(step: Step, topics: Iterable[str]) -> None:
    if step.config.delete_topic_enable:
        step.ctx.topics_ineligible_for_deletion |= set(topics) & step.ctx.topics_to_be_deleted


def resume_deletion_for_topics(step: Step, topics: Iterable[str]) -> None:
    ctx = step.ctx
    to_resume = set(topics) & ctx.topics_to_be_deleted
    ctx.topics_ineligible_for_deletion -= to_resume
    if to_resume:
        resume_deletions(step)


def complete_replica_deletion(step: Step, replicas: Iterable[PartitionReplica]) -> None:
    ctx = step.ctx
    deleted = [r for r in replicas if ctx.is_topic_queued_for_deletion(r[0])]
    handle_replica_state_changes(step, deleted, ReplicaState.DELETION_SUCCESSFUL)
    resume_deletions(step)


def fail_replica_deletion(step: Step, replicas: Iterable[PartitionReplica]) -> None:
    ctx = step.ctx
    if not step.config.delete_topic_enable:
        return
    failed = [r for r in replicas if ctx.is_topic_queued_for_deletion(r[0])]
    if failed:
        handle_replica_state_changes(step, failed, ReplicaState.DELETION_INELIGIBLE)
        mark_topic_ineligible(step, {r[0] for r in failed})
        resume_deletions(step)


def _is_eligible(step: Step, topic: str) -> bool:
    ctx = step.ctx
    return (topic in ctx.topics_to_be_deleted
            and not ctx.is_any_replica_in_state(topic, ReplicaState.DELETION_STARTED)
            and topic not in ctx.topics_ineligible_for_deletion)


def resume_deletions(step: Step) -> None:
    ctx = step.ctx
    retry: list[str] = []
    eligible: list[str] = []
    for topic in sorted(ctx.topics_to_be_deleted):
        if ctx.are_all_replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL):
            _complete_delete_topic(step, topic)
        elif not ctx.is_any_replica_in_state(topic, ReplicaState.DELETION_STARTED):
            if ctx.is_any_replica_in_state(topic, ReplicaState.DELETION_INELIGIBLE):
                retry.append(topic)
        if _is_eligible(step, topic):
            eligible.append(topic)
    if retry:
        # retryDeletionForIneligibleReplicas: back to Offline so a later start picks them up.
        failed = [r for t in retry for r in ctx.replicas_in_state(t, ReplicaState.DELETION_INELIGIBLE)]
        handle_replica_state_changes(step, failed, ReplicaState.OFFLINE)
    if eligible:
        _on_topic_deletion(step, eligible)


def _complete_delete_topic(step: Step, topic: str) -> None:
    ctx = step.ctx
    handle_replica_state_changes(
        step, ctx.replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL), ReplicaState.NON_EXISTENT)
    step.delete_tree(znodes.topic_path(topic))
    step.write([Delete(znodes.config_entity_path("topics", topic))], (NoNodeError,))
    step.write([Delete(znodes.delete_topic_path(topic))], (NoNodeError,))
    ctx.remove_topic(topic)


def _on_topic_deletion(step: Step, topics: list[str]) -> None:
    ctx = step.ctx
    unseen = [t for t in topics if t not in ctx.topics_with_deletion_started]
    if unseen:
        partitions = [tp for t in unseen for tp in ctx.partitions_for_topic(t)]
        handle_state_changes(step, partitions, PartitionState.OFFLINE)
        handle_state_changes(step, partitions, PartitionState.NON_EXISTENT)
        ctx.topics_with_deletion_started |= set(unseen)
    # sendMetadataUpdate: brokers stop serving the topics (leader -2).
    step.batch.add_update_metadata(
        sorted(ctx.live_or_shutting_down_ids()), [tp for t in topics for tp in ctx.partitions_for_topic(t)])
    step.flush()
    _on_partition_deletion(step, topics)


def _on_partition_deletion(step: Step, topics: list[str]) -> None:
    ctx = step.ctx
    dead: list[PartitionReplica] = []
    retry: list[PartitionReplica] = []
    ineligible: set[str] = set()
    for topic in topics:
        done = set(ctx.replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL))
        for r in ctx.replicas_for_topic(topic):
            if not ctx.is_replica_online(r[2]):
                dead.append(r)
                ineligible.add(topic)
            elif r not in done:
                retry.append(r)
    handle_replica_state_changes(step, dead, ReplicaState.DELETION_INELIGIBLE)
    handle_replica_state_changes(step, retry, ReplicaState.OFFLINE)
    handle_replica_state_changes(step, retry, ReplicaState.DELETION_STARTED)
    if ineligible:
        mark_topic_ineligible(step, ineligible)
