"""Kafka's ``ZkReplicaStateMachine`` (ReplicaStateMachine.scala, 3.x) over a :class:`Step`.

A replica is ``(topic, partition, broker)``.  Moves (each from Kafka's valid previous states;
others are ignored, as Kafka logs and skips them), handled broker by broker:

* -> New: a LeaderAndIsr(``is_new``) of the current state to the replica, unless it is
  the partition's leader.
* -> Online: the current state to the replica by LeaderAndIsr (a New replica only becomes
  Online: it is already in the assignment).
* -> Offline: StopReplica(delete=false) to the replica's broker (dropped if the broker is
  gone), and the replica leaves the ISR (``doRemoveReplicasFromIsr``: leader epoch + 1,
  never an empty ISR, a removed leader leaves leader -1), written with a conditional set
  and sent by LeaderAndIsr to the partition's other replicas unless the topic is being
  deleted.  A partition without leadership only gets an UpdateMetadata.
* -> DeletionStarted: StopReplica(delete=true) to the replica.
* -> DeletionSuccessful / DeletionIneligible: the state only.
* -> NonExistent: the replica leaves the assignment and the state table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import groupby

from cluster.controller.context import REPLICA_VALID_PREVIOUS, ReplicaState
from cluster.controller.step import Step
from cluster.election import remove_replica_from_isr

__all__ = ["handle_replica_state_changes", "startup_replica_states"]

PartitionReplica = tuple[str, int, int]


def startup_replica_states(step: Step) -> None:
    """``ReplicaStateMachine.startup``: replicas on live brokers Online (each told the current
    state), the others DeletionIneligible and then Offline (out of the ISR)."""
    ctx = step.ctx
    online: list[PartitionReplica] = []
    offline: list[PartitionReplica] = []
    for t, p in ctx.all_partitions():
        for r in ctx.replicas((t, p)):
            if ctx.is_replica_online(r):
                ctx.replica_states[(t, p, r)] = ReplicaState.ONLINE
                online.append((t, p, r))
            else:
                ctx.replica_states[(t, p, r)] = ReplicaState.DELETION_INELIGIBLE
                offline.append((t, p, r))
    handle_replica_state_changes(step, online, ReplicaState.ONLINE)
    handle_replica_state_changes(step, offline, ReplicaState.OFFLINE)


def handle_replica_state_changes(step: Step, replicas: Sequence[PartitionReplica], target: ReplicaState) -> None:
    by_broker = sorted(replicas, key=lambda r: r[2])
    for broker, group in groupby(by_broker, key=lambda r: r[2]):
        _do_handle(step, broker, list(group), target)
    step.flush()


def _do_handle(step: Step, broker: int, replicas: list[PartitionReplica], target: ReplicaState) -> None:
    ctx = step.ctx
    for r in replicas:
        ctx.replica_states.setdefault(r, ReplicaState.NON_EXISTENT)
    valid = [r for r in replicas if ctx.replica_states[r] in REPLICA_VALID_PREVIOUS[target]]
    if target is ReplicaState.NEW:
        for t, p, _ in valid:
            lic = ctx.leadership.get((t, p))
            if lic is not None:
                if lic.leader_and_isr.leader == broker:
                    continue  # "cannot be moved to NewReplica state as it is being requested to become leader"
                step.batch.add_leader_and_isr([broker], (t, p), lic, is_new=True)
            ctx.replica_states[(t, p, broker)] = ReplicaState.NEW
    elif target is ReplicaState.ONLINE:
        for t, p, _ in valid:
            if ctx.replica_states[(t, p, broker)] is not ReplicaState.NEW:
                lic = ctx.leadership.get((t, p))
                if lic is not None:
                    step.batch.add_leader_and_isr([broker], (t, p), lic, is_new=False)
            ctx.replica_states[(t, p, broker)] = ReplicaState.ONLINE
    elif target is ReplicaState.OFFLINE:
        for t, p, _ in valid:
            step.batch.add_stop_replica([broker], (t, p), delete=False)
        for t, p, _ in valid:
            tp = (t, p)
            lic = ctx.leadership.get(tp)
            if lic is None:
                step.batch.add_update_metadata(sorted(ctx.live_or_shutting_down_ids()), [tp])
                ctx.replica_states[(t, p, broker)] = ReplicaState.OFFLINE
                continue
            if lic.controller_epoch > ctx.epoch:
                continue  # written by a newer controller: Kafka fails this state change
            if broker in lic.leader_and_isr.isr:
                lic = step.update_partition_state(tp, remove_replica_from_isr(lic.leader_and_isr, broker))
            if not ctx.is_topic_queued_for_deletion(t):
                recipients = [r for r in ctx.replicas(tp) if r != broker]
                step.batch.add_leader_and_isr(recipients, tp, lic, is_new=False)
            ctx.replica_states[(t, p, broker)] = ReplicaState.OFFLINE
    elif target is ReplicaState.DELETION_STARTED:
        for t, p, _ in valid:
            ctx.replica_states[(t, p, broker)] = ReplicaState.DELETION_STARTED
            step.batch.add_stop_replica([broker], (t, p), delete=True)
    elif target in (ReplicaState.DELETION_INELIGIBLE, ReplicaState.DELETION_SUCCESSFUL):
        for r in valid:
            ctx.replica_states[r] = target
    elif target is ReplicaState.NON_EXISTENT:
        for t, p, _ in valid:
            a = ctx.assignments.get((t, p))
            if a is not None:
                ctx.assignments[(t, p)] = replace(a, replicas=tuple(x for x in a.replicas if x != broker))
            del ctx.replica_states[(t, p, broker)]
