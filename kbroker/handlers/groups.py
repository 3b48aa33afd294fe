"""The classic consumer-group APIs, adapted to ``groups.GroupCoordinator`` (kbroker/group_service.py).

FindCoordinator 0-4 (v4+ batched keys; this broker coordinates every group; key type 1, the
transaction coordinator, is answered by kbroker/handlers/transactions.py), JoinGroup 0-7, SyncGroup 0-5,
Heartbeat 0-4, LeaveGroup 0-4, OffsetCommit 2-8, OffsetFetch 1-8, DescribeGroups 0-5,
ListGroups 0-4, DeleteGroups 0-2, OffsetDelete 0.  All seven classic-group APIs are
advertised together: librdkafka enables consumer groups only when it sees all of them.

OffsetCommit for a partition the broker does not have answers UNKNOWN_TOPIC_OR_PARTITION
for that partition (KafkaApis checks the metadata cache before the coordinator sees it).

Every answer leaves after the call's ``__consumer_offsets`` records are appended
(``GroupService.answer``); an append that fails is answered with Kafka's mapped error
(e.g. INVALID_COMMIT_OFFSET_SIZE for a commit over the topic's ``max.message.bytes``,
COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR for a SyncGroup), never by closing the
connection.
"""

from __future__ import annotations

from typing import Any

from kbroker import group_authz
from kbroker.acl import READ
from kbroker.handlers.cluster_groups import group_coordinator
from kbroker.handlers.transactions import transaction_coordinator
from kbroker.metadata_readiness import held_until_metadata_known
from kbroker.registry import REGISTRY
from kbroker.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import (
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
)

GROUP_KEY, TRANSACTION_KEY = 0, 1


@REGISTRY.register(10, 0, 4)
@held_until_metadata_known   # cluster mode: coordinators come from the metadata cache
def handle_find_coordinator(ctx: RequestContext, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
    if getattr(ctx.broker, "authorizer", None) is not None and id(req) not in group_authz.CHECKED:
        # kbroker/group_authz.py calls back here with the keys it allows
        return group_authz.find_coordinator(ctx, req, lambda r: handle_find_coordinator(ctx, r))
    state = ctx.broker
    if req.key_type == TRANSACTION_KEY:
        return _find_txn_coordinator(ctx, req)  # type: ignore[return-value]
    if getattr(state, "cluster", None) is not None and req.key_type == GROUP_KEY:
        return _find_group_coordinator_in_cluster(ctx, req)  # type: ignore[return-value]
    if req.key_type == GROUP_KEY and not state.groups.topic_exists():
        # __consumer_offsets' partitions open off the event loop; answer once they are open
        async def when_created() -> FindCoordinatorResponse:
            await state.groups.create_topic_off_loop()
            return _single_node_coordinator(ctx, req)
        return when_created()  # type: ignore[return-value]
    return _single_node_coordinator(ctx, req)


def _single_node_coordinator(ctx: RequestContext, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
    state = ctx.broker
    host, port = state.advertised_address(ctx.listener_name)
    if req.key_type == GROUP_KEY:
        state.groups.ensure_topic()
    if req.key_type == GROUP_KEY:
        code, msg, node = ErrorCode.NONE, None, state.node_id
    elif req.key_type == TRANSACTION_KEY:
        code, msg, node = ErrorCode.COORDINATOR_NOT_AVAILABLE, "transactions are not supported", -1
    else:
        code, msg, node = ErrorCode.INVALID_REQUEST, f"Unknown key type {req.key_type}", -1
    h, p = (host, port) if node >= 0 else ("", -1)
    if ctx.api_version >= 4:
        coordinators = [FindCoordinatorResponse.Coordinator(key=key, node_id=node, host=h, port=p, error_code=code, error_message=msg)
                        for key in req.coordinator_keys]
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=code, error_message=msg,
                                   node_id=node, host=h, port=p)


async def _find_txn_coordinator(ctx: RequestContext, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
    """Key type 1: the transaction coordinator (kbroker/handlers/transactions.py)."""
    if ctx.api_version >= 4:
        coordinators = []
        for key in req.coordinator_keys:
            code, msg, node, host, port = await transaction_coordinator(ctx, key)
            coordinators.append(FindCoordinatorResponse.Coordinator(key=key, node_id=node, host=host, port=port, error_code=code, error_message=msg))
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)
    code, msg, node, host, port = await transaction_coordinator(ctx, req.key)
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=code, error_message=msg,
                                   node_id=node, host=host, port=port)


async def _find_group_coordinator_in_cluster(ctx: RequestContext, req: FindCoordinatorRequest
                                            ) -> FindCoordinatorResponse:
    """Cluster mode: the leader of the group's __consumer_offsets partition
    (kbroker/handlers/cluster_groups.py)."""
    if ctx.api_version >= 4:
        coordinators = []
        for key in req.coordinator_keys:
            code, msg, node, host, port = await group_coordinator(ctx, key)
            coordinators.append(FindCoordinatorResponse.Coordinator(key=key, node_id=node, host=host, port=port, error_code=code, error_message=msg))
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)
    code, msg, node, host, port = await group_coordinator(ctx, req.key)
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=code, error_message=msg,
                                   node_id=node, host=host, port=port)


