"""OffsetForLeaderEpoch (key 23), v2-4.

Every partition has had one leader epoch, 0, since its first offset, so the leader
epoch cache is {0: 0}: epoch 0 ends at the log end offset; a newer epoch or -1 gets
(-1, -1) with no error (Kafka's LeaderEpochFileCache.endOffsetFor).  librdkafka asks
exactly v2; Java validates positions with it only when the broker offers v3+.
"""

from __future__ import annotations

from kbroker.registry import REGISTRY
from kbroker.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

E = OffsetForLeaderEpochResponse.EpochEndOffset


@REGISTRY.register(23, 2, 4)
def handle_offset_for_leader_epoch(ctx: RequestContext, req: OffsetForLeaderEpochRequest
                                   ) -> OffsetForLeaderEpochResponse:
    state = ctx.broker
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            partition = state.partition(t.topic, p.partition)
            if partition is None:
                parts.append(E(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, p.partition, -1, -1))
                continue
            current = p.current_leader_epoch
            if current >= 0 and current != partition.leader_epoch:
                code = (ErrorCode.FENCED_LEADER_EPOCH if current < partition.leader_epoch
                        else ErrorCode.UNKNOWN_LEADER_EPOCH)
                parts.append(E(code, p.partition, -1, -1))
                continue
            if p.leader_epoch == partition.leader_epoch:
                parts.append(E(ErrorCode.NONE, p.partition, partition.leader_epoch,
                               partition.log_end_offset))
            elif 0 <= p.leader_epoch < partition.leader_epoch:
                parts.append(E(ErrorCode.NONE, p.partition, p.leader_epoch, partition.log_start_offset))
            else:
                parts.append(E(ErrorCode.NONE, p.partition, -1, -1))
        topics.append(OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(t.topic, parts))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)
