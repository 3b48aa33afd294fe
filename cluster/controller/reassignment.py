"""Partition reassignment (KIP-455): Kafka's ``KafkaController.onPartitionReassignment`` and
its helpers (ZooKeeper mode, 3.x), over a :class:`Step`.

Names as Kafka's: RS the partition's replica set, ORS the original replicas, TRS the
target, AR = TRS - ORS (adding), RR = ORS - TRS (removing); while a reassignment runs the
topic znode holds RS = TRS + ORS with ``adding_replicas``/``removing_replicas``, so a new
controller resumes it.

* Phase U (every trigger): write RS/AR/RR to the topic znode, then the context; replicas
  of an earlier, superseded reassignment that are in no set any more are stopped and
  deleted; the topic may not be deleted meanwhile.
* Phase A (TRS not all in the ISR): bump the leader epoch (same leader and ISR) and send
  LeaderAndIsr with the new RS to ORS and (``is_new``) AR; AR replicas go NewReplica - the
  new followers fetch from the leader, which adds them to the ISR with AlterPartition as
  they catch up.
* Phase B (TRS all in the ISR; checked after every successful AlterPartition of the
  partition, at failover and when a broker of TRS starts): AR Online; RS = TRS in the
  context; the leader moves to the first live in-ISR target replica if it is not in TRS or
  not live (else its epoch is bumped to announce the smaller RS); RR go Offline (out of the
  ISR), then are deleted (StopReplica delete); the topic znode gets RS = TRS; the partition
  leaves ``/admin/reassign_partitions``; UpdateMetadata to every broker.

Triggers: AlterPartitionReassignments (key 45, a target or ``None`` = cancel: back to
ORS), ``/admin/reassign_partitions`` (created by a tool; its failures are removed from it),
ListPartitionReassignments (key 46) answers from the context.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from cluster import znodes
from cluster.controller import topic_deletion
from cluster.controller.context import (
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from cluster.controller.partition_state_machine import Strategy, handle_state_changes
from cluster.controller.replica_state_machine import handle_replica_state_changes
from cluster.controller.step import Step
from cluster.coordination import Create, Delete, NodeExistsError, NoNodeError, SetData
from wire.error_codes import ErrorCode

__all__ = [
    "ReassignmentResult",
    "api_reassignment",
    "list_reassignments",
    "maybe_complete",
    "maybe_resume",
    "zk_reassignment",
]

# progress of reassignments, one line as each partition starts moving and as it completes
_log = logging.getLogger("kbroker.controller.reassignment")

# (error code, message or None) per partition: what AlterPartitionReassignments answers.
ReassignmentResult = tuple[int, str | None]
_NOT_EXIST: ReassignmentResult = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")


# -- triggers ----------------------------------------------------------------------------------


def api_reassignment(
    step: Step, reassignments: Mapping[TopicPartition, tuple[int, ...] | None]
) -> dict[TopicPartition, ReassignmentResult]:
    """``processApiPartitionReassignment`` (the controller is active)."""
    results: dict[TopicPartition, ReassignmentResult] = {}
    to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
    for tp, target in reassignments.items():
        error = None if target is None else _validate_replicas(step, tp, target)
        if error is not None:
            results[tp] = error
            continue
        built = _maybe_build(step, tp, target)
        if built is None:
            results[tp] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
        else:
            to_reassign[tp] = built
    # The latest reassignment (by API or through ZooKeeper) wins.
    _maybe_remove_from_zk(step, lambda tp, _: tp in to_reassign)
    results.update(_maybe_trigger(step, to_reassign))
    return results


def zk_reassignment(step: Step, content: Mapping[TopicPartition, tuple[int, ...]] | None) -> set[TopicPartition]:
    """``processZkPartitionReassignment``: ``/admin/reassign_partitions`` was created (or
    found at failover) with ``content``; returns the partitions it started."""
    ctx = step.ctx
    ctx.zk_reassignment = None if content is None else dict(content)
    if content is None:
        return set()
    results: dict[TopicPartition, ReassignmentResult] = {}
    to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
    for tp, target in content.items():
        built = _maybe_build(step, tp, tuple(target))
        if built is None:
            results[tp] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
        else:
            to_reassign[tp] = built
    results.update(_maybe_trigger(step, to_reassign))
    failed = {tp for tp, (code, _) in results.items() if code != ErrorCode.NONE}
    if failed:
        _maybe_remove_from_zk(step, lambda tp, _: tp in failed)
    return {tp for tp, (code, _) in results.items() if code == ErrorCode.NONE}


def list_reassignments(step: Step, partitions: frozenset[TopicPartition] | None
                       ) -> dict[TopicPartition, ReplicaAssignment]:
    """``processListPartitionReassignments``: the ones in progress among ``partitions``."""
    ctx = step.ctx
    asked = ctx.partitions_being_reassigned if partitions is None else partitions
    return {tp: ctx.assignments[tp] for tp in sorted(asked)
            if tp in ctx.assignments and ctx.assignments[tp].is_being_reassigned}


def maybe_complete(step: Step, tp: TopicPartition) -> None:
    """``maybeCompleteReassignment``: after the partition's ISR changed."""
    ctx = step.ctx
    if tp in ctx.partitions_being_reassigned and _is_complete(step, tp, ctx.assignments[tp]):
        _on_partition_reassignment(step, tp, ctx.assignments[tp])


