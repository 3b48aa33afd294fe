"""The ZooKeeper-mode controller as a pure state machine (Kafka's ``kafka.controller``, 3.x).

``Controller(config).handle(event)`` -> ``ControllerOutput`` (fenced writes, then requests);
``zk_io`` executes writes and reads the cluster over the coordination port; ``fencing``
holds the election multi and the epoch check every write starts with.
"""

from cluster.controller.commands import (
    BrokerRequest,
    ControlledShutdownResult,
    ControllerOutput,
    ElectionOutcome,
    ZkDeleteTree,
    ZkWrite,
)
from cluster.controller.config import ControllerConfig
from cluster.controller.context import ControllerContext, PartitionState, ReplicaState
from cluster.controller.events import (
    AlterPartition,
    ApiPartitionReassignment,
    AutoLeaderRebalance,
    BecameController,
    BrokerChange,
    ControlledShutdown,
    ElectionTrigger,
    ElectionType,
    Event,
    ListPartitionReassignments,
    PartitionModifications,
    ReplicaLeaderElection,
    Resign,
    TopicChange,
    TopicDeletion,
    TopicDeletionStopReplicaResult,
    TopicUncleanLeaderElectionEnable,
    ZkPartitionReassignment,
    ZkWriteResult,
)
from cluster.controller.fencing import ControllerElection, election_ops, fenced
from cluster.controller.kafka_controller import Controller

__all__ = [
    "AlterPartition",
    "ApiPartitionReassignment",
    "AutoLeaderRebalance",
    "BecameController",
    "BrokerChange",
    "BrokerRequest",
    "ControlledShutdown",
    "ControlledShutdownResult",
    "Controller",
    "ControllerConfig",
    "ControllerContext",
    "ControllerElection",
    "ControllerOutput",
    "ElectionOutcome",
    "ElectionTrigger",
    "ElectionType",
    "Event",
    "ListPartitionReassignments",
    "PartitionModifications",
    "PartitionState",
    "ReplicaLeaderElection",
    "ReplicaState",
    "Resign",
    "TopicChange",
    "TopicDeletion",
    "TopicDeletionStopReplicaResult",
    "TopicUncleanLeaderElectionEnable",
    "ZkDeleteTree",
    "ZkPartitionReassignment",
    "ZkWrite",
    "ZkWriteResult",
    "election_ops",
    "fenced",
]
