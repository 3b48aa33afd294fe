"""Fetch (key 1), v4-17, with KIP-227 fetch sessions.

* Topic ids (v13+, KIP-516): a request names each topic by id; each is resolved once per
  topic to its name (kbroker/replica/topic_ids.py, a dict look-up) before anything is read.  An
  id this broker does not know answers UNKNOWN_TOPIC_ID for each of its partitions; a
  partition whose log holds another id INCONSISTENT_TOPIC_ID (Kafka's readFromLog check).
  The answer names topics by id.  v15 carries the replica id in ``replica_state``
  (KIP-903); v16 adds nothing used here (KIP-951's leader hints are optional tags); v17's
  replica directory id (KIP-853) is ignored.

* Fetch sessions (KIP-227, kbroker/replica/fetch_session.py and fetch_session_reads.py, as Kafka's
  FetchManager): (0, -1) sessionless; (0, 0) a full fetch whose answer carries a new
  session id (0 when the cache has no room); (id, n > 0) incremental: the session's
  partitions are read (only those whose offsets may have moved) and answered only where
  Kafka's maybeUpdateResponseData says (records, an error, a new HW or log start offset, a
  preferred replica, a diverging epoch); FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
  and FETCH_SESSION_TOPIC_ID_ERROR as Kafka.  A throttled answer keeps its session id and
  data (KIP-219 throttle_time_ms; kbroker does not empty it, so KAFKA-6946 cannot arise).
* Every requested partition is in a full answer (Java drops a full response that omits
  one), with errors per partition: UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE (below
  the log start offset or above the log end offset; from the high watermark to the LEO the
  answer is no records, as Kafka's LocalLog.read), FENCED_LEADER_EPOCH /
  UNKNOWN_LEADER_EPOCH for a stale or future current_leader_epoch (v9+).
* Data: whole stored batches from the one containing the fetch offset, sent as stored.
  Limits follow ReplicaManager.readFromLocalLog (KIP-74): the request budget is
  min(max_bytes, fetch.max.bytes = 55 MiB); each partition reads at most
  min(partition_max_bytes, what is left of the budget); until a partition has returned
  data, the first batch is returned whole even past both limits (so the first non-empty
  partition always makes progress); after it, a partition whose first batch does not fit
  returns no records (Kafka replaces its incomplete batch with nothing, v3+).  Where
  Kafka would add the first bytes of a batch cut by the limit (clients drop that partial
  tail), kbroker stops at the last whole batch, and only whole batches count against the
  budget.  A negative limit on a partition with data is UNKNOWN_SERVER_ERROR for that
  partition (Kafka's LogSegment.read refuses a negative size); min_bytes is capped at the
  budget, as Kafka caps it.  No data is an empty (not null) records field: librdkafka
  rejects null.
* Waiting (Kafka's DelayedFetch): fewer than min_bytes found, the Fetch parks until an
  append to one of its partitions, its max_wait_ms, or a later request read on the same
  connection (kbroker/replica/fetch_waiters.py), whichever comes first; it then answers what there
  is.  The last one is kbroker's: Kafka reads nothing more from a connection while its
  Fetch is parked, so answers leave in the same order; kbroker reads on, and a pipelined
  request (a starting consumer's ListOffsets) would otherwise wait out max_wait_ms.
* Transactions: last_stable_offset is the partition's LSO (min(first unstable offset,
  HW)); isolation_level 1 (read_committed) reads stop at the LSO and carry
  aborted_transactions (producer id, first offset) for the range read, from the
  ``.txnindex`` files (Kafka's collectAbortedTransactions; empty, not null, when none);
  read_uncommitted: null.  Follower fetches read to the LEO, with no aborted list.
  preferred_read_replica -1.
* Fetch from follower (KIP-392, cluster mode).  A consumer fetch v11+ carries client
  metadata (Kafka: ``fetchOnlyFromLeader = isFromFollower || (isFromConsumer &&
  clientMetadata.isEmpty)``):
  - sent to a follower of the partition, it is served from the follower's log up to the
    follower's HW, with the same leader-epoch checks against the epoch the follower knows;
    an offset above the LEO is OFFSET_OUT_OF_RANGE (the consumer then asks the leader with
    ListOffsets, which stays leader-only).  v4-10 consumer fetches to a follower stay
    NOT_LEADER_OR_FOLLOWER.  A follower never names a preferred replica.
  - sent to the leader with a non-empty ``rack_id`` and ``replica.selector.class`` set, the
    leader asks kbroker/replica/replica_selector.py (findPreferredReadReplica +
    RackAwareReplicaSelector); when that names a follower the partition answers no records,
    ``preferred_read_replica`` = that broker and the leader's HW / LSO / log start offset
    (after the epoch checks), and the request answers at once (Kafka's fetchMessages
    completes on a preferred read replica).
* Replica fetches (cluster mode, ``replica_id`` >= 0; Kafka's ``Partition.fetchRecords`` for
  a follower): only the leader answers (else NOT_LEADER_OR_FOLLOWER), and only to a replica of
  the partition's assignment (else NOT_LEADER_OR_FOLLOWER).  With ``last_fetched_epoch``
  (v12) the fetch is first checked against the leader epoch cache
  (``validateFetchOffsetAndMaybeGetDivergingEpoch``): an epoch the cache cannot place, or a
  fetch offset below the log start, is OFFSET_OUT_OF_RANGE; when our end offset for that
  epoch is below the fetch offset or our epoch found is older, the answer is no records and
  ``diverging_epoch`` = (epoch, end offset) for the follower to truncate to.  Otherwise the
  read goes up to the LEO (not the HW), then the follower's state is updated with the fetch
  offset as its LEO and the leader's LEO before the read (so appends meanwhile do not keep
  it out of sync), the ISR may expand, the HW may move (completing parked acks=all
  produces and waking consumer fetches).  The answer carries the HW after that update (Kafka
  sends the one before; a follower takes min(HW, its LEO) either way, one round-trip sooner
  here).
* Waiting: with fewer than min_bytes and max_wait_ms > 0 the request parks until an
  append to one of its partitions or the timeout (kbroker/replica/fetch_waiters.py); only this
  connection's later responses wait behind it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kbroker.handlers import fetch_session_reads
from kbroker.handlers.authorize import authorize, authorize_cluster
from kbroker.handlers.fetch_session_reads import IncrementalFetch, PlainFetch
from kbroker.metrics.counters import TOPIC_STATS
from kbroker.replica.partition import Partition
from kbroker.replica.replica_selector import NO_PREFERRED_REPLICA, preferred_read_replica
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from log.errors import LogError
from wire.acl import CLUSTER_ACTION, READ, TOPIC
from wire.error_codes import ErrorCode
from wire.messages import FetchRequest, FetchResponse

log = logging.getLogger("kbroker.fetch")

PartitionData = FetchResponse.PartitionData
TopicResponse = FetchResponse.FetchableTopicResponse
# Kafka's broker config fetch.max.bytes (default 55 MiB): the cap on a request's max_bytes.
FETCH_MAX_BYTES = 57_671_680
# The tagged fields' defaults (no diverging epoch, no leader hint, no snapshot), one shared
# instance each: PartitionData would otherwise build three objects per partition of every
# answer (a wide fetch answers every named partition, most with no data).  Never mutated:
# an answer that carries one of these fields gets an object of its own.
_NO_DIVERGING_EPOCH = FetchResponse.EpochEndOffset()
_NO_CURRENT_LEADER = FetchResponse.LeaderIdAndEpoch()
_NO_SNAPSHOT_ID = FetchResponse.SnapshotId()


def _budget(req: FetchRequest) -> int:
    """The request's byte budget, as KafkaApis.handleFetchRequest computes it (may be < 0)."""
    return min(req.max_bytes, FETCH_MAX_BYTES)


