"""The classic consumer-group APIs, adapted to ``groups.GroupCoordinator`` (kbroker/coordinators/group_service.py).

Ports (kbroker/server/services.py): ``groups`` (the coordinator, and the store of its writes),
``coordinators`` (FindCoordinator), ``metadata`` (OffsetCommit: does the cluster have the
partition), ``authorizer`` (kbroker/handlers/group_authz.py).

FindCoordinator 0-4 (v4+ batched keys): key type 0 a group, 1 a transactional id, each
located by the ``coordinators`` port (a single node coordinates everything; in ZooKeeper
mode the leader of the key's internal-topic partition), JoinGroup 0-7, SyncGroup 0-5,
Heartbeat 0-4, LeaveGroup 0-4, OffsetCommit 2-8, OffsetFetch 1-8, DescribeGroups 0-5,
ListGroups 0-4, DeleteGroups 0-2, OffsetDelete 0.  All seven classic-group APIs are
advertised together: librdkafka enables consumer groups only when it sees all of them.

OffsetCommit for a partition the cluster does not have answers UNKNOWN_TOPIC_OR_PARTITION
for that partition (KafkaApis checks the metadata cache before the coordinator sees it).

Every answer leaves after the call's ``__consumer_offsets`` records are appended
(``GroupService.answer``); an append that fails is answered with Kafka's mapped error
(e.g. INVALID_COMMIT_OFFSET_SIZE for a commit over the topic's ``max.message.bytes``,
COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR for a SyncGroup), never by closing the
connection.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from kbroker.handlers import group_authz
from kbroker.handlers.api_versions import consumer_protocol_enabled
from kbroker.handlers.authorize import authorize, authorized_operations
from kbroker.handlers.metadata_readiness import held_until_metadata_known
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.acl import DESCRIBE, GROUP, READ
from wire.error_codes import ErrorCode
from wire.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
)

GROUP_KEY, TRANSACTION_KEY = 0, 1
# one key's answer: (error, message, node id, host, port), the CoordinatorLocator's
Answer = tuple[ErrorCode, "str | None", int, str, int]
Locate = Callable[[str], "Answer | Awaitable[Answer]"]


@REGISTRY.register(10, 0, 4)
@held_until_metadata_known   # cluster mode: coordinators come from the metadata cache
def handle_find_coordinator(ctx: RequestContext, req: FindCoordinatorRequest) -> Any:
    """v0-3 ask for one key (``key``), v4+ for several (``coordinator_keys``), all of one key
    type.  Keys the principal may not Describe are answered without a lookup, after the others
    (Kafka's order); the others are located in turn, each once the one before is answered."""
    batched = ctx.api_version >= 4
    keys = req.coordinator_keys if batched else [req.key]
    refused = group_authz.coordinator_refusals(ctx, req.key_type, keys)
    allowed = [k for k in keys if k not in refused] if refused else keys
    refusals = [(k, (code, None, -1, "", -1)) for k, code in refused.items()]

    def respond(answers: list[Answer]) -> FindCoordinatorResponse:
        entries = list(zip(allowed, answers, strict=True)) + refusals
        if not batched:
            ((_, (code, msg, node, host, port)),) = entries
            return FindCoordinatorResponse(throttle_time_ms=0, error_code=code, error_message=msg,
                                           node_id=node, host=host, port=port)
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[
            FindCoordinatorResponse.Coordinator(key=key, node_id=node, host=host, port=port, error_code=code,
                                                error_message=msg)
            for key, (code, msg, node, host, port) in entries])

    return group_authz.after(_in_turn(allowed, _locator(ctx, req.key_type)), respond)


def _locator(ctx: RequestContext, key_type: int) -> Locate:
    coordinators = ctx.services.coordinators
    listener = ctx.listener_name
    if key_type == GROUP_KEY:
        return lambda group_id: coordinators.group_coordinator(group_id, listener)
    if key_type == TRANSACTION_KEY:
        def transaction(transactional_id: str) -> Answer | Awaitable[Answer]:
            if not transactional_id:
                return ErrorCode.INVALID_REQUEST, "Transactional id must be non-empty", -1, "", -1
            return coordinators.transaction_coordinator(transactional_id, listener)
        return transaction
    unknown: Answer = (ErrorCode.INVALID_REQUEST, f"Unknown key type {key_type}", -1, "", -1)
    return lambda key: unknown


def _in_turn(keys: list[str], locate: Locate) -> list[Answer] | Awaitable[list[Answer]]:
    """Each key's answer, in order, the next key located only once the one before is
    answered: the list now when every lookup answers at once, else an awaitable of it."""
    answers: list[Answer] = []
    for i, key in enumerate(keys):
        answer = locate(key)
        if inspect.isawaitable(answer):
            return _rest_in_turn(answers, answer, keys[i + 1:], locate)
        answers.append(answer)
    return answers


async def _rest_in_turn(answers: list[Answer], pending: Awaitable[Answer], keys: list[str],
                        locate: Locate) -> list[Answer]:
    answers.append(await pending)
    for key in keys:
        answer = locate(key)
        answers.append(await answer if inspect.isawaitable(answer) else answer)
    return answers


