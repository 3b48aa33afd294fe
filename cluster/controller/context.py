"""What the active controller knows: Kafka's ``ControllerContext`` (ZooKeeper mode, 3.x).

The context is the controller's copy of the cluster's ZooKeeper state plus the two state
machines' states.  Invariant: every partition leadership entry equals the state znode the
controller last wrote or read, and ``partition_epoch`` of its ``LeaderAndIsr`` is that znode's
version (``cluster.election.LeaderAndIsr``).  The controller updates the context as soon as
it *decides* a write (the write is then returned as a command); a write that fails makes
the controller resign, and the next controller rebuilds the context from ZooKeeper, so the
optimistic update never outlives a failed write.

Brokers: ``brokers`` holds every registered broker (Kafka's "live or shutting down") with
its broker epoch (the czxid of ``/brokers/ids/<id>``); ``shutting_down`` the ones that asked
for a controlled shutdown.  "Live" (``live_broker_ids``) excludes them, as Kafka's
``liveBrokerIds`` does, so no election picks a broker that is leaving.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from cluster.election import LeaderAndIsr
from cluster.metadata_image import BrokerInfo

__all__ = [
    "ControllerContext",
    "LeaderIsrAndControllerEpoch",
    "PartitionState",
    "ReplicaAssignment",
    "ReplicaState",
    "TopicPartition",
]

TopicPartition = tuple[str, int]
PartitionReplica = tuple[str, int, int]  # topic, partition, broker id


class PartitionState(enum.Enum):
    """``PartitionStateMachine``'s states, with their valid previous states."""

    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"
    NON_EXISTENT = "NonExistentPartition"


PARTITION_VALID_PREVIOUS = {
    PartitionState.NEW: {PartitionState.NON_EXISTENT},
    PartitionState.ONLINE: {PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE},
    PartitionState.OFFLINE: {PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE},
    PartitionState.NON_EXISTENT: {PartitionState.OFFLINE},
}


class ReplicaState(enum.Enum):
    """``ReplicaStateMachine``'s states, with their valid previous states."""

    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


_R = ReplicaState
REPLICA_VALID_PREVIOUS = {
    _R.NEW: {_R.NON_EXISTENT},
    _R.ONLINE: {_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE},
    _R.OFFLINE: {_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE},
    _R.DELETION_STARTED: {_R.OFFLINE},
    _R.DELETION_SUCCESSFUL: {_R.DELETION_STARTED},
    _R.DELETION_INELIGIBLE: {_R.OFFLINE, _R.DELETION_STARTED},
    _R.NON_EXISTENT: {_R.DELETION_SUCCESSFUL},
}


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's replicas (the first is the preferred leader) and reassignment in flight.

    Kafka's ``ReplicaAssignment`` (KIP-455): while a reassignment runs, ``replicas`` is the
    full set RS = target + original (target first, in the order asked), ``adding`` AR =
    RS - original and ``removing`` RR = RS - target.
    """

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: tuple[int, ...]) -> ReplicaAssignment:
        """``reassignTo``: RS = target then the original replicas not in it."""
        origin = self.origin
        full = tuple(dict.fromkeys((*target, *origin)))
        return ReplicaAssignment(full, tuple(r for r in full if r not in origin),
                                 tuple(r for r in full if r not in target))


@dataclass(frozen=True, slots=True)
class LeaderIsrAndControllerEpoch:
    """A partition's state znode: its leader-and-ISR and the epoch of the controller that wrote it."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int


# LeaderAndIsr.LeaderDuringDelete / EpochDuringDelete / NoEpoch.
LEADER_DURING_DELETE = -2
EPOCH_DURING_DELETE = -2
NO_EPOCH = -1


