"""CreatePartitions (key 37) v0-3 and DeleteRecords (key 21) v0-2.

Ports (kbroker/server/services.py): ``topic_admin``, ``catalog``, ``replicas``.

CreatePartitions is answered whole by the broker's ``TopicAdmin``: a single node grows its
own topic with Kafka's controller's checks and messages, the new logs opening off the event
loop (kbroker/replica/local_topic_admin.py); in ZooKeeper mode the controller rewrites the topic
znode and the answer waits for the new partitions' leaders (kbroker/zk/zk_topic_admin.py).

DeleteRecords, per partition (Kafka's ReplicaManager.deleteRecords): an unknown partition
UNKNOWN_TOPIC_OR_PARTITION; an internal topic INVALID_TOPIC_EXCEPTION; a topic without
cleanup.policy=delete POLICY_VIOLATION; offset -1 means the high watermark; an offset
above the high watermark or below 0 OFFSET_OUT_OF_RANGE.  The answer's low watermark is
the new log start offset (-1 on error).  Single node: nothing to wait for, timeout_ms is
not needed.  Cluster mode: only the partition's leader deletes; a partition the cluster has
but this broker does not lead is NOT_LEADER_OR_FOLLOWER (Kafka's
``Partition.deleteRecordsOnLeader``; clients send DeleteRecords to each leader); a single
node leads every partition it has (``replicas.leader_error`` is None).
"""

from __future__ import annotations

from collections.abc import Awaitable

from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from log.errors import LogError
from wire.error_codes import ErrorCode
from wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
)
from wire.topic_names import is_internal


@REGISTRY.register(37, 0, 3)
def handle_create_partitions(ctx: RequestContext, req: CreatePartitionsRequest
                             ) -> CreatePartitionsResponse | Awaitable[CreatePartitionsResponse]:
    return ctx.services.topic_admin.create_partitions(req)


@REGISTRY.register(21, 0, 2)
def handle_delete_records(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    catalog, replicas = ctx.services.catalog, ctx.services.replicas
    PartitionResult = DeleteRecordsResponse.DeleteRecordsPartitionResult
    topics = []
    for t in req.topics:
        results = []
        for p in t.partitions:
            partition = catalog.partition(t.name, p.partition_index)
            not_leader = replicas.leader_error(t.name, p.partition_index)
            low, code = -1, ErrorCode.NONE
            if partition is None and not_leader != ErrorCode.NOT_LEADER_OR_FOLLOWER:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif is_internal(t.name):
                code = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif not_leader is not None:
                code = not_leader
            else:
                assert partition is not None
                try:
                    low = partition.delete_records_before(p.offset)
                except LogError as e:
                    code = e.error
            results.append(PartitionResult(partition_index=p.partition_index, low_watermark=low, error_code=code))
        topics.append(DeleteRecordsResponse.DeleteRecordsTopicResult(name=t.name, partitions=results))
    return DeleteRecordsResponse(throttle_time_ms=0, topics=topics)
