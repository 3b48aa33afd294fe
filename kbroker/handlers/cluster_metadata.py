"""Metadata (key 3) and DescribeCluster (key 60) answers in cluster mode, from the metadata
cache (kbroker/metadata_cache.py) as Kafka's ZkMetadataCache answers them.

* Brokers: every live broker with its endpoint on the listener the request came in on (the
  one listener here), and rack; controller_id as this broker's own ``/controller`` watch
  last saw it (it learns of a failover there before the new controller's UpdateMetadata
  arrives), else as the cache knows it (-1 until the first UpdateMetadata).
* Per partition: leader (-1 when its broker is not live), leader epoch, replicas, ISR,
  offline replicas (assigned replicas whose broker is not live); the error is
  LEADER_NOT_AVAILABLE when there is no live leader (Kafka's getPartitionMetadata), else
  NONE.  v0 only (Kafka's ``errorUnavailableEndpoints = version == 0``): replicas and ISR
  list live brokers only, and a partition with a live leader but a replica or ISR member
  missing answers REPLICA_NOT_AVAILABLE.  Topic ids are the real ones from the topic
  znode.
* Auto-creation (Metadata v1-3 always, v4+ when asked, ``auto.create.topics.enable``):
  the broker writes the topic znodes itself as Kafka 2.x's ZooKeeper mode did
  (AdminZkClient; any broker may) with ``num.partitions`` and
  ``default.replication.factor``, and answers LEADER_NOT_AVAILABLE for it; the client asks
  again once the controller has elected leaders.  Too few live brokers for the replication
  factor: INVALID_REPLICATION_FACTOR for that topic.
"""

from __future__ import annotations

from typing import Any

from cluster.assignment import AdminOperationError
from kbroker import zk_admin
from kbroker.request_context import RequestContext
from kbroker.topic_names import invalid_reason, is_internal
from wire.error_codes import ErrorCode
from wire.messages import ZERO_UUID, MetadataRequest, MetadataResponse

INT_MIN = -(1 << 31)
T = MetadataResponse.MetadataResponseTopic
P = MetadataResponse.MetadataResponsePartition


def _describe(ctx: RequestContext, name: str, topic_ops: int) -> T:
    cluster = ctx.broker.cluster
    assert cluster is not None
    image = cluster.cache.image
    info = image.topics.get(name)
    if info is None:
        return T(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=ZERO_UUID,
                 topic_authorized_operations=INT_MIN)
    partitions = []
    v0 = ctx.api_version == 0
    for index, p in sorted(info.partitions.items()):
        leader = image.leader(name, index)
        replicas = list(p.replicas)
        isr = list(p.state.isr) if p.state else []
        error = ErrorCode.LEADER_NOT_AVAILABLE if leader < 0 else ErrorCode.NONE
        if v0:
            live_replicas = [r for r in replicas if image.is_live(r)]
            live_isr = [r for r in isr if image.is_live(r)]
            if leader >= 0 and (len(live_replicas) < len(replicas) or len(live_isr) < len(isr)):
                error = ErrorCode.REPLICA_NOT_AVAILABLE
            replicas, isr = live_replicas, live_isr
        partitions.append(P(
            error_code=error, partition_index=index, leader_id=leader,
            leader_epoch=p.state.leader_epoch if p.state is not None else -1,
            replica_nodes=replicas, isr_nodes=isr,
            offline_replicas=list(image.offline_replicas(name, index))))
    return T(error_code=0, name=name, topic_id=info.topic_id or ZERO_UUID, is_internal=is_internal(name),
             partitions=partitions, topic_authorized_operations=topic_ops)


async def _auto_create(ctx: RequestContext, name: str) -> ErrorCode:
    state = ctx.broker
    cluster = state.cluster
    assert cluster is not None
    try:
        assignment = zk_admin.assign(cluster.cache.live_brokers(), state.config["num.partitions"],
                                     state.config["default.replication.factor"])
    except AdminOperationError:
        return ErrorCode.INVALID_REPLICATION_FACTOR
    except ValueError:
        return ErrorCode.INVALID_REPLICATION_FACTOR
    try:
        await zk_admin.create_topic(cluster.zk, name, assignment, {})
    except zk_admin.TopicExistsError:
        pass
    return ErrorCode.LEADER_NOT_AVAILABLE


async def cluster_metadata(ctx: RequestContext, req: MetadataRequest, topic_ops: int,
                           cluster_ops: int) -> MetadataResponse:
    state = ctx.broker
    cluster = state.cluster
    assert cluster is not None
    v = ctx.api_version
    cache = cluster.cache
    if req.topics is None or (v == 0 and not req.topics):
        names: list[Any] = cache.topic_names()
    else:
        names = [t.name for t in req.topics]
    allow_create = state.config["auto.create.topics.enable"] and (v < 4 or req.allow_auto_topic_creation)
    topics = []
    seen: set[Any] = set()
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        if name is None:
            topics.append(T(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=ZERO_UUID,
                            topic_authorized_operations=INT_MIN))
            continue
        if cache.topic(name) is None:
            if invalid_reason(name) is not None:
                topics.append(T(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name,
                                topic_id=ZERO_UUID, topic_authorized_operations=INT_MIN))
                continue
            if allow_create and not is_internal(name):
                code = await _auto_create(ctx, name)
                topics.append(T(error_code=code, name=name, topic_id=ZERO_UUID,
                                is_internal=False, partitions=[], topic_authorized_operations=INT_MIN))
                continue
        topics.append(_describe(ctx, name, topic_ops))
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[MetadataResponse.MetadataResponseBroker(b.broker_id, e.host, e.port, b.rack)
                 for b in cache.live_brokers()
                 if (e := (b.endpoint(state.config.listeners[0].name) or b.endpoints[0])) is not None],
        cluster_id=state.cluster_id,
        controller_id=cluster.controller_id,
        topics=topics,
        cluster_authorized_operations=cluster_ops,
    )


def live_brokers_for_describe(ctx: RequestContext) -> list[tuple[int, str, int, str | None]]:
    """(id, host, port, rack) of every live broker, for DescribeCluster."""
    state = ctx.broker
    assert state.cluster is not None
    out = []
    for b in state.cluster.cache.live_brokers():
        e = b.endpoint(state.config.listeners[0].name) or (b.endpoints[0] if b.endpoints else None)
        if e is not None:
            out.append((b.broker_id, e.host, e.port, b.rack))
    return out
