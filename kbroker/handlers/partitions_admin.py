"""CreatePartitions (key 37) v0-3 and DeleteRecords (key 21) v0-2.

CreatePartitions, per topic, with the messages of Kafka's controller
(ReplicationControlManager.createPartitions): a name listed twice INVALID_REQUEST; an
unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count below the current one "The topic T
currently has N partition(s); M would not be an increase." and an equal one "Topic already
has N partition(s)." (both INVALID_PARTITIONS); manual assignments must name one replica,
this broker, per new partition (INVALID_REPLICA_ASSIGNMENT).  ``validate_only`` changes
nothing.  New partitions start empty and take the topic's configs; their logs open on an
executor thread and they appear together when all are open (a second CreatePartitions
meanwhile counts them already); ``timeout_ms`` as CreateTopics' (topics_admin.py).

DeleteRecords, per partition (Kafka's ReplicaManager.deleteRecords): an unknown partition
UNKNOWN_TOPIC_OR_PARTITION; an internal topic INVALID_TOPIC_EXCEPTION; a topic without
cleanup.policy=delete POLICY_VIOLATION; offset -1 means the high watermark; an offset
above the high watermark or below 0 OFFSET_OUT_OF_RANGE.  The answer's low watermark is
the new log start offset (-1 on error).  Single node: nothing to wait for, timeout_ms is
not needed.  Cluster mode: only the partition's leader deletes; a partition the cluster has
but this broker does not lead is NOT_LEADER_OR_FOLLOWER (Kafka's
``Partition.deleteRecordsOnLeader``; clients send DeleteRecords to each leader).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable

from kbroker.handlers.topics_admin import wait_for_creations
from kbroker.registry import REGISTRY
from kbroker.request_context import RequestContext
from kbroker.topic_names import is_internal
from log.errors import LogError
from wire.error_codes import ErrorCode
from wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
)

TopicResult = CreatePartitionsResponse.CreatePartitionsTopicResult


@REGISTRY.register(37, 0, 3)
def handle_create_partitions(ctx: RequestContext, req: CreatePartitionsRequest
                             ) -> CreatePartitionsResponse | Awaitable[CreatePartitionsResponse]:
    state = ctx.broker
    if getattr(state, "cluster", None) is not None:   # cluster mode: the controller's znodes
        from kbroker.handlers.cluster_topics import create_partitions  # noqa: PLC0415 - cycle
        return create_partitions(ctx, req)  # type: ignore[return-value]
    names = Counter(t.name for t in req.topics)
    results = []
    growing = []
    for t in req.topics:
        code, message = _check(ctx, t, names[t.name] > 1)
        result = TopicResult(name=t.name, error_code=code, error_message=message)
        if code == ErrorCode.NONE and not req.validate_only:
            # the new partitions open on an executor thread (kbroker/topic_creation.py)
            task = state.creations.start_partitions(t.name, t.count)
            if task is not None:
                growing.append((result, task))
        results.append(result)
    response = CreatePartitionsResponse(throttle_time_ms=0, results=results)
    if not growing:
        return response

    async def answer_when_added() -> CreatePartitionsResponse:
        await wait_for_creations(growing, req.timeout_ms)
        return response

    return answer_when_added()


def _check(ctx: RequestContext, t: CreatePartitionsRequest.CreatePartitionsTopic,
           duplicate: bool) -> tuple[ErrorCode, str | None]:
    state = ctx.broker
    if duplicate:
        return ErrorCode.INVALID_REQUEST, "Duplicate topic name."
    info = state.topics.get(t.name)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    # an unfinished CreatePartitions has grown it already (Kafka's controller has the
    # partitions from the moment their records are written)
    current = max(info.partitions, state.creations.growing_to(t.name) or 0)
    if t.count < current:
        return (ErrorCode.INVALID_PARTITIONS,
                f"The topic {t.name} currently has {current} partition(s); {t.count} would not be an increase.")
    if t.count == current:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
    if t.assignments is not None:
        added = t.count - current
        if len(t.assignments) != added:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Attempted to add {added} additional partition(s), but only "
                    f"{len(t.assignments)} assignment(s) were specified.")
        for a in t.assignments:
            if len(a.broker_ids) != 1:
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"The manual partition assignment includes a partition with {len(a.broker_ids)} "
                        "replica(s), but this is not consistent with previous partitions, which have 1 replica(s).")
            if a.broker_ids[0] != state.node_id:
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"The manual partition assignment includes broker {a.broker_ids[0]}, but no such "
                        "broker is registered.")
    return ErrorCode.NONE, None


@REGISTRY.register(21, 0, 2)
def handle_delete_records(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    state = ctx.broker
    PartitionResult = DeleteRecordsResponse.DeleteRecordsPartitionResult
    cluster = getattr(state, "cluster", None)
    topics = []
    for t in req.topics:
        results = []
        for p in t.partitions:
            partition = state.partition(t.name, p.partition_index)
            not_leader = None if cluster is None else cluster.replicas.leader_error(t.name, p.partition_index)
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
