"""Authorization of the consumer-group APIs, as Kafka's KafkaApis does it; used by
kbroker/handlers/groups.py only when an authorizer is configured (the ``authorizer`` port's
``configured``: without one, nothing is filtered).

* JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit: Read on the group, else the
  whole request answers GROUP_AUTHORIZATION_FAILED.  OffsetCommit then needs Read on each
  topic: TOPIC_AUTHORIZATION_FAILED for that topic's partitions (handlers/groups.py).
* OffsetFetch: Describe on the group (v8: per group), else GROUP_AUTHORIZATION_FAILED; topics
  asked for by name that the principal may not Describe answer TOPIC_AUTHORIZATION_FAILED
  (offset -1); an "all topics" fetch leaves them out.
* DescribeGroups: Describe per group (GROUP_AUTHORIZATION_FAILED entries after the others);
  ``authorized_operations`` from the ACLs when asked.
* ListGroups: every group with Describe on the cluster, else those the principal may
  Describe.  DeleteGroups: Delete per group.  OffsetDelete: Delete on the group, Read per topic.
* FindCoordinator: Describe on the group (key type 0) or on the transactional id (key type 1),
  else GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED (per key in v4+; the handler answers
  the refused keys after the others).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kbroker.handlers.authorize import authorize, authorize_cluster, authorized_operations
from kbroker.handlers.authz_responses import refused
from kbroker.security.authorizer import INT_MIN
from kbroker.server.request_context import RequestContext
from wire.acl import DELETE, DESCRIBE, GROUP, READ, TOPIC, TRANSACTIONAL_ID
from wire.error_codes import ErrorCode
from wire.messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    OffsetFetchResponse,
)

GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
_READ_GROUP_APIS = (8, 11, 12, 13, 14)   # OffsetCommit, JoinGroup, Heartbeat, LeaveGroup, SyncGroup


def after(result: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` of a handler's result, whether it is the response or an awaitable of it."""
    if inspect.isawaitable(result):
        async def wait() -> Any:
            return fn(await result)
        return wait()
    return fn(result)


def group_refusal(ctx: RequestContext, req: Any) -> Any | None:
    """The whole-request answer when the principal may not use the group; None otherwise
    (and always None without an authorizer)."""
    if not ctx.services.authorizer.configured:
        return None
    key = ctx.api_key
    if key in _READ_GROUP_APIS:
        op = READ
    elif key == 9 and ctx.api_version < 8:
        op = DESCRIBE
    elif key == 47:
        op = DELETE
    else:
        return None
    if authorize(ctx, op, GROUP, req.group_id):
        return None
    return refused(key, ctx.api_version, req, GROUP_DENIED)


def denied_topics(ctx: RequestContext, op: int, names: list[str]) -> set[str]:
    if not ctx.services.authorizer.configured:
        return set()
    return {n for n in names if not authorize(ctx, op, TOPIC, n)}


# ---------------------------------------------------------------- per-entry APIs
def offset_fetch(ctx: RequestContext, req: Any, call: Callable[[Any], Any]) -> Any:
    refusal = group_refusal(ctx, req)
    if refusal is not None:
        return refusal
    if ctx.api_version < 8:
        return _offset_fetch_topics(ctx, req, call)
    allowed = [g for g in req.groups if authorize(ctx, DESCRIBE, GROUP, g.group_id)]
    denied = [g.group_id for g in req.groups if g not in allowed]
    hidden: dict[str, list[Any]] = {}          # group -> topics asked for by name and refused
    all_topics: set[str] = set()               # groups asking for every topic
    for g in allowed:
        if g.topics is None:
            all_topics.add(g.group_id)
            continue
        refused_names = denied_topics(ctx, DESCRIBE, [t.name for t in g.topics])
        hidden[g.group_id] = [t for t in g.topics if t.name in refused_names]
        g.topics = [t for t in g.topics if t.name not in refused_names]
    req.groups = allowed
    R = OffsetFetchResponse

    def finish(resp: OffsetFetchResponse) -> OffsetFetchResponse:
        for g in resp.groups:
            if g.group_id in all_topics:
                drop = denied_topics(ctx, DESCRIBE, [t.name for t in g.topics])
                g.topics = [t for t in g.topics if t.name not in drop]
            g.topics += [R.OffsetFetchResponseTopics(name=t.name, partitions=[
                R.OffsetFetchResponsePartitions(partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
                                                metadata="", error_code=TOPIC_DENIED)
                for p in t.partition_indexes]) for t in hidden.get(g.group_id, [])]
        resp.groups += [R.OffsetFetchResponseGroup(group_id=g, topics=[], error_code=GROUP_DENIED) for g in denied]
        return resp

    return after(call(req) if allowed else R(groups=[]), finish)


