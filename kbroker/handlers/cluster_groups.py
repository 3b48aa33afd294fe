"""FindCoordinator for groups in cluster mode (Kafka's KafkaApis.getCoordinator, ZooKeeper
mode): the coordinator of a group is the leader of its ``__consumer_offsets`` partition
(``abs(groupId.hashCode) % partitions``), found in the metadata cache.

The topic is created on the first lookup, as Kafka does, with
``offsets.topic.num.partitions``, ``offsets.topic.replication.factor`` and the compacted
config; while fewer brokers are alive than the replication factor it is not created and
the answer is COORDINATOR_NOT_AVAILABLE (Kafka's refusal, "Number of alive brokers ... does
not meet the required replication factor ... for the offsets topic"), as it is while the
topic has no leader for that partition yet, or while ZooKeeper's connection, lost, does not
come back within ``zookeeper.connection.timeout.ms`` for the creation (kbroker/zk_retry.py).
"""

from __future__ import annotations

import logging

from kbroker import zk_admin
from kbroker.request_context import RequestContext
from kbroker.topic_names import GROUP_METADATA_TOPIC
from kbroker.zk_retry import ZkUnavailableError
from wire.error_codes import ErrorCode
from wire.java_hash import partition_for

log = logging.getLogger("kbroker.groups")

Answer = tuple[ErrorCode, str | None, int, str, int]  # code, message, node, host, port


def _unavailable(msg: str | None = None) -> Answer:
    return ErrorCode.COORDINATOR_NOT_AVAILABLE, msg, -1, "", -1


async def create_internal_topic(ctx: RequestContext, topic: str, what: str, prefix: str,
                                configs: dict[str, str]) -> str | None:
    """Create an internal topic (__consumer_offsets, __transaction_state) from
    ``<prefix>.num.partitions`` / ``<prefix>.replication.factor`` if enough brokers are alive
    (Kafka's AutoTopicCreationManager); Kafka's refusal message if not."""
    state = ctx.broker
    cluster = state.cluster
    assert cluster is not None
    cfg = state.config
    rf = cfg[f"{prefix}.replication.factor"]
    live = cluster.cache.live_brokers()
    if len(live) < rf:
        return (f"Number of alive brokers '{len(live)}' does not meet the required replication "
                f"factor '{rf}' for the {what} (configured via "
                f"'{prefix}.replication.factor'). This error can be ignored if the cluster is "
                "starting up and not all brokers are up yet.")
    assignment = zk_admin.assign(live, cfg[f"{prefix}.num.partitions"], rf)
    try:
        await zk_admin.create_topic(cluster.zk, topic, assignment, configs)
        log.info("created %s with %d partition(s), replication factor %d", topic, len(assignment), rf)
    except zk_admin.TopicExistsError:
        pass
    except ZkUnavailableError as e:   # COORDINATOR_NOT_AVAILABLE; the client asks again
        log.info("creating %s: %s", topic, e)
    return None


async def _create_offsets_topic(ctx: RequestContext) -> str | None:
    cfg = ctx.broker.config
    return await create_internal_topic(ctx, GROUP_METADATA_TOPIC, "offsets topic", "offsets.topic", {
        "cleanup.policy": "compact",
        "segment.bytes": str(cfg["offsets.topic.segment.bytes"]),
        "compression.type": "producer",
    })


async def group_coordinator(ctx: RequestContext, group_id: str) -> Answer:
    cluster = ctx.broker.cluster
    assert cluster is not None
    topic = cluster.cache.topic(GROUP_METADATA_TOPIC)
    if topic is None:
        refused = await _create_offsets_topic(ctx)
        return _unavailable(refused)
    partition = partition_for(group_id, len(topic.partitions))
    leader = cluster.cache.leader(GROUP_METADATA_TOPIC, partition)
    broker = cluster.cache.broker(leader) if leader >= 0 else None
    if broker is None or not broker.endpoints:
        return _unavailable()
    e = broker.endpoint(ctx.listener_name) or broker.endpoints[0]
    return ErrorCode.NONE, None, leader, e.host, e.port
