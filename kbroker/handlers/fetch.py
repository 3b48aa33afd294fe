"""Fetch (key 1), v4-12, sessionless.

* Fetch sessions (KIP-227) are declined: every answer carries session_id 0, so Java and
  kafka-python keep sending full fetches.  A request naming a session we never granted
  gets FETCH_SESSION_ID_NOT_FOUND; session 0 with an epoch other than 0 (initial) or -1
  (sessionless) gets INVALID_FETCH_SESSION_EPOCH.
* Every requested partition is in the answer (Java drops a full response that omits
  one), with errors per partition: UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE (below
  the log start offset or above the high watermark), FENCED_LEADER_EPOCH /
  UNKNOWN_LEADER_EPOCH for a stale or future current_leader_epoch (v9+).
* Data: whole stored batches from the one containing the fetch offset, sent as stored.
  Limits are soft (KIP-74): the first partition that has data returns at least one
  whole batch even past partition_max_bytes or max_bytes; later partitions stop at the
  request budget.  No data is an empty (not null) records field: librdkafka rejects null.
* last_stable_offset = high watermark (no transactions yet), aborted_transactions null
  for read_uncommitted and empty for read_committed, preferred_read_replica -1.
* Waiting: with fewer than min_bytes and max_wait_ms > 0 the request parks until an
  append to one of its partitions or the timeout (kbroker/fetch_waiters.py); only this
  connection's later responses wait behind it.
"""

from __future__ import annotations

import time
from typing import Any

from kbroker.registry import REGISTRY
from kbroker.request_context import RequestContext
from log.errors import LogError
from wire.error_codes import ErrorCode
from wire.messages import FetchRequest, FetchResponse

PartitionData = FetchResponse.PartitionData
TopicResponse = FetchResponse.FetchableTopicResponse
INT32_MAX = (1 << 31) - 1


def _partition_error(index: int, code: ErrorCode) -> PartitionData:
    return PartitionData(partition_index=index, error_code=code, high_watermark=-1,
                         last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                         records=b"")


def _read_all(ctx: RequestContext, req: FetchRequest) -> tuple[FetchResponse, int, bool]:
    """One pass over the requested partitions: (response, bytes of records, any error)."""
    state = ctx.broker
    v = ctx.api_version
    read_committed = req.isolation_level == 1
    budget = req.max_bytes if req.max_bytes > 0 else INT32_MAX
    total = 0
    errors = False
    topics = []
    for topic in req.topics:
        parts = []
        for fp in topic.partitions:
            partition = state.partition(topic.topic, fp.partition)
            if partition is None:
                parts.append(_partition_error(fp.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                errors = True
                continue
            epoch = fp.current_leader_epoch if v >= 9 else -1
            if epoch >= 0 and epoch != partition.leader_epoch:
                code = (ErrorCode.FENCED_LEADER_EPOCH if epoch < partition.leader_epoch
                        else ErrorCode.UNKNOWN_LEADER_EPOCH)
                parts.append(_partition_error(fp.partition, code))
                errors = True
                continue
            max_bytes = min(fp.partition_max_bytes, budget - total)
            try:
                if max_bytes <= 0 and total > 0:
                    result = partition.read(fp.fetch_offset, 0, False, read_committed)
                    records = b""
                else:
                    result = partition.read(fp.fetch_offset, max(max_bytes, 0), total == 0,
                                            read_committed)
                    records = result.records
            except LogError as e:
                code = e.error
                pd = _partition_error(fp.partition, code)
                pd.high_watermark = partition.high_watermark
                pd.last_stable_offset = partition.last_stable_offset
                pd.log_start_offset = partition.log_start_offset
                parts.append(pd)
                errors = True
                continue
            total += len(records)
            parts.append(PartitionData(
                partition_index=fp.partition, error_code=ErrorCode.NONE,
                high_watermark=result.high_watermark, last_stable_offset=result.last_stable_offset,
                log_start_offset=result.log_start_offset,
                aborted_transactions=[] if read_committed else None,
                preferred_read_replica=-1, records=records))
        topics.append(TopicResponse(topic=topic.topic, partitions=parts))
    return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=topics), total, errors


async def _wait_then_read(ctx: RequestContext, req: FetchRequest, deadline: float) -> FetchResponse:
    tps = [(t.topic, p.partition) for t in req.topics for p in t.partitions]
    while True:
        await ctx.broker.fetch_waiters.wait(tps, deadline - time.monotonic())
        resp, total, errors = _read_all(ctx, req)
        if total >= req.min_bytes or errors or time.monotonic() >= deadline:
            return resp


@REGISTRY.register(1, 4, 12)
def handle_fetch(ctx: RequestContext, req: FetchRequest) -> Any:
    if ctx.api_version >= 7:
        if req.session_id != 0:
            return FetchResponse(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0)
        if req.session_epoch not in (0, -1):
            return FetchResponse(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id=0)
    resp, total, errors = _read_all(ctx, req)
    if total >= req.min_bytes or errors or req.max_wait_ms <= 0 or not req.topics:
        return resp
    return _wait_then_read(ctx, req, time.monotonic() + req.max_wait_ms / 1000.0)