def maybe_resume(step: Step, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]) -> None:
    """``maybeResumeReassignments``: at failover, and when a target broker starts."""
    ctx = step.ctx
    for tp in sorted(ctx.partitions_being_reassigned):
        if tp in ctx.assignments and should_resume(tp, ctx.assignments[tp]):
            _on_partition_reassignment(step, tp, ctx.assignments[tp])


# -- validation --------------------------------------------------------------------------------


def _validate_replicas(step: Step, tp: TopicPartition, replicas: tuple[int, ...]) -> ReassignmentResult | None:
    ctx = step.ctx
    if not replicas:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment."
    if len(set(replicas)) != len(replicas):
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate replica ids in partition reassignment replica list: {_seq(replicas)}")
    if any(r < 0 for r in replicas):
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {_seq(replicas)}"
    current = ctx.assignments.get(tp, ReplicaAssignment(()))
    adding = current.reassign_to(replicas).adding
    live = ctx.live_broker_ids()
    if not set(adding) <= live:
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Replica assignment has brokers that are not alive. Replica list: {_seq(adding)}, "
                f"live broker list: {_set(live)}")
    return None


def _seq(xs: tuple[int, ...]) -> str:
    return "List(" + ", ".join(map(str, xs)) + ")"  # Scala's Seq.toString


def _set(xs: set[int]) -> str:
    return "Set(" + ", ".join(map(str, sorted(xs))) + ")"


def _maybe_build(step: Step, tp: TopicPartition, target: tuple[int, ...] | None) -> ReplicaAssignment | None:
    """``maybeBuildReassignment``: cancelling (None) returns to the original replicas."""
    current = step.ctx.assignments.get(tp, ReplicaAssignment(()))
    if current.is_being_reassigned:
        return current.reassign_to(current.origin if target is None else target)
    return None if target is None else current.reassign_to(target)


def _maybe_trigger(step: Step, reassignments: Mapping[TopicPartition, ReplicaAssignment]
                   ) -> dict[TopicPartition, ReassignmentResult]:
    ctx = step.ctx
    out: dict[TopicPartition, ReassignmentResult] = {}
    for tp, reassignment in reassignments.items():
        if ctx.is_topic_queued_for_deletion(tp[0]) or not ctx.replicas(tp):
            out[tp] = _NOT_EXIST
        elif tp not in ctx.leadership:
            # Kafka's updateLeaderEpoch throws IllegalStateException for a partition without
            # a state znode; the API answers UNKNOWN_SERVER_ERROR.
            out[tp] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
        else:
            _on_partition_reassignment(step, tp, reassignment)
            out[tp] = (ErrorCode.NONE, None)
    return out


# -- the reassignment itself -------------------------------------------------------------------


def _is_complete(step: Step, tp: TopicPartition, assignment: ReplicaAssignment) -> bool:
    if not assignment.is_being_reassigned:
        return True
    lic = step.ctx.leadership.get(tp)
    return lic is not None and set(assignment.target) <= set(lic.leader_and_isr.isr)


def _on_partition_reassignment(step: Step, tp: TopicPartition, reassignment: ReplicaAssignment) -> None:
    ctx = step.ctx
    topic_deletion.mark_topic_ineligible(step, {tp[0]})
    _update_current_reassignment(step, tp, reassignment)
    if not _is_complete(step, tp, reassignment):
        _log.info("Reassigning %s-%d to %s (adding %s, removing %s): %d partition(s) being reassigned",
                  tp[0], tp[1], _seq(reassignment.target), _seq(reassignment.adding), _seq(reassignment.removing),
                  len(ctx.partitions_being_reassigned))
        _update_leader_epoch_and_send(step, tp, reassignment)  # A1
        for r in reassignment.adding:  # A2, one replica at a time as Kafka does
            handle_replica_state_changes(step, [(tp[0], tp[1], r)], ReplicaState.NEW)
        return
    handle_replica_state_changes(step, [(tp[0], tp[1], r) for r in reassignment.adding],
                                 ReplicaState.ONLINE)  # B1
    completed = ReplicaAssignment(reassignment.target)
    ctx.assignments[tp] = completed  # B2
    _move_leader_if_required(step, tp, completed)  # B3
    _stop_removed_replicas(step, tp, reassignment.removing)  # B4, B5
    _write_topic(step, tp[0])  # B6
    _maybe_remove_from_zk(step, lambda p, replicas: p == tp and tuple(replicas) == completed.replicas)  # B7
    ctx.partitions_being_reassigned.discard(tp)
    _log.info("Reassignment of %s-%d completed: replicas %s; %d partition(s) still being reassigned",
              tp[0], tp[1], _seq(completed.replicas), len(ctx.partitions_being_reassigned))
    step.batch.add_update_metadata(sorted(ctx.live_or_shutting_down_ids()), [tp])  # B8
    step.flush()
    topic_deletion.resume_deletion_for_topics(step, {tp[0]})