def _partition_error(index: int, code: ErrorCode) -> PartitionData:
    return PartitionData(partition_index=index, error_code=code, high_watermark=-1,
                         last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                         records=b"")


def _epoch_error(partition: Partition, fp: FetchRequest.FetchPartition, version: int) -> PartitionData | None:
    """FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a current_leader_epoch (v9+) older /
    newer than the one this broker knows, leader or follower (Partition.localLogWithEpochOrThrow)."""
    epoch = fp.current_leader_epoch if version >= 9 else -1
    if epoch >= 0 and epoch != partition.leader_epoch:
        return _partition_error(fp.partition, ErrorCode.FENCED_LEADER_EPOCH if epoch < partition.leader_epoch
                                else ErrorCode.UNKNOWN_LEADER_EPOCH)
    return None


def _preferred_replica_answer(ctx: RequestContext, req: FetchRequest, partition: Partition,
                              fp: FetchRequest.FetchPartition) -> PartitionData | None:
    """On the leader: the answer naming a preferred read replica (KIP-392), or None when the
    leader serves the fetch itself (no selector, no client rack, or the selector chose it)."""
    rep = partition.replication
    if rep is None:   # no followers: the leader serves
        return None
    racks = {b.node_id: b.rack for b in ctx.services.metadata.view().brokers()}   # the live brokers

    def rack_of(broker_id: int) -> tuple[bool, str | None]:
        return (broker_id in racks, racks.get(broker_id))
    chosen = preferred_read_replica(rep, partition.log_end_offset, fp.fetch_offset, req.rack_id, rack_of,
                                    partition.now_ms())
    if chosen == NO_PREFERRED_REPLICA:
        return None
    log.debug("replica selector chose broker %d for a fetch of %s-%d at offset %d from rack %s",
              chosen, partition.topic, partition.index, fp.fetch_offset, req.rack_id)
    return PartitionData(
        partition_index=fp.partition, error_code=ErrorCode.NONE, high_watermark=partition.high_watermark,
        last_stable_offset=partition.last_stable_offset, log_start_offset=partition.log_start_offset,
        aborted_transactions=[] if req.isolation_level == 1 else None, preferred_read_replica=chosen, records=b"")


