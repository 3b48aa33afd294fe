"""The events fed to the controller (Kafka's ``ControllerEvent``s, with what they read).

Kafka's event handlers read ZooKeeper themselves; here the runner (kbroker) reads what an
event needs and puts it in the event, so the controller stays pure.  ``cluster.controller.
zk_io`` has the readers.  Partitions are ``(topic, partition)`` tuples.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from cluster.metadata_image import BrokerInfo
from cluster.znodes import PartitionState as PartitionStateZnode
from cluster.znodes import TopicAssignment
from wire.messages import AlterPartitionRequest

__all__ = [
    "AlterPartition",
    "ApiPartitionReassignment",
    "AutoLeaderRebalance",
    "BecameController",
    "BrokerChange",
    "ControlledShutdown",
    "ElectionTrigger",
    "ElectionType",
    "Event",
    "ListPartitionReassignments",
    "PartitionModifications",
    "ReplicaLeaderElection",
    "Resign",
    "TopicChange",
    "TopicDeletion",
    "TopicDeletionStopReplicaResult",
    "TopicUncleanLeaderElectionEnable",
    "ZkPartitionReassignment",
    "ZkWriteResult",
]

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class BecameController:
    """This broker won the election (``election_ops``); the cluster as read right after.

    ``partition_states`` maps each partition with a state znode to its decoded JSON and the
    znode's version (the partition epoch).  ``topics_to_delete`` are the children of
    ``/admin/delete_topics``; ``preferred_election`` the partitions listed in
    ``/admin/preferred_replica_election`` (if that znode exists); ``zk_reassignment`` the
    partitions and target replicas of ``/admin/reassign_partitions`` (if it exists).
    """

    epoch: int
    epoch_zk_version: int
    brokers: Mapping[int, BrokerInfo]
    topics: Mapping[str, TopicAssignment]
    partition_states: Mapping[TopicPartition, tuple[PartitionStateZnode, int]]
    topics_to_delete: frozenset[str] = frozenset()
    preferred_election: frozenset[TopicPartition] | None = None
    zk_reassignment: Mapping[TopicPartition, tuple[int, ...]] | None = None


@dataclass(frozen=True, slots=True)
class BrokerChange:
    """The children of ``/brokers/ids`` changed: every registered broker now, with its epoch."""

    brokers: Mapping[int, BrokerInfo]


@dataclass(frozen=True, slots=True)
class TopicChange:
    """The children of ``/brokers/topics`` changed: every topic now, with its znode."""

    topics: Mapping[str, TopicAssignment]


@dataclass(frozen=True, slots=True)
class PartitionModifications:
    """``/brokers/topics/<topic>`` changed (CreatePartitions added partitions)."""

    topic: str
    assignment: TopicAssignment


@dataclass(frozen=True, slots=True)
class TopicDeletion:
    """The children of ``/admin/delete_topics`` changed: every topic queued there now."""

    topics: frozenset[str]


@dataclass(frozen=True, slots=True)
class TopicDeletionStopReplicaResult:
    """A broker answered a StopReplica(delete=true): per-partition error codes (0 = deleted).

    ``error_code`` is the response's top-level error; when it is not 0 every listed
    partition counts as failed (Kafka's ``processTopicDeletionStopReplicaResponseReceived``).
    """

    broker_id: int
    partition_errors: Mapping[TopicPartition, int]
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class ControlledShutdown:
    """A ControlledShutdownRequest (broker epoch -1 = unknown, as before KIP-380)."""

    broker_id: int
    broker_epoch: int = -1


class ElectionType(enum.IntEnum):
    PREFERRED = 0
    UNCLEAN = 1


class ElectionTrigger(enum.Enum):
    ADMIN = "AdminClientTriggered"  # ElectLeaders
    ZK = "ZkTriggered"  # /admin/preferred_replica_election
    AUTO = "AutoTriggered"  # the auto-rebalance task


@dataclass(frozen=True, slots=True)
class ReplicaLeaderElection:
    """ElectLeaders, ``/admin/preferred_replica_election`` (``partitions=None``: all partitions)."""

    partitions: frozenset[TopicPartition] | None = None
    election_type: ElectionType = ElectionType.PREFERRED
    trigger: ElectionTrigger = ElectionTrigger.ADMIN


@dataclass(frozen=True, slots=True)
class AlterPartition:
    """A leader's AlterPartition request (decoded at ``version``), to validate and commit
    (``cluster.controller.alter_partition``)."""

    request: AlterPartitionRequest
    version: int


@dataclass(frozen=True, slots=True)
class ApiPartitionReassignment:
    """AlterPartitionReassignments: per partition the target replicas, or None to cancel."""

    reassignments: Mapping[TopicPartition, tuple[int, ...] | None]


@dataclass(frozen=True, slots=True)
class ZkPartitionReassignment:
    """``/admin/reassign_partitions`` was created: its partitions and target replicas."""

    partitions: Mapping[TopicPartition, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class ListPartitionReassignments:
    """ListPartitionReassignments (``partitions=None``: every reassignment in progress)."""

    partitions: frozenset[TopicPartition] | None = None


@dataclass(frozen=True, slots=True)
class TopicUncleanLeaderElectionEnable:
    """A topic's ``unclean.leader.election.enable`` was turned on: elect its offline partitions."""

    topic: str


@dataclass(frozen=True, slots=True)
class AutoLeaderRebalance:
    """The ``leader.imbalance.check.interval.seconds`` tick (``AutoPreferredReplicaLeaderElection``)."""


@dataclass(frozen=True, slots=True)
class ZkWriteResult:
    """The outcome of the write ``write_id`` the controller returned; ``error`` None = applied.

    Any error makes the controller resign: a failed check of ``/controller_epoch`` means
    another controller was elected (Kafka's ControllerMovedException); any other failure
    means the context no longer matches ZooKeeper (Kafka's ``handleIllegalState``).
    """

    write_id: int
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class Resign:
    """``/controller`` went away or belongs to another broker, or the session was lost."""

    reason: str = field(default="")


Event = (
    BecameController | BrokerChange | TopicChange | PartitionModifications | TopicDeletion
    | TopicDeletionStopReplicaResult | ControlledShutdown | ReplicaLeaderElection
    | AutoLeaderRebalance | AlterPartition | ApiPartitionReassignment | ZkPartitionReassignment
    | ListPartitionReassignments | TopicUncleanLeaderElectionEnable | ZkWriteResult | Resign
)
