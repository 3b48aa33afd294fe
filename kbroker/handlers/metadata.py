"""Metadata (key 3), v0-12.

* Topics: v0 ``[]`` = all topics; v1+ ``null`` = all, ``[]`` = none (brokers only).
* Unknown topics are created when the broker allows it (``auto.create.topics.enable``) and
  the request does (v4+ ``allow_auto_topic_creation``; v1-3 always), with
  ``num.partitions``.  Creation is synchronous, so the same answer already describes the
  new topic (Kafka answers LEADER_NOT_AVAILABLE first and the client asks again; both are
  handled by every client, this one saves a round trip).  Otherwise
  UNKNOWN_TOPIC_OR_PARTITION; illegal names INVALID_TOPIC_EXCEPTION; internal topics are
  never auto-created by Metadata.
* Single node: this broker is every partition's leader, replica and ISR, leader epoch 0,
  controller_id = node id (admin clients wait while it is -1), topic ids all zero (so
  clients stay on name-based Fetch v12), ``is_internal`` for ``__consumer_offsets``.
* Authorized operations (v8+): without an authorizer every operation is allowed.
"""

from __future__ import annotations

from kbroker.handlers.cluster_metadata import cluster_metadata
from kbroker.registry import REGISTRY
from kbroker.request_context import RequestContext
from kbroker.topic_names import invalid_reason, is_internal
from wire.error_codes import ErrorCode
from wire.messages import ZERO_UUID, MetadataRequest, MetadataResponse

INT_MIN = -(1 << 31)
# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
# CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12,
# CREATE_TOKENS 13, DESCRIBE_TOKENS 14.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12, 13, 14))

T = MetadataResponse.MetadataResponseTopic
P = MetadataResponse.MetadataResponsePartition


def _leader_epoch(state, topic: str, index: int) -> int:
    """The partition's persisted leader epoch (its leader-epoch-checkpoint)."""
    partition = state.partition(topic, index)
    return partition.leader_epoch if partition is not None else state.leader_epoch


def describe_topic(ctx: RequestContext, name: str, with_ops: bool) -> T:
    state = ctx.broker
    info = state.topics.get(name)
    node = state.node_id
    if info is None:
        return T(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=ZERO_UUID,
                 topic_authorized_operations=INT_MIN)
    partitions = [
        P(error_code=0, partition_index=p, leader_id=node, leader_epoch=_leader_epoch(state, name, p),
          replica_nodes=[node], isr_nodes=[node], offline_replicas=[])
        for p in range(info.partitions)
    ]
    return T(error_code=0, name=name, topic_id=ZERO_UUID, is_internal=info.internal,
             partitions=partitions,
             topic_authorized_operations=TOPIC_OPERATIONS if with_ops else INT_MIN)


@REGISTRY.register(3, 0, 12)
def handle_metadata(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse:
    state = ctx.broker
    v = ctx.api_version
    with_topic_ops = v >= 8 and req.include_topic_authorized_operations
    if getattr(state, "cluster", None) is not None:   # cluster mode: the metadata cache answers
        return cluster_metadata(  # type: ignore[return-value]
            ctx, req, TOPIC_OPERATIONS if with_topic_ops else INT_MIN,
            CLUSTER_OPERATIONS if 8 <= v <= 10 and req.include_cluster_authorized_operations else INT_MIN)
    if req.topics is None or (v == 0 and not req.topics):
        names = sorted(state.topics)
    else:
        names = [t.name for t in req.topics]
    allow_create = state.config["auto.create.topics.enable"] and (v < 4 or req.allow_auto_topic_creation)
    topics = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        if name is None:  # v10+ lookups by topic id: ids are all zero here, none matches
            topics.append(T(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=ZERO_UUID,
                            topic_authorized_operations=INT_MIN))
            continue
        if name not in state.topics:
            if invalid_reason(name) is not None:
                topics.append(T(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name,
                                topic_id=ZERO_UUID, topic_authorized_operations=INT_MIN))
                continue
            if allow_create and not is_internal(name):
                state.create_topic(name, state.config["num.partitions"])
        topics.append(describe_topic(ctx, name, with_topic_ops))
    host, port = state.advertised_address()
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[MetadataResponse.MetadataResponseBroker(state.node_id, host, port,
                                                         state.config["broker.rack"])],
        cluster_id=state.cluster_id,
        controller_id=state.node_id,
        topics=topics,
        cluster_authorized_operations=(
            CLUSTER_OPERATIONS if 8 <= v <= 10 and req.include_cluster_authorized_operations else INT_MIN
        ),
    )