def _read_partition(partition: Partition, fp: FetchRequest.FetchPartition, version: int,
                    limit: int, min_one_message: bool, read_committed: bool) -> PartitionData:
    """One partition's answer (ReplicaManager.read): at most ``limit`` bytes of whole
    batches, the first one whole if ``min_one_message``."""
    if fp.current_leader_epoch != partition.leader_epoch:   # (the usual case skips the call)
        fenced = _epoch_error(partition, fp, version)
        if fenced is not None:
            return fenced
    try:
        if limit < 0:
            # the offset checks come first (out of range; at the high watermark: no data)
            result = partition.read(fp.fetch_offset, 0, False, read_committed)
            if fp.fetch_offset < result.high_watermark:
                return _partition_error(fp.partition, ErrorCode.UNKNOWN_SERVER_ERROR)
        else:
            result = partition.read(fp.fetch_offset, limit, min_one_message, read_committed, for_sending=True)
    except LogError as e:
        pd = _partition_error(fp.partition, e.error)
        pd.high_watermark = partition.high_watermark
        pd.last_stable_offset = partition.last_stable_offset
        pd.log_start_offset = partition.log_start_offset
        return pd
    aborted = result.aborted_transactions
    if aborted:
        aborted = [FetchResponse.AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
                   for t in aborted]
    elif aborted is not None:
        aborted = []   # a list of its own per answer (read_committed, nothing aborted)
    return PartitionData(
        partition_index=fp.partition, error_code=ErrorCode.NONE, high_watermark=result.high_watermark, last_stable_offset=result.last_stable_offset, log_start_offset=result.log_start_offset,
        diverging_epoch=_NO_DIVERGING_EPOCH, current_leader=_NO_CURRENT_LEADER, snapshot_id=_NO_SNAPSHOT_ID, aborted_transactions=aborted, preferred_read_replica=-1,
        records=result.records if limit >= 0 else b"")


