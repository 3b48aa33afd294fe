"""DescribeTopicPartitions (key 75, KIP-966), v0, as Kafka 3.9's
``DescribeTopicPartitionsRequestHandler`` with ``KRaftMetadataCache
.getTopicMetadataForDescribeTopicResponse`` answers it, over the same ``MetadataView`` as
Metadata (kbroker/metadata/metadata_view.py).

Ports (kbroker/server/services.py): ``metadata``.

Why both modes serve it: in Kafka only KRaft brokers do (the schema's listeners are
``["broker"]``; a ZooKeeper-mode KafkaApis throws INVALID_REQUEST and does not advertise
it).  The Java AdminClient (3.8+) ``describeTopics`` uses it when ApiVersions lists it and
falls back to Metadata on UnsupportedVersionException, so either choice works for it; we
serve it in both modes so that paging (``ResponsePartitionLimit``/``Cursor``) and the
per-partition ``offline_replicas`` (which the Metadata-based path of the client drops) are
available, answering what a KRaft broker answers for the same partition state.

* Topics: an empty list means every topic (the array is not nullable); otherwise the
  requested names, each once.  Either way only names >= the cursor's topic name (Java's
  ``String.compareTo``; names are ASCII, so Python's order is the same), sorted.  A named
  list must contain the cursor's topic, else the whole request fails with INVALID_REQUEST
  (every requested topic answers it: ``DescribeTopicPartitionsRequest.getErrorResponse``).
* Paging: at most min(``max.request.partition.size.limit`` (2000, not configurable here),
  ``ResponsePartitionLimit``) partitions per response.  The cursor's topic starts at the
  cursor's partition index, every later topic at 0.  A topic cut short ends the answer
  with ``NextCursor`` = (that topic, first partition left out); a budget used up exactly
  at a topic boundary gives ``NextCursor`` = (next topic, 0), even if that topic does not
  exist; nothing left: ``NextCursor`` null.  A limit of 0 answers no topic and
  ``NextCursor`` = (first topic, 0); a negative limit answers nothing (as Kafka).
* Unknown topics: listing all topics skips them (``ignoreTopicsWithExceptions``); a named
  one answers UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for an illegal name,
  with a zero topic id, is_internal by name and no partitions.
* Per partition: error always NONE (a missing leader shows as leader -1, unlike Metadata's
  LEADER_NOT_AVAILABLE), leader, leader epoch, replicas and ISR unfiltered, offline
  replicas.  ``eligible_leader_replicas`` and ``last_known_elr`` are empty lists: ELR is
  KRaft's with ``eligible.leader.replicas.version`` enabled, and a KRaft broker without it
  sends its partitions' empty ELR arrays (``Replicas.toList`` of an empty array), not null.
* ``topic_authorized_operations``: Kafka sets it for every topic in the answer (no
  "include" flag in this request); without an authorizer that is every topic operation.
"""

from __future__ import annotations

from kbroker.handlers.metadata import TOPIC_OPERATIONS
from kbroker.handlers.metadata_readiness import held_until_metadata_known
from kbroker.metadata.metadata_view import MetadataView, TopicView
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import ZERO_UUID, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse
from wire.topic_names import invalid_reason, is_internal

# Kafka's max.request.partition.size.limit default (ServerConfigs): the cap on
# ResponsePartitionLimit, whatever the request asks.
MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000

R = DescribeTopicPartitionsResponse
RT = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
RP = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponsePartition


def _partitions(topic: TopicView, start: int, max_count: int) -> tuple[list[RP], int]:
    """Partitions [start, start + max_count) of ``topic`` and the first index left out (-1:
    none), as ``getPartitionMetadataForDescribeTopicResponse`` (indexes are 0..n-1)."""
    by_index = {p.index: p for p in topic.partitions}
    count = len(by_index)
    upper = min(count, start + max_count)
    out = [RP(error_code=0, partition_index=p.index, leader_id=p.leader, leader_epoch=p.leader_epoch,
              replica_nodes=list(p.replicas), isr_nodes=list(p.isr), eligible_leader_replicas=[],
              last_known_elr=[], offline_replicas=list(p.offline_replicas))
           for i in range(start, upper) if (p := by_index.get(i)) is not None]  # Kafka skips a missing one
    return out, (upper if upper < count else -1)


def describe_topic_partitions(view: MetadataView, req: DescribeTopicPartitionsRequest,
                              max_partitions: int = MAX_REQUEST_PARTITION_SIZE_LIMIT) -> R:
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not req.topics
    candidates = view.topic_names() if fetch_all else [t.name for t in req.topics]
    names = sorted({n for n in candidates if n >= cursor_topic})
    if not fetch_all and cursor is not None and cursor.topic_name not in names:
        return R(throttle_time_ms=0, topics=[
            RT(error_code=ErrorCode.INVALID_REQUEST, name=t.name, topic_id=ZERO_UUID, is_internal=False,
               partitions=[]) for t in req.topics], next_cursor=None)

    remaining = min(max_partitions, req.response_partition_limit)
    topics: list[RT] = []
    next_cursor = None
    for name in names:
        if remaining > 0:
            topic = view.topic(name)
            if topic is not None:
                start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
                partitions, next_index = _partitions(topic, start, remaining)
                topics.append(RT(error_code=0, name=name, topic_id=topic.topic_id,
                                 is_internal=topic.is_internal, partitions=partitions,
                                 topic_authorized_operations=TOPIC_OPERATIONS))
                if next_index != -1:
                    next_cursor = R.Cursor(topic_name=name, partition_index=next_index)
                    break
                remaining -= len(partitions)
            elif not fetch_all:
                code = ErrorCode.INVALID_TOPIC_EXCEPTION if invalid_reason(name) is not None \
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topics.append(RT(error_code=code, name=name, topic_id=ZERO_UUID,
                                 is_internal=is_internal(name), partitions=[],
                                 topic_authorized_operations=TOPIC_OPERATIONS))
        elif remaining == 0:
            # the previous topics are complete: the next page starts at this one
            next_cursor = R.Cursor(topic_name=name, partition_index=0)
            break
    return R(throttle_time_ms=0, topics=topics, next_cursor=next_cursor)


@REGISTRY.register(75, 0, 0)
@held_until_metadata_known
def handle_describe_topic_partitions(ctx: RequestContext, req: DescribeTopicPartitionsRequest) -> R:
    return describe_topic_partitions(ctx.services.metadata.view(), req)
