"""ListOffsets (key 2), v1-7.

Special timestamps: -1 latest (the high watermark; for isolation_level 1, read_committed,
the last stable offset: no offset of an open transaction is handed out), -2 earliest (log start offset),
-3 max timestamp (v7+, KIP-734: the offset of the record with the largest timestamp).
Any other timestamp: the first offset whose timestamp >= target, with that record's
timestamp; when there is none, offset -1 and timestamp -1 with no error (Spark reads -1
as "no match").  Unknown partitions UNKNOWN_TOPIC_OR_PARTITION; a partition listed twice
INVALID_REQUEST; current_leader_epoch (v4+) checked as Fetch does; -3 below v7
UNSUPPORTED_VERSION.

Cluster mode (Kafka's ``Partition.fetchOffsetForTimestamp``): only the leader answers.  For a
client, "latest" is OFFSET_NOT_AVAILABLE while the leader's HW is below the start offset of
its leader epoch (a new leader whose HW has not caught up yet, KIP-207: offsets a client sees
never go backwards across a failover), and a timestamp lookup only finds offsets below the
HW (below the LSO for read_committed, Kafka's ``lastFetchableOffset``).  A follower asking (``replica_id`` >= 0) gets the LEO for "latest", without those checks.

Ports (kbroker/server/services.py): ``catalog``, ``replicas``, ``authorizer``.
"""

from __future__ import annotations

from kbroker.handlers.authorize import authorize
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from log.errors import LogError
from log.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from wire.acl import DESCRIBE, TOPIC
from wire.error_codes import ErrorCode
from wire.messages import ListOffsetsRequest, ListOffsetsResponse

P = ListOffsetsResponse.ListOffsetsPartitionResponse


def _error(index: int, code: ErrorCode) -> P:
    return P(partition_index=index, error_code=code, timestamp=-1, offset=-1, leader_epoch=-1)


@REGISTRY.register(2, 1, 7)
def handle_list_offsets(ctx: RequestContext, req: ListOffsetsRequest) -> ListOffsetsResponse:
    services = ctx.services
    replicas = services.replicas
    v = ctx.api_version
    # a follower's own ListOffsets reads up to the LEO (the port says: a single node has no
    # followers, so a replica id there is treated as a consumer's, as before)
    from_follower = replicas.is_follower(req.replica_id)
    counts: dict[tuple[str, int], int] = {}
    for t in req.topics:
        for p in t.partitions:
            counts[(t.name, p.partition_index)] = counts.get((t.name, p.partition_index), 0) + 1
    topics = []
    for t in req.topics:
        parts = []
        may_describe = authorize(ctx, DESCRIBE, TOPIC, t.name)
        for p in t.partitions:
            if not may_describe:   # KafkaApis: Describe on the topic
                parts.append(_error(p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            if counts[(t.name, p.partition_index)] > 1:
                parts.append(_error(p.partition_index, ErrorCode.INVALID_REQUEST))
                continue
            not_leader = replicas.leader_error(t.name, p.partition_index)   # only the leader answers
            if not_leader is not None:
                parts.append(_error(p.partition_index, not_leader))
                continue
            partition = services.catalog.partition(t.name, p.partition_index)
            if partition is None:
                parts.append(_error(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            epoch = p.current_leader_epoch if v >= 4 else -1
            if epoch >= 0 and epoch != partition.leader_epoch:
                parts.append(_error(p.partition_index, ErrorCode.FENCED_LEADER_EPOCH
                                    if epoch < partition.leader_epoch else ErrorCode.UNKNOWN_LEADER_EPOCH))
                continue
            ts = p.timestamp
            rep = partition.replication
            if ts == LATEST_TIMESTAMP:
                if from_follower:
                    latest = partition.log_end_offset
                elif rep is not None and rep.leader_epoch_start_offset > partition.high_watermark:
                    parts.append(_error(p.partition_index, ErrorCode.OFFSET_NOT_AVAILABLE))
                    continue
                else:
                    latest = partition.last_stable_offset if req.isolation_level == 1 else partition.high_watermark
                parts.append(P(partition_index=p.partition_index, error_code=0, timestamp=-1, offset=latest,
                               leader_epoch=partition.leader_epoch))
                continue
            if ts == EARLIEST_TIMESTAMP:
                parts.append(P(partition_index=p.partition_index, error_code=0, timestamp=-1, offset=partition.log_start_offset,
                               leader_epoch=partition.leader_epoch))
                continue
            if ts == MAX_TIMESTAMP and v < 7:
                parts.append(_error(p.partition_index, ErrorCode.UNSUPPORTED_VERSION))
                continue
            if ts < 0 and ts != MAX_TIMESTAMP:
                parts.append(_error(p.partition_index, ErrorCode.UNSUPPORTED_VERSION))
                continue
            try:
                found = partition.fetch_offset_for_timestamp(ts)
            except LogError as e:
                parts.append(_error(p.partition_index, e.error))
                continue
            # Kafka's lastFetchableOffset: the LSO for read_committed, else the HW
            fetchable = (partition.log_end_offset if from_follower else partition.last_stable_offset
                         if req.isolation_level == 1 else partition.high_watermark)
            if found is None or found.offset < 0 or found.offset >= fetchable:
                parts.append(P(partition_index=p.partition_index, error_code=0, timestamp=-1, offset=-1, leader_epoch=-1))
            else:
                epoch_out = found.leader_epoch if found.leader_epoch is not None else partition.leader_epoch
                parts.append(P(partition_index=p.partition_index, error_code=0, timestamp=found.timestamp, offset=found.offset,
                               leader_epoch=epoch_out))
        topics.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)