@REGISTRY.register(11, 0, 7)
def handle_join_group(ctx: RequestContext, req: JoinGroupRequest) -> Any:
    if (refusal := group_authz.group_refusal(ctx, req)) is not None:
        return refusal
    svc = ctx.broker.groups
    host = "/" + ctx.peer.rsplit(":", 1)[0] if ctx.peer else ""
    return svc.answer(svc.coordinator.join_group(req, ctx.api_version, client_id=ctx.client_id or "",
                                                 client_host=host))


@REGISTRY.register(8, 2, 8)
def handle_offset_commit(ctx: RequestContext, req: OffsetCommitRequest) -> Any:
    if (refusal := group_authz.group_refusal(ctx, req)) is not None:
        return refusal
    state = ctx.broker
    svc = state.groups
    unknown: dict[str, list[int]] = {}
    refused_topics = group_authz.denied_topics(ctx, READ, [t.name for t in req.topics])
    kept_topics = []
    cluster = getattr(state, "cluster", None)

    def exists(topic: str, index: int) -> bool:
        # cluster mode: the partition may live on another broker; the metadata cache knows it
        if cluster is not None:
            return cluster.cache.image.partition(topic, index) is not None
        return state.partition(topic, index) is not None

    for t in req.topics:
        if t.name in refused_topics:   # Read on the topic: TOPIC_AUTHORIZATION_FAILED below
            unknown[t.name] = [p.partition_index for p in t.partitions]
            continue
        kept = [p for p in t.partitions if exists(t.name, p.partition_index)]
        missing = [p.partition_index for p in t.partitions if not exists(t.name, p.partition_index)]
        if missing:
            unknown[t.name] = missing
        if kept:
            kept_topics.append(OffsetCommitRequest.OffsetCommitRequestTopic(name=t.name, partitions=kept))
    if not unknown:
        return svc.answer(svc.coordinator.offset_commit(req, ctx.api_version))
    req.topics = kept_topics
    resp = svc.answer(svc.coordinator.offset_commit(req, ctx.api_version)) if kept_topics else \
        OffsetCommitResponse(throttle_time_ms=0, topics=[])
    for name, parts in unknown.items():
        entry = next((t for t in resp.topics if t.name == name), None)
        if entry is None:
            entry = OffsetCommitResponse.OffsetCommitResponseTopic(name=name, partitions=[])
            resp.topics.append(entry)
        entry.partitions.extend(OffsetCommitResponse.OffsetCommitResponsePartition(
            partition_index=p, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED if name in refused_topics
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for p in parts)
    return resp


# AclOperation bits a client may do to a group with no authorizer: READ (3), DELETE (6),
# DESCRIBE (8).  Kafka 4 adds DESCRIBE_CONFIGS/ALTER_CONFIGS for KIP-848 group configs,
# which this broker does not have, so it does not claim them.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


@REGISTRY.register(15, 0, 5)
def handle_describe_groups(ctx: RequestContext, req: DescribeGroupsRequest) -> Any:
    """The coordinator describes; the broker adds what the client may do to each group when
    asked (v3+), as Kafka's KafkaApis does for every group described without an error."""
    svc = ctx.broker.groups
    if getattr(ctx.broker, "authorizer", None) is not None:
        return group_authz.describe_groups(
            ctx, req, lambda r: svc.answer(svc.coordinator.describe_groups(r, ctx.api_version)))
    resp = svc.answer(svc.coordinator.describe_groups(req, ctx.api_version))
    if ctx.api_version >= 3 and req.include_authorized_operations:
        for g in resp.groups:
            if g.error_code == 0:
                g.authorized_operations = GROUP_OPERATIONS
    return resp


def _register_passthrough(api_key: int, min_version: int, max_version: int, method: str) -> None:
    """APIs the coordinator answers as they are: call it, append its records, answer."""

    def handle(ctx: RequestContext, req: Any) -> Any:
        svc = ctx.broker.groups
        if getattr(ctx.broker, "authorizer", None) is not None:   # kbroker/group_authz.py
            return group_authz.authorized_call(ctx, req, lambda r: svc.answer(
                getattr(svc.coordinator, method)(r, ctx.api_version)))
        return svc.answer(getattr(svc.coordinator, method)(req, ctx.api_version))

    handle.__name__ = f"handle_{method}"
    REGISTRY.register(api_key, min_version, max_version)(handle)


for _key, _lo, _hi, _method in [
    (14, 0, 5, "sync_group"),
    (12, 0, 4, "heartbeat"),
    (13, 0, 4, "leave_group"),
    (9, 1, 8, "offset_fetch"),
    (16, 0, 4, "list_groups"),
    (42, 0, 2, "delete_groups"),
    (47, 0, 0, "offset_delete"),
]:
    _register_passthrough(_key, _lo, _hi, _method)
