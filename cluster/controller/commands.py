"""What the controller returns: fenced ZooKeeper writes and requests for brokers.

Contract with the runner (kbroker): for each :class:`ControllerOutput`, apply ``writes``
in order (``zk_io.execute`` does one), stop at the first that fails and feed its
``ZkWriteResult`` back; only when every write succeeded send ``requests`` (Kafka writes the
state znodes before it sends the LeaderAndIsr that announces them).  A runner may retry a
write that failed with a connection loss on the same session before reporting it (Kafka's
``retryRequestsUntilConnected``); a session expiry is a resignation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cluster.coordination import CoordinationError, Op
from wire.messages import AlterPartitionResponse

__all__ = [
    "BrokerRequest",
    "ControlledShutdownResult",
    "ControllerOutput",
    "ElectionOutcome",
    "ZkDeleteTree",
    "ZkWrite",
]

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ZkWrite:
    """One ZooKeeper multi: ``ops[0]`` is ``Check(/controller_epoch, token)``.

    ``tolerated``: errors of the guarded op that mean "already done" (NodeExists for
    Kafka's create-if-absent of ``/partitions/<p>``, NoNode for a delete of something
    that may be gone); the epoch check itself is never tolerated.
    """

    write_id: int
    ops: tuple[Op, ...]
    tolerated: tuple[type[CoordinationError], ...] = ()


@dataclass(frozen=True, slots=True)
class ZkDeleteTree:
    """Delete ``path`` and everything under it, children first, each delete fenced
    (``KafkaZkClient.deleteRecursive`` with the controller epoch check); missing is fine."""

    write_id: int
    epoch_zk_version: int
    path: str


@dataclass(frozen=True, slots=True)
class BrokerRequest:
    """A controller-to-broker request: ``message`` is a ``wire.messages`` request object."""

    broker_id: int
    api_version: int
    message: object


@dataclass(frozen=True, slots=True)
class ControlledShutdownResult:
    """ControlledShutdownResponse: an error code, or the partitions the broker still leads."""

    error_code: int
    remaining_partitions: tuple[TopicPartition, ...] = ()
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ElectionOutcome:
    """One partition's answer to ElectLeaders: the new leader, or an error code and message."""

    error_code: int
    leader: int = -1
    error_message: str | None = None


@dataclass(slots=True)
class ControllerOutput:
    writes: list[ZkWrite | ZkDeleteTree] = field(default_factory=list)
    requests: list[BrokerRequest] = field(default_factory=list)
    resigned: bool = False
    controlled_shutdown: ControlledShutdownResult | None = None
    elections: dict[TopicPartition, ElectionOutcome] | None = None
    # The AlterPartition answer: to send only if every write succeeded (else NOT_CONTROLLER).
    alter_partition: AlterPartitionResponse | None = None
    # AlterPartitionReassignments: (error code, message) per partition, or None with
    # ``reassignment_error`` set (NOT_CONTROLLER).  ListPartitionReassignments: ``listed``.
    reassignments: dict[TopicPartition, tuple[int, str | None]] | None = None
    reassignment_error: int = 0
    listed: dict[TopicPartition, object] | None = None
