"""Kafka's ``ZkPartitionStateMachine`` (PartitionStateMachine.scala, 3.x) over a :class:`Step`.

States and the moves between them:

* NonExistent -> New: the partition's replicas are known (the context holds them).
* New -> Online: leader = the first live replica in assignment order, ISR = the live
  replicas, leader epoch 0; the state znode is created (partition epoch 0) and a
  LeaderAndIsr with ``is_new`` goes to the live replicas.  With no live replica the
  partition stays New (no znode) until a broker comes back.
* Online/Offline -> Online: an election by the given strategy (``cluster.election``:
  offline, preferred, controlled shutdown, or reassignment's first live in-ISR target); the
  winner's state is written with a conditional set (leader epoch + 1, partition epoch + 1)
  and announced by LeaderAndIsr to the replicas the strategy names.  No winner: the
  partition keeps its state and the failure is returned.
* New/Online/Offline -> Offline, Offline -> NonExistent: only the state changes.

The offline strategy allows an unclean winner only where no ISR member is live and either
the strategy says so (ElectLeaders UNCLEAN) or the topic's ``unclean.leader.election.enable``
does (Kafka's ``collectUncleanLeaderElectionState``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from cluster.controller.context import PARTITION_VALID_PREVIOUS, PartitionState, TopicPartition
from cluster.controller.step import Step
from cluster.election import (
    LeaderAndIsr,
    controlled_shutdown_election,
    offline_election,
    preferred_replica_election,
    reassign_election,
)

__all__ = [
    "ElectionFailure",
    "Strategy",
    "handle_state_changes",
    "trigger_online_partition_state_change",
]


class Strategy(enum.Enum):
    OFFLINE = "OfflinePartitionLeaderElectionStrategy(false)"
    OFFLINE_ALLOW_UNCLEAN = "OfflinePartitionLeaderElectionStrategy(true)"
    PREFERRED = "PreferredReplicaPartitionLeaderElectionStrategy"
    CONTROLLED_SHUTDOWN = "ControlledShutdownPartitionLeaderElectionStrategy"
    REASSIGN = "ReassignPartitionLeaderElectionStrategy"


@dataclass(frozen=True, slots=True)
class ElectionFailure:
    """Kafka's StateChangeFailedException for one partition."""

    message: str


ElectionResults = dict[TopicPartition, LeaderAndIsr | ElectionFailure]


def trigger_online_partition_state_change(step: Step, topic: str | None = None) -> ElectionResults:
    """Elect leaders for every New or Offline partition (of ``topic``) not being deleted."""
    ctx = step.ctx
    partitions = [
        tp for tp in ctx.partitions_in_states({PartitionState.OFFLINE, PartitionState.NEW})
        if not ctx.is_topic_queued_for_deletion(tp[0]) and (topic is None or tp[0] == topic)
    ]
    return handle_state_changes(step, partitions, PartitionState.ONLINE, Strategy.OFFLINE)


def handle_state_changes(
    step: Step,
    partitions: Sequence[TopicPartition],
    target: PartitionState,
    strategy: Strategy | None = None,
) -> ElectionResults:
    """Move ``partitions`` to ``target``; for Online, the election results (Kafka returns
    results only for partitions that went through an election, not for initialisations)."""
    try:
        return _do_handle(step, partitions, target, strategy)
    finally:
        step.flush()


def _do_handle(
    step: Step,
    partitions: Sequence[TopicPartition],
    target: PartitionState,
    strategy: Strategy | None,
) -> ElectionResults:
    ctx = step.ctx
    for tp in partitions:
        ctx.partition_states.setdefault(tp, PartitionState.NON_EXISTENT)
    valid = [tp for tp in partitions if ctx.partition_states[tp] in PARTITION_VALID_PREVIOUS[target]]
    if target is PartitionState.ONLINE:
        uninitialized = [tp for tp in valid if ctx.partition_states[tp] is PartitionState.NEW]
        to_elect = [tp for tp in valid if ctx.partition_states[tp] is not PartitionState.NEW]
        for tp in _initialize(step, uninitialized):
            ctx.partition_states[tp] = PartitionState.ONLINE
        if not to_elect:
            return {}
        if strategy is None:
            raise ValueError("Election strategy is a required field when the target state is OnlinePartition")
        results = _elect(step, to_elect, strategy)
        for tp, result in results.items():
            if isinstance(result, LeaderAndIsr):
                ctx.partition_states[tp] = PartitionState.ONLINE
        return results
    for tp in valid:
        ctx.partition_states[tp] = target
    return {}


def _initialize(step: Step, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
    """``initializeLeaderAndIsrForPartitions``."""
    ctx = step.ctx
    done = []
    for tp in partitions:
        live = [r for r in ctx.replicas(tp) if ctx.is_replica_online(r)]
        if not live:
            continue  # "No assigned replica is alive": stays New
        lic = step.create_partition_state(tp, LeaderAndIsr(live[0], 0, tuple(live)))
        step.batch.add_leader_and_isr(live, tp, lic, is_new=True)
        done.append(tp)
    return done


def _elect(step: Step, partitions: Sequence[TopicPartition], strategy: Strategy) -> ElectionResults:
    """``doElectLeaderForPartitions`` on the context's copy of the state znodes."""
    ctx = step.ctx
    config = step.config
    results: ElectionResults = {}
    for tp in partitions:
        lic = ctx.leadership.get(tp)
        if lic is None:
            results[tp] = ElectionFailure(
                f"LeaderAndIsr information doesn't exist for partition {tp[0]}-{tp[1]} in "
                f"{ctx.partition_states[tp].value} state")
            continue
        if lic.controller_epoch > ctx.epoch:
            results[tp] = ElectionFailure(
                f"Aborted leader election for partition {tp[0]}-{tp[1]} since the LeaderAndIsr path "
                "was already written by another controller.")
            continue
        current = lic.leader_and_isr
        assignment = ctx.replicas(tp)
        live = [r for r in assignment if ctx.is_replica_online(r)]
        new: LeaderAndIsr | None
        if strategy in (Strategy.OFFLINE, Strategy.OFFLINE_ALLOW_UNCLEAN):
            no_live_isr = not any(ctx.is_replica_online(r) for r in current.isr)
            unclean = no_live_isr and (
                strategy is Strategy.OFFLINE_ALLOW_UNCLEAN
                or config.unclean_leader_election_enable(tp[0]))
            new = offline_election(assignment, current, set(live), unclean)
            recipients = live
        elif strategy is Strategy.PREFERRED:
            new = preferred_replica_election(assignment, current, set(live))
            recipients = live
        elif strategy is Strategy.REASSIGN:
            # leaderForReassign: the first live in-ISR target replica; all targets are told.
            target = ctx.assignments[tp].target
            new = reassign_election(target, current, set(live))
            recipients = list(target)
        else:
            live_or_shutting = [r for r in assignment if ctx.is_replica_online(r, include_shutting_down=True)]
            new = controlled_shutdown_election(assignment, current, set(live_or_shutting),
                                               ctx.shutting_down)
            recipients = live_or_shutting
        if new is None:
            results[tp] = ElectionFailure(
                f"Failed to elect leader for partition {tp[0]}-{tp[1]} under strategy {strategy.value}")
            continue
        written = step.update_partition_state(tp, new)
        step.batch.add_leader_and_isr(recipients, tp, written, is_new=False)
        results[tp] = written.leader_and_isr
    return results