class ControllerContext:
    def __init__(self, epoch: int, epoch_zk_version: int) -> None:
        self.epoch = epoch  # /controller_epoch value this controller was elected with
        self.epoch_zk_version = epoch_zk_version  # its znode version: the fencing token
        self.brokers: dict[int, BrokerInfo] = {}  # live or shutting down, with broker epochs
        self.shutting_down: set[int] = set()
        self.all_topics: set[str] = set()
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.assignments: dict[TopicPartition, ReplicaAssignment] = {}
        self.leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.partition_states: dict[TopicPartition, PartitionState] = {}
        self.replica_states: dict[PartitionReplica, ReplicaState] = {}
        self.topics_to_be_deleted: set[str] = set()
        self.topics_with_deletion_started: set[str] = set()
        self.topics_ineligible_for_deletion: set[str] = set()
        self.partitions_being_reassigned: set[TopicPartition] = set()
        # /admin/reassign_partitions as last read (None: absent), partition -> target replicas.
        self.zk_reassignment: dict[TopicPartition, tuple[int, ...]] | None = None

    # -- brokers -------------------------------------------------------------------------

    def live_broker_ids(self) -> set[int]:
        return set(self.brokers) - self.shutting_down

    def live_or_shutting_down_ids(self) -> set[int]:
        return set(self.brokers)

    def broker_epoch(self, broker_id: int) -> int:
        b = self.brokers.get(broker_id)
        return -1 if b is None else b.epoch

    def is_replica_online(self, broker_id: int, include_shutting_down: bool = False) -> bool:
        if include_shutting_down:
            return broker_id in self.brokers
        return broker_id in self.brokers and broker_id not in self.shutting_down

    # -- topics and partitions -----------------------------------------------------------

    def replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        a = self.assignments.get(tp)
        return () if a is None else a.replicas

    def all_partitions(self) -> list[TopicPartition]:
        return sorted(self.assignments)

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.assignments if tp[0] == topic)

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return sorted(tp for tp, a in self.assignments.items() if broker_id in a.replicas)

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionReplica]:
        ids = set(broker_ids)
        return sorted(
            (t, p, r) for (t, p), a in self.assignments.items() for r in a.replicas if r in ids
        )

    def replicas_for_topic(self, topic: str) -> list[PartitionReplica]:
        return [(t, p, r) for t, p in self.partitions_for_topic(topic) for r in self.replicas((t, p))]

    def replicas_for_partitions(self, partitions: Iterable[TopicPartition]) -> list[PartitionReplica]:
        return [(t, p, r) for t, p in partitions for r in self.replicas((t, p))]

    def partitions_in_states(self, states: set[PartitionState]) -> list[TopicPartition]:
        return sorted(tp for tp, s in self.partition_states.items() if s in states)

    def partitions_with_offline_leader(self) -> list[TopicPartition]:
        """Partitions (not being deleted) whose leader is -1 or not a live broker."""
        return sorted(
            tp for tp, lic in self.leadership.items()
            if not self.is_topic_queued_for_deletion(tp[0])
            and not self.is_replica_online(lic.leader_and_isr.leader)
        )

    def partition_leaders_on_broker(self, broker_id: int) -> list[TopicPartition]:
        """``partitionLeadersOnBroker``: what ControlledShutdown answers as still led.

        Only partitions with more than one replica count (Kafka's ``size > 1``): a
        single-replica partition cannot move, so it never holds a shutdown back.
        """
        return sorted(
            tp for tp, lic in self.leadership.items()
            if not self.is_topic_queued_for_deletion(tp[0])
            and lic.leader_and_isr.leader == broker_id and len(self.replicas(tp)) > 1
        )

    def remove_topic(self, topic: str) -> None:
        self.all_topics.discard(topic)
        self.topic_ids.pop(topic, None)
        for tp in self.partitions_for_topic(topic):
            del self.assignments[tp]
            self.leadership.pop(tp, None)
            self.partition_states.pop(tp, None)
        for key in [k for k in self.replica_states if k[0] == topic]:
            del self.replica_states[key]
        self.partitions_being_reassigned = {tp for tp in self.partitions_being_reassigned if tp[0] != topic}
        self.topics_to_be_deleted.discard(topic)
        self.topics_with_deletion_started.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)

    # -- deletion ------------------------------------------------------------------------

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def replicas_in_state(self, topic: str, state: ReplicaState) -> list[PartitionReplica]:
        return [r for r in self.replicas_for_topic(topic) if self.replica_states.get(r) == state]

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        return all(self.replica_states.get(r) == state for r in self.replicas_for_topic(topic))

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(self.replica_states.get(r) == state for r in self.replicas_for_topic(topic))

    def leader_epoch_for_stop_replica(self, tp: TopicPartition) -> int:
        """``ControllerContext.leaderEpoch``: -2 for a topic being deleted, -1 if unknown."""
        if self.is_topic_queued_for_deletion(tp[0]):
            return EPOCH_DURING_DELETE
        lic = self.leadership.get(tp)
        return NO_EPOCH if lic is None else lic.leader_and_isr.leader_epoch
