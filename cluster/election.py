"""Leader election and the leader-and-ISR update rules of Kafka's ZooKeeper-mode controller.

Ports ``PartitionLeaderElectionAlgorithms`` and ``Election`` (``kafka.controller``, 3.9) and
the ISR rule of ``ReplicaStateMachine.doRemoveReplicasFromIsr``.  A :class:`LeaderAndIsr`
is the content of a partition's state znode; ``partition_epoch`` is that znode's version.

* offline: the first replica in assignment order that is live and in the ISR; else, with
  ``unclean.leader.election.enable``, the first live replica, whose ISR becomes ``[leader]``
  and which leads RECOVERING (KIP-704).  A clean winner keeps the live part of the ISR.
* reassignment: the first live in-ISR replica of the *target* replicas.
* preferred: the head of the assignment, if live and in the ISR.
* controlled shutdown: the first live (or shutting-down) in-ISR replica that is not shutting
  down; the new ISR drops the shutting-down brokers.
Each election bumps the leader epoch by one (``LeaderAndIsr.newLeaderAndIsr``).

Removing a replica from the ISR (its broker died or is shutting down) never empties the ISR:
a sole member stays, so it can lead again when it returns; if it was the leader the leader
becomes -1 (``NoLeader``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

__all__ = [
    "NO_LEADER",
    "LeaderAndIsr",
    "controlled_shutdown_election",
    "offline_election",
    "preferred_replica_election",
    "reassign_election",
    "remove_replica_from_isr",
]

NO_LEADER = -1
RECOVERED = 0
RECOVERING = 1


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int = RECOVERED
    partition_epoch: int = 0  # the state znode's version

    def new_leader_and_isr(self, leader: int, isr: Sequence[int]) -> LeaderAndIsr:
        # Kafka keeps the recovery state: only the leader's AlterPartition clears RECOVERING.
        return replace(self, leader=leader, leader_epoch=self.leader_epoch + 1, isr=tuple(isr))

    def new_recovering_leader_and_isr(self, leader: int, isr: Sequence[int]) -> LeaderAndIsr:
        return replace(self, leader=leader, leader_epoch=self.leader_epoch + 1, isr=tuple(isr),
                       leader_recovery_state=RECOVERING)


def offline_election(
    assignment: Sequence[int],
    current: LeaderAndIsr,
    live: Collection[int],
    unclean_enabled: bool,
) -> LeaderAndIsr | None:
    """``Election.leaderForOffline``: the new state, or None if no replica may lead."""
    leader = next((r for r in assignment if r in live and r in current.isr), None)
    if leader is None and unclean_enabled:
        leader = next((r for r in assignment if r in live), None)
    if leader is None:
        return None
    if leader in current.isr:
        return current.new_leader_and_isr(leader, [r for r in current.isr if r in live])
    return current.new_recovering_leader_and_isr(leader, [leader])


def reassign_election(
    target_replicas: Sequence[int], current: LeaderAndIsr, live: Collection[int]
) -> LeaderAndIsr | None:
    leader = next((r for r in target_replicas if r in live and r in current.isr), None)
    return None if leader is None else current.new_leader_and_isr(leader, current.isr)


def preferred_replica_election(
    assignment: Sequence[int], current: LeaderAndIsr, live: Collection[int]
) -> LeaderAndIsr | None:
    if not assignment:
        return None
    head = assignment[0]
    if head in live and head in current.isr:
        return current.new_leader_and_isr(head, current.isr)
    return None


def controlled_shutdown_election(
    assignment: Sequence[int],
    current: LeaderAndIsr,
    live_or_shutting_down: Collection[int],
    shutting_down: Collection[int],
) -> LeaderAndIsr | None:
    leader = next(
        (r for r in assignment
         if r in live_or_shutting_down and r in current.isr and r not in shutting_down),
        None,
    )
    if leader is None:
        return None
    return current.new_leader_and_isr(leader, [r for r in current.isr if r not in shutting_down])


def remove_replica_from_isr(current: LeaderAndIsr, replica: int) -> LeaderAndIsr:
    """``doRemoveReplicasFromIsr`` for one replica (bumps the leader epoch, as Kafka does)."""
    isr = current.isr if len(current.isr) == 1 else tuple(r for r in current.isr if r != replica)
    leader = NO_LEADER if replica == current.leader else current.leader
    return current.new_leader_and_isr(leader, isr)
