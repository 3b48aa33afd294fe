"""DescribeProducers (61) v0: the active producers of partitions, from each partition's
producer state (log/producer_state.py), as Kafka's ``KafkaApis.handleDescribeProducersRequest``,
``ReplicaManager.activeProducerState`` and ``UnifiedLog.activeProducers``.

Per topic: an illegal name is INVALID_TOPIC_EXCEPTION (with Kafka's message); with an
authorizer, no Read on the topic is TOPIC_AUTHORIZATION_FAILED; a topic the broker does not
know is UNKNOWN_TOPIC_OR_PARTITION.  Per partition: one this broker does not host is
NOT_LEADER_OR_FOLLOWER when the cluster has it, else UNKNOWN_TOPIC_OR_PARTITION; a hosted
one (leader or follower: Kafka answers from any local log) lists every producer id in its
state: epoch, last sequence, last batch's max timestamp, the coordinator epoch of its last
marker and the first offset of its open transaction (-1: none), in producer id order
(Kafka's map order is not defined; the admin client does not depend on it).

Ports (kbroker/server/services.py): ``metadata`` (which topics and partitions the cluster has),
``catalog`` (the partitions hosted here), ``authorizer``.
"""

from __future__ import annotations

from kbroker.handlers.authorize import authorize
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.acl import READ, TOPIC
from wire.error_codes import ErrorCode
from wire.messages import DescribeProducersRequest, DescribeProducersResponse
from wire.topic_names import invalid_reason

E = ErrorCode
TopicResponse = DescribeProducersResponse.TopicResponse
PartitionResponse = DescribeProducersResponse.PartitionResponse


@REGISTRY.register(61, 0, 0)
def handle_describe_producers(ctx: RequestContext, req: DescribeProducersRequest
                              ) -> DescribeProducersResponse:
    catalog = ctx.services.catalog
    metadata = ctx.services.metadata.view()   # a partition hosted elsewhere is still known
    topics = []
    for t in req.topics:
        error: tuple[ErrorCode, str | None] | None = None
        if (why := invalid_reason(t.name)) is not None:
            error = (E.INVALID_TOPIC_EXCEPTION, why)
        elif not authorize(ctx, READ, TOPIC, t.name):
            error = (E.TOPIC_AUTHORIZATION_FAILED, None)
        elif not metadata.has_topic(t.name):
            error = (E.UNKNOWN_TOPIC_OR_PARTITION, None)
        partitions = []
        for index in t.partition_indexes:
            if error is not None:
                partitions.append(PartitionResponse(partition_index=index, error_code=int(error[0]),
                                                    error_message=error[1]))
                continue
            partition = catalog.partition(t.name, index)
            if partition is None:
                code = E.NOT_LEADER_OR_FOLLOWER if metadata.has_partition(t.name, index) \
                    else E.UNKNOWN_TOPIC_OR_PARTITION
                partitions.append(PartitionResponse(partition_index=index, error_code=int(code)))
                continue
            partitions.append(PartitionResponse(partition_index=index, error_code=0,
                                                active_producers=partition.active_producers()))
        topics.append(TopicResponse(name=t.name, partitions=partitions))
    return DescribeProducersResponse(throttle_time_ms=0, topics=topics)