def _update_current_reassignment(step: Step, tp: TopicPartition, reassignment: ReplicaAssignment) -> None:
    ctx = step.ctx
    current = ctx.assignments[tp]
    if current != reassignment:
        ctx.assignments[tp] = reassignment
        _write_topic(step, tp[0])  # U1 (decided first: the write goes out before the requests)
        unneeded = tuple(r for r in current.replicas if r not in reassignment.replicas)
        if unneeded:
            _stop_removed_replicas(step, tp, unneeded)
    ctx.partitions_being_reassigned.add(tp)


def _update_leader_epoch_and_send(step: Step, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
    """``updateLeaderEpochAndSendRequest``: the same leader and ISR at leader epoch + 1."""
    ctx = step.ctx
    lic = ctx.leadership.get(tp)
    if lic is None or lic.controller_epoch > ctx.epoch:
        return  # Kafka logs "Failed to send LeaderAndIsr request with new replica assignment"
    lai = lic.leader_and_isr
    written = step.update_partition_state(tp, lai.new_leader_and_isr(lai.leader, lai.isr))
    step.batch.add_leader_and_isr(assignment.origin, tp, written, is_new=False)
    step.batch.add_leader_and_isr(assignment.adding, tp, written, is_new=True)
    step.flush()


def _move_leader_if_required(step: Step, tp: TopicPartition, completed: ReplicaAssignment) -> None:
    ctx = step.ctx
    leader = ctx.leadership[tp].leader_and_isr.leader
    if leader in completed.replicas and ctx.is_replica_online(leader):
        _update_leader_epoch_and_send(step, tp, completed)
    else:
        handle_state_changes(step, [tp], PartitionState.ONLINE, Strategy.REASSIGN)


def _stop_removed_replicas(step: Step, tp: TopicPartition, removed: tuple[int, ...]) -> None:
    replicas = [(tp[0], tp[1], r) for r in removed]
    handle_replica_state_changes(step, replicas, ReplicaState.OFFLINE)
    handle_replica_state_changes(step, replicas, ReplicaState.DELETION_STARTED)
    handle_replica_state_changes(step, replicas, ReplicaState.DELETION_SUCCESSFUL)
    handle_replica_state_changes(step, replicas, ReplicaState.NON_EXISTENT)


def _write_topic(step: Step, topic: str) -> None:
    """``setTopicAssignmentRaw``: the topic znode with every partition's full assignment."""
    ctx = step.ctx
    parts = {p: a for (t, p), a in ctx.assignments.items() if t == topic}
    data = znodes.encode_topic(znodes.TopicAssignment(
        {p: a.replicas for p, a in sorted(parts.items())}, ctx.topic_ids.get(topic),
        {p: a.adding for p, a in parts.items() if a.adding},
        {p: a.removing for p, a in parts.items() if a.removing}))
    step.write([SetData(znodes.topic_path(topic), data, -1)])


def _maybe_remove_from_zk(step: Step, remove: Callable[[TopicPartition, tuple[int, ...]], bool]) -> None:
    """``maybeRemoveFromZkReassignment``: rewrite ``/admin/reassign_partitions`` without the
    matching partitions, or delete it when none is left."""
    ctx = step.ctx
    if ctx.zk_reassignment is None:
        return
    kept = {tp: r for tp, r in ctx.zk_reassignment.items() if not remove(tp, tuple(r))}
    if kept == ctx.zk_reassignment:
        return
    if not kept:
        step.write([Delete(znodes.REASSIGN_PARTITIONS_PATH)], (NoNodeError,))
        ctx.zk_reassignment = None
        return
    data = znodes.encode_reassignment([(t, p, r) for (t, p), r in sorted(kept.items())])
    step.write([SetData(znodes.REASSIGN_PARTITIONS_PATH, data, -1)], (NoNodeError,))
    step.write([Create(znodes.REASSIGN_PARTITIONS_PATH, data)], (NodeExistsError,))
    ctx.zk_reassignment = kept
