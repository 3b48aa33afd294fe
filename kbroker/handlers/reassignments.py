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
"""

from __future__ import annotations

from kbroker.registry import REGISTRY
from kbroker.request_context import RequestContext
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


def _single_node(ctx: RequestContext, targets: Targets) -> dict[tuple[str, int], tuple[int, str | None]]:
    state = ctx.broker
    node = state.node_id
    out: dict[tuple[str, int], tuple[int, str | None]] = {}
    for (topic, p), target in targets.items():
        info = state.topics.get(topic)
        if target is None:
            out[(topic, p)] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
        elif not target:
            out[(topic, p)] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "Empty replica list specified in partition reassignment.")
        elif info is None or not 0 <= p < info.partitions:
            adding = [r for r in target if r != node]
            out[(topic, p)] = ((ErrorCode.INVALID_REPLICA_ASSIGNMENT, _not_alive(adding, node)) if adding
                               else (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."))
        elif list(target) == [node]:
            out[(topic, p)] = (ErrorCode.NONE, None)
        else:
            out[(topic, p)] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               _not_alive([r for r in dict.fromkeys(target) if r != node], node))
    return out


def _not_alive(adding: list[int], node: int) -> str:
    return (f"Replica assignment has brokers that are not alive. Replica list: "
            f"List({', '.join(map(str, adding))}), live broker list: Set({node})")


@REGISTRY.register(45, 0, 0)
async def handle_alter_partition_reassignments(
    ctx: RequestContext, req: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    targets: Targets = {}
    for t in req.topics:
        for p in t.partitions:
            targets[(t.name, p.partition_index)] = None if p.replicas is None else tuple(p.replicas)
    cluster = getattr(ctx.broker, "cluster", None)
    if cluster is None:
        results = _single_node(ctx, targets)
    else:
        if not await cluster.runner.wait_ready(min(max(req.timeout_ms, 0) / 1000, FAILOVER_WAIT_S)):
            return _alter_error(ErrorCode.NOT_CONTROLLER)
        top, answered = await cluster.runner.alter_partition_reassignments(targets)
        if top != ErrorCode.NONE:
            return _alter_error(top)
        results = answered
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
    cluster = getattr(ctx.broker, "cluster", None)
    listed: dict = {}
    if cluster is not None:
        if not await cluster.runner.wait_ready(min(max(req.timeout_ms, 0) / 1000, FAILOVER_WAIT_S)):
            return _list_error(ErrorCode.NOT_CONTROLLER)
        top, listed = await cluster.runner.list_partition_reassignments(partitions)
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
