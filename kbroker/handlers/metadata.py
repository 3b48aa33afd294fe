"""Metadata (key 3), v0-12, one code path for both modes over a ``MetadataView``
(kbroker/metadata/metadata_view.py: this broker alone, or the cluster metadata cache).

Ports (kbroker/server/services.py): ``metadata``, ``topic_admin`` (auto-creation), ``config``,
``authorizer``.

* Topics: v0 ``[]`` = all topics; v1+ ``null`` = all, ``[]`` = none (brokers only); a name
  asked twice is answered once.
* Per partition (Kafka's ``getPartitionMetadata``): leader, leader epoch, replicas, ISR,
  offline replicas; LEADER_NOT_AVAILABLE when there is no live leader, else NONE.  v0 only
  (Kafka's ``errorUnavailableEndpoints = version == 0``): replicas and ISR list live brokers
  only, and a partition with a live leader but a replica or ISR member missing answers
  REPLICA_NOT_AVAILABLE.
* Unknown topics are created when the broker allows it (``auto.create.topics.enable``) and
  the request does (v4+ ``allow_auto_topic_creation``; v1-3 always); internal topics never
  are; illegal names answer INVALID_TOPIC_EXCEPTION, others UNKNOWN_TOPIC_OR_PARTITION.
  The ``TopicAdmin`` creates them and says what each answers meanwhile.  Single node
  (kbroker/replica/local_topic_admin.py): the answer waits for the creation with ``num.partitions``
  (its logs open off the event loop), so it already describes the new topic (Kafka answers
  LEADER_NOT_AVAILABLE first and the client asks again; every client handles both, this
  saves a round trip); a topic another request is creating, or whose deletion has not
  finished, answers UNKNOWN_TOPIC_OR_PARTITION.  Cluster mode (kbroker/zk/zk_topic_admin.py):
  znodes written, LEADER_NOT_AVAILABLE until leaders are elected.
* Single node: this broker is every partition's leader, replica and ISR, controller_id =
  node id (admin clients wait while it is -1), its topic ids (kbroker/replica/topic_ids.py),
  v12+ lookups by topic id (unknown: UNKNOWN_TOPIC_ID, null name), ``is_internal`` for
  ``__consumer_offsets``.  Cluster mode: the cache's brokers, controller and topic ids.
* Authorized operations (v8+): without an authorizer every operation is allowed.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from kbroker.handlers.authorize import authorize
from kbroker.handlers.metadata_authz import cluster_operations, topic_access, topic_operations
from kbroker.handlers.metadata_readiness import held_until_metadata_known
from kbroker.metadata.metadata_view import MetadataView, PartitionView, TopicView
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.acl import DESCRIBE, TOPIC
from wire.error_codes import ErrorCode
from wire.messages import ZERO_UUID, MetadataRequest, MetadataResponse
from wire.topic_names import invalid_reason, is_internal

INT_MIN = -(1 << 31)
# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
# CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12,
# CREATE_TOKENS 13, DESCRIBE_TOKENS 14.  Kafka's AclEntry.supportedOperations per resource.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12, 13, 14))

T = MetadataResponse.MetadataResponseTopic
P = MetadataResponse.MetadataResponsePartition


def metadata_topic(view: MetadataView, topic: TopicView, topic_ops: int, version: int,
                   before: tuple[Sequence[PartitionView], list[P]] = ((), [])) -> T:
    """One known topic's entry (Kafka's getPartitionMetadata per partition).  ``before``:
    the partition views and entries of an earlier build for the same version family; an
    entry built from the very same ``PartitionView`` object is reused."""
    partitions = []
    old_views, old_entries = before
    for i, p in enumerate(topic.partitions):
        if i < len(old_views) and old_views[i] is p:
            partitions.append(old_entries[i])
            continue
        replicas, isr = p.replicas, p.isr
        error = ErrorCode.LEADER_NOT_AVAILABLE if p.leader < 0 else ErrorCode.NONE
        if version == 0:
            live_replicas = [r for r in replicas if view.is_live(r)]
            live_isr = [r for r in isr if view.is_live(r)]
            if p.leader >= 0 and (len(live_replicas) < len(replicas) or len(live_isr) < len(isr)):
                error = ErrorCode.REPLICA_NOT_AVAILABLE
            replicas, isr = live_replicas, live_isr
        partitions.append(P(error_code=error, partition_index=p.index, leader_id=p.leader,
                            leader_epoch=p.leader_epoch, replica_nodes=list(replicas),
                            isr_nodes=list(isr), offline_replicas=list(p.offline_replicas)))
    return T(error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.is_internal,
             partitions=partitions, topic_authorized_operations=topic_ops)


def _topic_entry(view: MetadataView, name: str, topic_ops: int, version: int) -> T | None:
    """``metadata_topic`` for topic ``name`` (None: no such topic), its partitions' entries
    cached in the view while the topic does not change (kbroker/metadata/metadata_view.py: built
    once, not per request, for a topic of 10,000 partitions); only v0 answers differ."""
    kind = ("metadata", version == 0)
    cached = view.cached(name, kind)
    if cached is None:
        topic = view.topic(name)
        if topic is None:
            return None
        before = view.previous(name, kind)
        entry = metadata_topic(view, topic, topic_ops, version, (before[3], before[2]) if before else ((), []))
        view.remember(name, kind, (entry.topic_id, entry.is_internal, entry.partitions, topic.partitions))
        return entry
    topic_id, internal, partitions, _ = cached
    return T(error_code=0, name=name, topic_id=topic_id, is_internal=internal, partitions=partitions,
             topic_authorized_operations=topic_ops)


def _error_topic(code: int, name: str | None) -> T:
    return T(error_code=code, name=name, topic_id=ZERO_UUID, topic_authorized_operations=INT_MIN)


def _requested_names(view: MetadataView, req: MetadataRequest, version: int) -> list[Any]:
    """The topics to answer, in request order, each once (None: a v10+ lookup by id)."""
    if req.topics is None or (version == 0 and not req.topics):
        return view.topic_names()
    return list(dict.fromkeys(t.name for t in req.topics))


def _to_create(ctx: RequestContext, view: MetadataView, req: MetadataRequest,
               names: list[Any]) -> list[str]:
    v = ctx.api_version
    if not (ctx.services.config.config["auto.create.topics.enable"] and (v < 4 or req.allow_auto_topic_creation)):
        return []
    return [n for n in names if n is not None and not view.has_topic(n)
            and invalid_reason(n) is None and not is_internal(n)]


def _response(ctx: RequestContext, view: MetadataView, req: MetadataRequest, names: list[Any],
              creation_errors: Mapping[str, int]) -> MetadataResponse:
    """``creation_errors``: topics whose creation answers an error entry of its own (cluster
    mode: LEADER_NOT_AVAILABLE until elected, or INVALID_REPLICATION_FACTOR)."""
    v = ctx.api_version
    topic_ops = TOPIC_OPERATIONS if v >= 8 and req.include_topic_authorized_operations else INT_MIN
    topics = []
    for name in names:
        if name is None:  # v10+ lookups by topic id: not served, none matches
            topics.append(_error_topic(ErrorCode.UNKNOWN_TOPIC_ID, None))
        elif name in creation_errors:
            topics.append(T(error_code=creation_errors[name], name=name, topic_id=ZERO_UUID,
                            is_internal=False, partitions=[], topic_authorized_operations=INT_MIN))
        elif (entry := _topic_entry(view, name, topic_operations(ctx, name, topic_ops), v)) is not None:
            topics.append(entry)
        elif invalid_reason(name) is not None:
            topics.append(_error_topic(ErrorCode.INVALID_TOPIC_EXCEPTION, name))
        else:
            topics.append(_error_topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name))
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                 for b in view.brokers(ctx.listener_name)],
        cluster_id=ctx.services.cluster_id,
        controller_id=view.controller_id,
        topics=topics,
        cluster_authorized_operations=(
            cluster_operations(ctx, CLUSTER_OPERATIONS) if 8 <= v <= 10 and req.include_cluster_authorized_operations
            else INT_MIN
        ),
    )


def _response_by_ids(ctx: RequestContext, view: MetadataView, req: MetadataRequest) -> MetadataResponse:
    """v12+ lookups by topic id (KafkaApis.getTopicMetadata with useTopicId): each distinct
    non-zero id once, in request order; names in the same request are not looked at, no
    topic is created; an unknown id answers UNKNOWN_TOPIC_ID with a null name, a topic the
    principal may not describe TOPIC_AUTHORIZATION_FAILED with a null name."""
    v = ctx.api_version
    topic_ops = TOPIC_OPERATIONS if req.include_topic_authorized_operations else INT_MIN
    topics = []
    for topic_id in dict.fromkeys(t.topic_id for t in req.topics if t.topic_id != ZERO_UUID):
        name = ctx.services.metadata.name_for_id(topic_id)
        if name is None or not view.has_topic(name):
            topics.append(T(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id,
                            topic_authorized_operations=INT_MIN))
        elif ctx.services.authorizer.configured and not authorize(ctx, DESCRIBE, TOPIC, name):
            topics.append(T(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=None, topic_id=topic_id,
                            topic_authorized_operations=INT_MIN))
        elif (entry := _topic_entry(view, name, topic_operations(ctx, name, topic_ops), v)) is not None:
            topics.append(entry)
    resp = _response(ctx, view, req, [], {})
    resp.topics = topics
    return resp


def _invalid_request(req: MetadataRequest) -> MetadataResponse:
    """v10-11 name topics only: a null name or a topic id there is refused as Kafka's
    handleTopicMetadataRequest does (InvalidRequestException, answered by
    MetadataRequest.getErrorResponse): every requested topic with INVALID_REQUEST, its name
    ("" for null), its id, no partitions; no brokers, no cluster id, controller -1."""
    return MetadataResponse(
        throttle_time_ms=0, brokers=[], cluster_id=None, controller_id=-1,
        topics=[T(error_code=ErrorCode.INVALID_REQUEST, name=t.name if t.name is not None else "",
                  topic_id=t.topic_id, is_internal=False, partitions=[], topic_authorized_operations=INT_MIN)
                for t in req.topics],
        cluster_authorized_operations=INT_MIN)


@REGISTRY.register(3, 0, 12)
@held_until_metadata_known   # a restarted broker: not "no brokers" (kbroker/handlers/metadata_readiness.py)
def handle_metadata(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse | Awaitable[MetadataResponse]:
    if 10 <= ctx.api_version < 12 and req.topics and any(t.name is None or t.topic_id != ZERO_UUID
                                                         for t in req.topics):
        return _invalid_request(req)
    services = ctx.services
    view = services.metadata.view()
    if ctx.api_version >= 12 and req.topics and any(t.topic_id != ZERO_UUID for t in req.topics):
        return _response_by_ids(ctx, view, req)
    names = _requested_names(view, req, ctx.api_version)
    to_create = _to_create(ctx, view, req, names)
    denied: dict[str, int] = {}   # authorizer: TOPIC_AUTHORIZATION_FAILED (kbroker/handlers/metadata_authz.py)
    if services.authorizer.configured:
        all_topics = req.topics is None or (ctx.api_version == 0 and not req.topics)
        names, denied = topic_access(ctx, names, to_create, all_topics)
        to_create = [n for n in to_create if n not in denied]
    if not to_create:
        return _response(ctx, view, req, names, denied)
    created = services.topic_admin.auto_create(to_create)
    if not inspect.isawaitable(created):   # nothing to wait for: answered from the view as it is
        return _response(ctx, view, req, names, {**created, **denied})

    async def answer_when_created() -> MetadataResponse:
        errors = await created
        # a new view: the one above was taken before the topics existed
        return _response(ctx, services.metadata.view(), req, names, {**errors, **denied})
    return answer_when_created()
