"""AlterPartitionReassignments (key 45) and ListPartitionReassignments (key 46), v0 (KIP-455).

Cluster mode: ``KafkaApis.handleAlterPartitionReassignmentsRequest`` /
``handleListPartitionReassignmentsRequest`` of ZooKeeper mode - the controller's event queue
answers (cluster/controller/reassignment.py); a broker that is not the controller answers
NOT_CONTROLLER at the top level (the admin client sends to the controller it learned from
Metadata, and retries).  A target of ``null`` cancels a reassignment in progress.  Errors
carry Kafka's messages (``ApiError``: its own message, else the error's default one).

Single node: the only broker holds every replica, so a target of exactly ``[this broker]``
is already in place (NONE), any other names brokers that are not alive
(INVALID_REPLICA_ASSIGNMENT with Kafka's message), a cancel finds nothing in progress
(NO_REASSIGNMENT_IN_PROGRESS), an unknown partition is UNKNOWN_TOPIC_OR_PARTITION, and the
list is always empty.

Ports (kbroker/server/services.py): ``controller`` (kbroker/replica/local_controller.py, kbroker/zk/zk_controller.py).
"""

from __future__ import annotations

from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

_AltTopic = AlterPartitionReassignmentsResponse.ReassignableTopicResponse  # type: ignore[attr-defined]
_AltPartition = AlterPartitionReassignmentsResponse.ReassignablePartitionResponse  # type: ignore[attr-defined]
_ListTopic = ListPartitionReassignmentsResponse.OngoingTopicReassignment  # type: ignore[attr-defined]
_ListPartition = ListPartitionReassignmentsResponse.OngoingPartitionReassignment  # type: ignore[attr-defined]

# Kafka's Errors default messages, for an ApiError made from the error alone.
DEFAULT_MESSAGES = {
    ErrorCode.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS: "No partition reassignment is in progress.",
    ErrorCode.UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
}
# How long a broker that has just won /controller lets a request wait for its failover.
FAILOVER_WAIT_S = 30.0

Targets = dict[tuple[str, int], tuple[int, ...] | None]


def _message(code: int, message: str | None) -> str | None:
    if code == ErrorCode.NONE:
        return None
    return message if message is not None else DEFAULT_MESSAGES.get(ErrorCode(code))


@REGISTRY.register(45, 0, 0)
async def handle_alter_partition_reassignments(
    ctx: RequestContext, req: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    targets: Targets = {}
    for t in req.topics:
        for p in t.partitions:
            targets[(t.name, p.partition_index)] = None if p.replicas is None else tuple(p.replicas)
    top, results = await ctx.services.controller.alter_partition_reassignments(
        targets, min(max(req.timeout_ms, 0) / 1000, FAILOVER_WAIT_S))
    if top != ErrorCode.NONE:
        return _alter_error(top)
    by_topic: dict[str, list[object]] = {}
    for (topic, p), (code, message) in results.items():
        by_topic.setdefault(topic, []).append(
            _AltPartition(partition_index=p, error_code=code, error_message=_message(code, message)))
    return AlterPartitionReassignmentsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
        responses=[_AltTopic(name=t, partitions=ps) for t, ps in by_topic.items()])


def _alter_error(code: int) -> AlterPartitionReassignmentsResponse:
    return AlterPartitionReassignmentsResponse(throttle_time_ms=0, error_code=code,
                                               error_message=_message(code, None), responses=[])


@REGISTRY.register(46, 0, 0)
async def handle_list_partition_reassignments(
    ctx: RequestContext, req: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    partitions = None if req.topics is None else frozenset(
        (t.name, p) for t in req.topics for p in t.partition_indexes)
    top, listed = await ctx.services.controller.list_partition_reassignments(
        partitions, min(max(req.timeout_ms, 0) / 1000, FAILOVER_WAIT_S))
    if top != ErrorCode.NONE:
        return _list_error(top)
    by_topic: dict[str, list[object]] = {}
    for (topic, p), a in sorted(listed.items()):
        by_topic.setdefault(topic, []).append(_ListPartition(
            partition_index=p, replicas=list(a.replicas), adding_replicas=list(a.adding),
            removing_replicas=list(a.removing)))
    return ListPartitionReassignmentsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
        topics=[_ListTopic(name=t, partitions=ps) for t, ps in by_topic.items()])


def _list_error(code: int) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=code,
                                              error_message=_message(code, None), topics=[])