def _offset_fetch_topics(ctx: RequestContext, req: Any, call: Callable[[Any], Any]) -> Any:
    """v1-7: one group; topics by name or all (null)."""
    if req.topics is None:
        def drop(resp: OffsetFetchResponse) -> OffsetFetchResponse:
            hidden = denied_topics(ctx, DESCRIBE, [t.name for t in resp.topics])
            resp.topics = [t for t in resp.topics if t.name not in hidden]
            return resp
        return after(call(req), drop)
    hidden_topics = [t for t in req.topics if t.name in denied_topics(ctx, DESCRIBE, [t.name])]
    if not hidden_topics:
        return call(req)
    req.topics = [t for t in req.topics if t not in hidden_topics]

    def add(resp: OffsetFetchResponse) -> OffsetFetchResponse:
        for t in hidden_topics:
            resp.topics.append(OffsetFetchResponse.OffsetFetchResponseTopic(name=t.name, partitions=[
                OffsetFetchResponse.OffsetFetchResponsePartition(
                    partition_index=p, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                    error_code=TOPIC_DENIED) for p in t.partition_indexes]))
        return resp
    return after(call(req) if req.topics else OffsetFetchResponse(topics=[], error_code=0), add)


def describe_groups(ctx: RequestContext, req: Any, call: Callable[[Any], Any]) -> Any:
    denied = [g for g in req.groups if not authorize(ctx, DESCRIBE, GROUP, g)]
    req.groups = [g for g in req.groups if g not in denied]
    want_ops = ctx.api_version >= 3 and req.include_authorized_operations

    def finish(resp: Any) -> Any:
        for g in resp.groups:
            g.authorized_operations = (authorized_operations(ctx, GROUP, g.group_id)
                                       if want_ops and g.error_code == 0 else INT_MIN)
        resp.groups += [DescribeGroupsResponse.DescribedGroup(
            error_code=GROUP_DENIED, group_id=g, group_state="", protocol_type="", protocol_data="",
            members=[], authorized_operations=INT_MIN) for g in denied]
        return resp
    if not req.groups:
        return finish(DescribeGroupsResponse(groups=[]))
    return after(call(req), finish)


def list_groups(ctx: RequestContext, req: Any, call: Callable[[Any], Any]) -> Any:
    if authorize_cluster(ctx, DESCRIBE):
        return call(req)

    def finish(resp: Any) -> Any:
        resp.groups = [g for g in resp.groups if authorize(ctx, DESCRIBE, GROUP, g.group_id)]
        return resp
    return after(call(req), finish)


def delete_groups(ctx: RequestContext, req: Any, call: Callable[[Any], Any]) -> Any:
    denied = [g for g in req.groups_names if not authorize(ctx, DELETE, GROUP, g)]
    req.groups_names = [g for g in req.groups_names if g not in denied]

    def finish(resp: Any) -> Any:
        resp.results += [DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=GROUP_DENIED)
                         for g in denied]
        return resp
    if not req.groups_names:
        return finish(DeleteGroupsResponse(results=[]))
    return after(call(req), finish)


def coordinator_refusals(ctx: RequestContext, key_type: int, keys: list[str]) -> dict[str, ErrorCode]:
    """FindCoordinator: the keys the principal may not Describe (a group for key type 0, a
    transactional id for 1), with their error; none without an authorizer."""
    if not ctx.services.authorizer.configured:
        return {}
    if key_type == 0:
        resource, code = GROUP, GROUP_DENIED
    elif key_type == 1:
        resource, code = TRANSACTIONAL_ID, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        return {}   # an unknown key type is answered INVALID_REQUEST
    return {k: code for k in keys if not authorize(ctx, DESCRIBE, resource, k)}


def authorized_call(ctx: RequestContext, req: Any, call: Callable[[Any], Any]) -> Any:
    """The pass-through group APIs (SyncGroup, Heartbeat, LeaveGroup, OffsetFetch, ListGroups,
    DeleteGroups, OffsetDelete) with their checks."""
    key = ctx.api_key
    if key == 9:
        return offset_fetch(ctx, req, call)
    if key == 16:
        return list_groups(ctx, req, call)
    if key == 42:
        return delete_groups(ctx, req, call)
    refusal = group_refusal(ctx, req)
    if refusal is not None:
        return refusal
    if key == 47:   # OffsetDelete: Read per topic
        refused_names = denied_topics(ctx, READ, [t.name for t in req.topics])
        if refused_names:
            kept = [t for t in req.topics if t.name not in refused_names]
            hidden = [t for t in req.topics if t.name in refused_names]
            req.topics = kept

            def finish(resp: Any) -> Any:
                T = type(resp).OffsetDeleteResponseTopic
                P = type(resp).OffsetDeleteResponsePartition
                resp.topics += [T(name=t.name, partitions=[P(partition_index=p.partition_index,
                                                             error_code=TOPIC_DENIED) for p in t.partitions])
                                for t in hidden]
                return resp
            return after(call(req), finish)
    return call(req)
