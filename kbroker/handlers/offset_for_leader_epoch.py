"""OffsetForLeaderEpoch (key 23), v2-4.

Answered from the partition's leader epoch cache (``leader-epoch-checkpoint``), as Kafka's
``Partition.lastOffsetForLeaderEpoch``: a current_leader_epoch older than the partition's
FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH; else ``Log.end_offset_for_epoch``: the
latest epoch ends at the log end offset, an older one at the start of the next epoch in the
cache (with the largest cached epoch <= the requested one), an epoch older than the cache at
the first entry's start offset, and -1 or an epoch newer than any gets (-1, -1) with no error
(LeaderEpochFileCache.endOffsetFor).  librdkafka asks exactly v2; Java validates positions
with it only when the broker offers v3+.

Cluster mode: only the leader answers (Kafka's ``lastOffsetForLeaderEpoch`` with
``fetchOnlyFromLeader``): a partition this broker does not hold but the cluster has is
NOT_LEADER_OR_FOLLOWER; one it holds as a follower is checked against the current leader
epoch first (FENCED / UNKNOWN_LEADER_EPOCH), then NOT_LEADER_OR_FOLLOWER.

Ports (kbroker/server/services.py): ``catalog``, ``replicas``.
"""

from __future__ import annotations

from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

E = OffsetForLeaderEpochResponse.EpochEndOffset


@REGISTRY.register(23, 2, 4)
def handle_offset_for_leader_epoch(ctx: RequestContext, req: OffsetForLeaderEpochRequest
                                   ) -> OffsetForLeaderEpochResponse:
    partition_of = ctx.services.catalog.partition
    leader_error = ctx.services.replicas.leader_error   # None on a single node
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            partition = partition_of(t.topic, p.partition)
            not_leader = leader_error(t.topic, p.partition)
            if partition is None:
                parts.append(E(error_code=not_leader or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partition=p.partition, leader_epoch=-1, end_offset=-1))
                continue
            current = p.current_leader_epoch
            if current >= 0 and current != partition.leader_epoch:
                code = (ErrorCode.FENCED_LEADER_EPOCH if current < partition.leader_epoch
                        else ErrorCode.UNKNOWN_LEADER_EPOCH)
                parts.append(E(error_code=code, partition=p.partition, leader_epoch=-1, end_offset=-1))
                continue
            if not_leader is not None:
                parts.append(E(error_code=not_leader, partition=p.partition, leader_epoch=-1, end_offset=-1))
                continue
            found = partition.end_offset_for_epoch(p.leader_epoch)
            epoch, end = found if found is not None else (-1, -1)
            parts.append(E(error_code=ErrorCode.NONE, partition=p.partition, leader_epoch=epoch, end_offset=end))
        topics.append(OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)