def _read_replica_partition(partition: Partition, fp: FetchRequest.FetchPartition, version: int, limit: int,
                            min_one_message: bool, replica_id: int) -> PartitionData:
    """A follower's fetch of one partition this broker leads (see the module docstring)."""
    fenced = _epoch_error(partition, fp, version)
    if fenced is not None:
        return fenced
    last_fetched = fp.last_fetched_epoch if version >= 12 else -1
    if last_fetched >= 0:
        found = partition.end_offset_for_epoch(last_fetched)
        if found is None or fp.fetch_offset < partition.log_start_offset:
            pd = _partition_error(fp.partition, ErrorCode.OFFSET_OUT_OF_RANGE)
            pd.high_watermark, pd.log_start_offset = partition.high_watermark, partition.log_start_offset
            pd.last_stable_offset = partition.high_watermark
            return pd
        found_epoch, end_offset = found
        if found_epoch < last_fetched or end_offset < fp.fetch_offset:
            return PartitionData(
                partition_index=fp.partition, error_code=ErrorCode.NONE, high_watermark=partition.high_watermark,
                last_stable_offset=partition.high_watermark, log_start_offset=partition.log_start_offset,
                diverging_epoch=FetchResponse.EpochEndOffset(epoch=found_epoch, end_offset=end_offset),
                aborted_transactions=None, preferred_read_replica=-1, records=b"")
    leader_end = partition.log_end_offset
    try:
        result = partition.read(fp.fetch_offset, max(limit, 0), min_one_message, to_log_end=True, for_sending=True)
    except LogError as e:
        pd = _partition_error(fp.partition, e.error)
        pd.high_watermark, pd.log_start_offset = partition.high_watermark, partition.log_start_offset
        pd.last_stable_offset = partition.high_watermark
        return pd
    if not partition.update_follower_fetch_state(replica_id, fp.fetch_offset, fp.log_start_offset, leader_end):
        return _partition_error(fp.partition, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    hw = partition.high_watermark
    return PartitionData(
        partition_index=fp.partition, error_code=ErrorCode.NONE, high_watermark=hw, last_stable_offset=hw,
        log_start_offset=partition.log_start_offset, aborted_transactions=None, preferred_read_replica=-1,
        records=result.records)


def _read_all(ctx: RequestContext, req: FetchRequest) -> tuple[FetchResponse, int, bool]:
    """One pass over the requested partitions (ReplicaManager.readFromLocalLog):
    (response, bytes of records, any error)."""
    services = ctx.services
    replicas = services.replicas
    leader_error, follower_partition = replicas.leader_error, replicas.follower_partition
    read_committed = req.isolation_level == 1
    budget = _budget(req)   # what is left of it: Kafka's limitBytes
    total = 0               # record bytes in the response (min_bytes counts these)
    errors = False
    topics = []
    version = ctx.api_version
    replica_id = req.replica_id if version < 15 else req.replica_state.replica_id
    # a follower's fetch (the port says: a single node has no followers and reads a replica
    # id as a consumer's)
    from_follower = replicas.is_follower(replica_id)
    # KIP-392 on the leader: a consumer v11+ naming its rack may be sent to a preferred read
    # replica (replica.selector.class); its current_leader_epoch is checked first
    select_replica = (not from_follower and version >= 11 and bool(req.rack_id)
                      and services.config.config["replica.selector.class"] is not None)
    by_id = version >= 13
    partition_of = services.catalog.partition
    # A wide fetch names thousands of partitions (librdkafka names every assigned one in every
    # Fetch, most with nothing new): the loop below runs per partition, so what does not depend
    # on the partition is decided per request or per topic.
    for topic in req.topics:
        name = topic.topic
        # KafkaApis: a follower needs ClusterAction on the cluster, a consumer Read on the topic
        unknown_id = by_id and not name   # v13+: an id name_for_id did not know
        may_read = unknown_id or (authorize_cluster(ctx, CLUSTER_ACTION) if from_follower
                                  else authorize(ctx, READ, TOPIC, name))
        if not may_read or unknown_id:
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED if not may_read else ErrorCode.UNKNOWN_TOPIC_ID
            parts = [_partition_error(fp.partition, code) for fp in topic.partitions]
            errors = errors or bool(parts)
            topics.append(TopicResponse(topic=name, topic_id=topic.topic_id, partitions=parts))
            continue
        parts = []
        topic_id = topic.topic_id
        for fp in topic.partitions:
            as_follower = False   # a consumer fetch served by this follower (KIP-392)
            # the leader serves; a follower too for consumer fetches v11+ (a single node leads all)
            not_leader = leader_error(name, fp.partition)
            if not_leader is not None:
                if (not_leader == ErrorCode.NOT_LEADER_OR_FOLLOWER and not from_follower and version >= 11
                        and follower_partition(name, fp.partition) is not None):
                    as_follower = True
                else:
                    parts.append(_partition_error(fp.partition, not_leader))
                    errors = True
                    continue
            partition = partition_of(name, fp.partition)
            if partition is None:   # Kafka sets these aside before reading: no effect on the budget
                parts.append(_partition_error(fp.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                errors = True
                continue
            if by_id and (log_id := partition.topic_id) is not None and log_id != topic_id:
                parts.append(_partition_error(fp.partition, ErrorCode.INCONSISTENT_TOPIC_ID))
                errors = True
                continue
            if select_replica and not as_follower:
                preferred = _epoch_error(partition, fp, version) or _preferred_replica_answer(ctx, req, partition, fp)
                if preferred is not None:   # an epoch error or a preferred replica: answer at once
                    parts.append(preferred)
                    errors = True
                    continue
            if from_follower:
                pd = _read_replica_partition(partition, fp, version, min(fp.partition_max_bytes, budget),
                                             total == 0, replica_id)
                # a DivergingEpoch answers at once too (Kafka's DelayedFetch completes on it)
                errors = errors or pd.diverging_epoch.epoch >= 0
            else:
                pd = _read_partition(partition, fp, version, min(fp.partition_max_bytes, budget),
                                     total == 0, read_committed)
                if as_follower and pd.records:
                    log.debug("follower %d served a consumer fetch of %s-%d at offset %d (%d bytes, HW %d)",
                              services.node_id, name, fp.partition, fp.fetch_offset, len(pd.records),
                              pd.high_watermark)
            size = len(pd.records)
            total += size
            budget = max(0, budget - size)   # (a negative budget becomes 0 after the first partition)
            if pd.error_code:
                errors = True
            parts.append(pd)
        topics.append(TopicResponse(topic=name, topic_id=topic_id, partitions=parts))
    return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=topics), total, errors


def _counted(ctx: RequestContext, req: FetchRequest, resp: FetchResponse) -> FetchResponse:
    """The response that goes out adds its record bytes to BytesOut (consumers) or
    ReplicationBytesOut (followers) of each topic (kbroker/metrics/counters.py)."""
    by_follower = (req.replica_id if ctx.api_version < 15 else req.replica_state.replica_id) >= 0
    for topic in resp.responses:
        size = 0
        for pd in topic.partitions:
            size += len(pd.records) if pd.records is not None else 0
        if size:
            TOPIC_STATS.fetched(topic.topic, size, by_follower)
    return resp


def _min_bytes(req: FetchRequest) -> int:
    """min_bytes capped at the budget (KafkaApis: fetchMinBytes = min(minBytes, fetchMaxBytes))."""
    return min(req.min_bytes, _budget(req))


async def _wait_then_read(ctx: RequestContext, req: FetchRequest, deadline: float,
                          session: PlainFetch | IncrementalFetch) -> FetchResponse:
    tps = session.wait_partitions()
    # A request read after this one on the connection ends the wait: its answer leaves
    # after this one, and a client that pipelines (librdkafka's 10,000 ListOffsets of a
    # consumer starting, behind Fetches of the partitions it already knows) would get each
    # held for max_wait_ms.  Kafka reads nothing more from a connection while its Fetch is
    # parked; answering before max_wait (with what there is) is what a Fetch may always do.
    later = ctx.request_after() if ctx.request_after is not None else None
    while True:
        await ctx.services.fetch_waiters.wait(tps, deadline - time.monotonic(), later)
        resp, total, errors = _read_all(ctx, session.read_request())
        if total >= _min_bytes(req) or errors or time.monotonic() >= deadline or (
                later is not None and later.done()):
            return _counted(ctx, req, session.answer(resp))


@REGISTRY.register(1, 4, 17)
def handle_fetch(ctx: RequestContext, req: FetchRequest) -> Any:
    if ctx.api_version >= 13:
        # each topic's name, once per request (the reads, waits and metrics go by name);
        # "" for an unknown id: UNKNOWN_TOPIC_ID for its partitions
        name_for_id = ctx.services.metadata.name_for_id
        for topic in req.topics:
            topic.topic = name_for_id(topic.topic_id) or ""
    # KIP-227 (kbroker/handlers/fetch_session_reads.py): what to read, and what of it to answer
    session = fetch_session_reads.begin(ctx, req)
    if type(session) is FetchResponse:   # a session error
        return session
    resp, total, errors = _read_all(ctx, session.read_request())
    if total >= _min_bytes(req) or errors or req.max_wait_ms <= 0 or session.empty:
        return _counted(ctx, req, session.answer(resp))
    ctx.took_effect()   # a parked Fetch changes nothing more: later requests go on (kbroker/server/connection.py)
    return _wait_then_read(ctx, req, time.monotonic() + req.max_wait_ms / 1000.0, session)