@REGISTRY.register(11, 0, 7)
def handle_join_group(ctx: RequestContext, req: JoinGroupRequest) -> Any:
    if (refusal := group_authz.group_refusal(ctx, req)) is not None:
        return refusal
    svc = ctx.services.groups
    host = "/" + ctx.peer.rsplit(":", 1)[0] if ctx.peer else ""
    return svc.answer(svc.coordinator.join_group(req, ctx.api_version, client_id=ctx.client_id or "",
                                                 client_host=host))


@REGISTRY.register(8, 2, 9)
def handle_offset_commit(ctx: RequestContext, req: OffsetCommitRequest) -> Any:
    if (refusal := group_authz.group_refusal(ctx, req)) is not None:
        return refusal
    svc = ctx.services.groups
    unknown: dict[str, list[int]] = {}
    refused_topics = group_authz.denied_topics(ctx, READ, [t.name for t in req.topics])
    kept_topics = []
    # the partition may live on another broker: the cluster's metadata knows whether it exists
    metadata = ctx.services.metadata.view()
    for t in req.topics:
        if t.name in refused_topics:   # Read on the topic: TOPIC_AUTHORIZATION_FAILED below
            unknown[t.name] = [p.partition_index for p in t.partitions]
            continue
        known = [metadata.has_partition(t.name, p.partition_index) for p in t.partitions]
        kept = [p for p, k in zip(t.partitions, known, strict=True) if k]
        missing = [p.partition_index for p, k in zip(t.partitions, known, strict=True) if not k]
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
    svc = ctx.services.groups
    if ctx.services.authorizer.configured:
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
        svc = ctx.services.groups
        if ctx.services.authorizer.configured:   # kbroker/handlers/group_authz.py
            return group_authz.authorized_call(ctx, req, lambda r: svc.answer(
                getattr(svc.coordinator, method)(r, ctx.api_version)))
        return svc.answer(getattr(svc.coordinator, method)(req, ctx.api_version))

    handle.__name__ = f"handle_{method}"
    REGISTRY.register(api_key, min_version, max_version)(handle)


for _key, _lo, _hi, _method in [
    (14, 0, 5, "sync_group"),
    (12, 0, 4, "heartbeat"),
    (13, 0, 4, "leave_group"),
    (9, 1, 9, "offset_fetch"),
    (16, 0, 5, "list_groups"),
    (42, 0, 2, "delete_groups"),
    (47, 0, 0, "offset_delete"),
]:
    _register_passthrough(_key, _lo, _hi, _method)


# -- the consumer group protocol (KIP-848) -------------------------------------------------

@REGISTRY.register(68, 0, 1)
def handle_consumer_group_heartbeat(ctx: RequestContext, req: ConsumerGroupHeartbeatRequest) -> Any:
    """Read on the group (GROUP_AUTHORIZATION_FAILED), then Describe on each subscribed topic
    name (TOPIC_AUTHORIZATION_FAILED naming them), as Kafka's KafkaApis checks them.
    UNSUPPORTED_VERSION while ``consumer`` is not a rebalance protocol of this broker."""
    if not consumer_protocol_enabled(ctx):
        return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
    if ctx.services.authorizer.configured:
        if not authorize(ctx, READ, GROUP, req.group_id):
            return ConsumerGroupHeartbeatResponse(
                error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if req.subscribed_topic_names:
            denied = sorted(group_authz.denied_topics(ctx, DESCRIBE, req.subscribed_topic_names))
            if denied:
                return ConsumerGroupHeartbeatResponse(
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    error_message="The group has subscribed to topics which are not existed or "
                                  f"not authorized: {', '.join(denied)}.")
    svc = ctx.services.groups
    host = "/" + ctx.peer.rsplit(":", 1)[0] if ctx.peer else ""
    return svc.answer(svc.coordinator.consumer_group_heartbeat(
        req, ctx.api_version, client_id=ctx.client_id or "", client_host=host))


@REGISTRY.register(69, 0, 1)
def handle_consumer_group_describe(ctx: RequestContext, req: ConsumerGroupDescribeRequest) -> Any:
    """Describe on each group (GROUP_AUTHORIZATION_FAILED entries), authorized operations when
    asked."""
    svc = ctx.services.groups
    if not consumer_protocol_enabled(ctx):
        return ConsumerGroupDescribeResponse(groups=[ConsumerGroupDescribeResponse.DescribedGroup(
            group_id=g, error_code=ErrorCode.UNSUPPORTED_VERSION) for g in req.group_ids])
    refused = []
    if ctx.services.authorizer.configured:
        refused = [g for g in req.group_ids if not authorize(ctx, DESCRIBE, GROUP, g)]
        req.group_ids = [g for g in req.group_ids if g not in refused]
    resp = svc.answer(svc.coordinator.consumer_group_describe(req, ctx.api_version))

    def finish(r: ConsumerGroupDescribeResponse) -> ConsumerGroupDescribeResponse:
        for g in r.groups:
            if g.error_code == 0 and req.include_authorized_operations:
                g.authorized_operations = authorized_operations(ctx, GROUP, g.group_id) \
                    if ctx.services.authorizer.configured else GROUP_OPERATIONS
            for m in g.members:
                m.subscribed_topic_names = sorted(m.subscribed_topic_names)
        r.groups += [ConsumerGroupDescribeResponse.DescribedGroup(
            group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in refused]
        return r

    return group_authz.after(resp, finish)
