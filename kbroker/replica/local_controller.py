"""``LocalController``: the ``Controller`` port of a single node (kbroker/server/services.py).

A single broker is its own controller, as a one-broker Kafka cluster is: each partition has
one replica, which leads, so every election is ELECTION_NOT_NEEDED (an unknown partition
UNKNOWN_TOPIC_OR_PARTITION); a reassignment can only name this broker (anything else is
INVALID_REPLICA_ASSIGNMENT with the controller's "not alive" message, as Kafka's); nothing is
ever being reassigned.  The answers are the ones Kafka gives for the same cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cluster.controller import ElectionOutcome, ElectionType
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from kbroker.replica.broker_state import BrokerState

__all__ = ["LocalController", "UNKNOWN_PARTITION_MESSAGE"]

TopicPartition = tuple[str, int]
UNKNOWN_PARTITION_MESSAGE = "The partition does not exist."


class LocalController:
    def __init__(self, node_id: int, catalog: BrokerState) -> None:
        self._node = node_id
        self._catalog = catalog

    async def elect_leaders(self, requested: list[TopicPartition] | None, election_type: ElectionType,
                            timeout_s: float) -> dict[TopicPartition, ElectionOutcome]:
        catalog = self._catalog
        if requested is None:
            requested = sorted(catalog.partitions)
        return {tp: ElectionOutcome(ErrorCode.ELECTION_NOT_NEEDED) if catalog.partition(*tp) is not None
                else ElectionOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=UNKNOWN_PARTITION_MESSAGE)
                for tp in requested}

    async def alter_partition_reassignments(self, targets: dict[TopicPartition, tuple[int, ...] | None],
                                            timeout_s: float
                                            ) -> tuple[ErrorCode, dict[TopicPartition, tuple[int, str | None]]]:
        node = self._node
        out: dict[TopicPartition, tuple[int, str | None]] = {}
        for (topic, p), target in targets.items():
            info = self._catalog.topics.get(topic)
            if target is None:
                out[(topic, p)] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
            elif not target:
                out[(topic, p)] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   "Empty replica list specified in partition reassignment.")
            elif info is None or not 0 <= p < info.partitions:
                adding = [r for r in target if r != node]
                out[(topic, p)] = ((ErrorCode.INVALID_REPLICA_ASSIGNMENT, _not_alive(adding, node)) if adding
                                   else (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_PARTITION_MESSAGE))
            elif list(target) == [node]:
                out[(topic, p)] = (ErrorCode.NONE, None)
            else:
                out[(topic, p)] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   _not_alive([r for r in dict.fromkeys(target) if r != node], node))
        return ErrorCode.NONE, out

    async def list_partition_reassignments(self, partitions: frozenset[TopicPartition] | None, timeout_s: float
                                           ) -> tuple[ErrorCode, dict[TopicPartition, Any]]:
        return ErrorCode.NONE, {}


def _not_alive(adding: list[int], node: int) -> str:
    return (f"Replica assignment has brokers that are not alive. Replica list: "
            f"List({', '.join(map(str, adding))}), live broker list: Set({node})")
