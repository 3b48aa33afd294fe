"""Produce (key 0): implemented for v3-9, advertised from v0.

Kafka 4 still advertises Produce from v0 because librdkafka < 2.11.1 turns off gzip,
snappy and lz4 unless the range contains v0 (KAFKA-18659); v0-2 requests are answered
UNSUPPORTED_VERSION per partition, as Kafka 4 does.

Per partition, in Kafka's order (KafkaApis.handleProduceRequest, ReplicaManager,
LogValidator): exactly one magic-2 batch (else INVALID_RECORD); zstd needs v7+
(UNSUPPORTED_COMPRESSION_TYPE); then the write door (``replicas.append_records``,
kbroker/replica/appends.py, Kafka's ReplicaManager.appendRecords): unknown topic or
partition UNKNOWN_TOPIC_OR_PARTITION (Produce never creates topics); internal topics
INVALID_TOPIC_EXCEPTION; only the leader appends; a transactional batch must be in its
transaction (KIP-890 part 1, the door's ``check``); then the log
validates (CRC, sizes, max.message.bytes, every record's structure, key and timestamp,
producer epoch and sequence: log/validator.py) and appends.  A duplicate of one of an idempotent producer's last 5 batches is answered with
the offset it was first written at.  When the log rejects individual records (a keyless
record on a compacted topic, a timestamp out of bounds), v8+ names each one in
``record_errors`` (batch_index, batch_index_error_message) with the error_message, as
Kafka's RecordValidationException does; other errors carry no message (ReplicaManager's
hasCustomErrorMessage).  The records are never decoded here: the batch header
is read in place and the frame's own bytes are patched (base offset, leader epoch) and
written.  ``acks=0``: nothing is sent back; if any partition failed, the connection is
closed instead (after the responses of earlier requests on it), so that the client notices
and refreshes its metadata (KafkaApis.handleProduceRequest's ``closeConnection``; a
whole-request failure closes too, as ProduceRequest.getErrorResponse is null for acks=0).

Cluster mode (kbroker/replica/replica_manager.py): only the leader appends (else
NOT_LEADER_OR_FOLLOWER).  acks=1 answers after the leader's append.  acks=-1: refused with
NOT_ENOUGH_REPLICAS, nothing written, while the ISR is below min(min.insync.replicas,
replication factor) (kbroker/replica/partition.py); otherwise appended, then the request parks in
the produce purgatory (kbroker/replica/delayed_produce.py) until every appended partition's HW
reaches its last offset + 1: NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank
below min ISR meanwhile, NOT_LEADER_OR_FOLLOWER when leadership moved, REQUEST_TIMED_OUT at
the request's ``timeout_ms`` (Kafka's ``DelayedProduce``).  A partition that failed answers
at once with its error, as in Kafka.

Ports (kbroker/server/services.py): ``replicas``, ``txns``, ``authorizer``.
"""

from __future__ import annotations

import struct
from typing import Any

from kbroker.handlers.authorize import authorize
from kbroker.metrics.counters import TOPIC_STATS
from kbroker.replica.appends import Appends, PartitionAppend
from kbroker.server.registry import NO_RESPONSE, REGISTRY, CloseConnection
from kbroker.server.request_context import RequestContext
from log.producer_state import AppendOrigin
from wire.acl import TOPIC, TRANSACTIONAL_ID, WRITE
from wire.batch_header import COMPRESSION_MASK, HEADER_SIZE
from wire.compression import Compression
from wire.error_codes import ErrorCode
from wire.errors import CorruptRecordError
from wire.messages import ProduceRequest, ProduceResponse
from wire.record_batch import LOG_OVERHEAD, MAGIC_V2, RecordBatch

_I32 = struct.Struct(">i")
_ZSTD = int(Compression.ZSTD)   # a plain int: comparing with the IntEnum member costs more

PartitionResponse = ProduceResponse.PartitionProduceResponse


def _check_single_batch(records: memoryview | None, version: int) -> ErrorCode:
    """ProduceRequest.validateRecords: v3+ carries exactly one magic-2 batch."""
    if records is None or len(records) < LOG_OVERHEAD + 5:
        return ErrorCode.INVALID_RECORD
    if records[LOG_OVERHEAD + 4] != MAGIC_V2:
        return ErrorCode.INVALID_RECORD
    n = len(records)
    if n >= HEADER_SIZE and _I32.unpack_from(records, 8)[0] + LOG_OVERHEAD == n \
            and records[_ATTRIBUTES_LOW_BYTE] & COMPRESSION_MASK < _ZSTD:
        # the common case, read in place (batchLength is the int32 at bytes 8-11): one whole
        # batch, a codec every version accepts; anything else takes the checks below
        return ErrorCode.NONE
    try:
        batch = RecordBatch(records, 0)
    except CorruptRecordError:
        return ErrorCode.CORRUPT_MESSAGE
    if batch.size_in_bytes != len(records):
        return ErrorCode.INVALID_RECORD
    if batch.compression == Compression.ZSTD and version < 7:
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    return ErrorCode.NONE


def _error(index: int, code: ErrorCode) -> PartitionResponse:
    return PartitionResponse(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1,
                             log_start_offset=-1)


_ATTRIBUTES_LOW_BYTE = LOG_OVERHEAD + 10  # attributes is the int16 at bytes 21-22
_TRANSACTIONAL_BIT = 0x10


def _has_transactional_batch(req: ProduceRequest) -> bool:
    """RequestUtils.hasTransactionalRecords: some partition's batch has the transactional bit."""
    for topic in req.topic_data:
        for pd in topic.partition_data:
            r = pd.records
            if (r is not None and len(r) > _ATTRIBUTES_LOW_BYTE and r[LOG_OVERHEAD + 4] == MAGIC_V2
                    and r[_ATTRIBUTES_LOW_BYTE] & _TRANSACTIONAL_BIT):
                return True
    return False


def _whole_request_error(req: ProduceRequest, v: int, code: ErrorCode, message: str) -> ProduceResponse:
    """ProduceRequest.getErrorResponse: the same error on every partition of the request."""
    topics = []
    for topic in req.topic_data:
        parts = []
        for pd in topic.partition_data:
            resp = _error(pd.index, code)
            if v >= 8:
                resp.error_message = message
            parts.append(resp)
        topics.append(ProduceResponse.TopicProduceResponse(name=topic.name, partition_responses=parts))
    return ProduceResponse(responses=topics, throttle_time_ms=0)


@REGISTRY.register(0, 0, 9)
def handle_produce(ctx: RequestContext, req: ProduceRequest) -> object:
    services = ctx.services
    v = ctx.api_version
    if req.transactional_id is not None and not authorize(ctx, WRITE, TRANSACTIONAL_ID, req.transactional_id):
        if req.acks == 0:
            return _acks_0_close(ctx, "TransactionalIdAuthorizationException")
        return _whole_request_error(req, v, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                    "Transactional Id authorization failed.")
    if v >= 3 and req.transactional_id is None and _has_transactional_batch(req):
        # KafkaApis.handleProduceRequest: transactional records need a transactional id
        # (authorized for WRITE) or the whole request fails before anything is appended.
        if req.acks == 0:   # no response to carry the error: Kafka closes the connection
            return _acks_0_close(ctx, "TransactionalIdAuthorizationException")
        return _whole_request_error(req, v, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                    "Transactional Id authorization failed.")
    if req.transactional_id is not None and req.acks != 0:
        # KIP-890 part 1 with the coordinator on another broker: ask it first, then handle
        # (on a single node: None at once, unless a test slows verification down)
        pending = services.txns.remote_verification(req, lambda: handle_produce(ctx, req))
        if pending is not None:
            return pending
    acks = req.acks
    valid_acks = acks in (-1, 0, 1)
    # what KafkaApis checks before ReplicaManager.appendRecords; the rest is the write door's
    # (kbroker/replica/appends.py): existence, internal topics, leadership, min ISR, the append
    entries: list[tuple[tuple[str, int], memoryview]] = []
    slots: list[tuple[list[PartitionResponse], int, int]] = []   # per entry: (its topic's answers, position, index)
    topics = []
    for topic in req.topic_data:
        partitions: list[PartitionResponse] = []
        name = topic.name
        may_write = authorize(ctx, WRITE, TOPIC, name)
        for pd in topic.partition_data:
            if v < 3:
                code = ErrorCode.UNSUPPORTED_VERSION
            elif not may_write:   # KafkaApis: before the existence and record checks
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not valid_acks:
                code = ErrorCode.INVALID_REQUIRED_ACKS
            else:
                code = _check_single_batch(pd.records, v)
            if code:
                partitions.append(_error(pd.index, code))
                continue
            entries.append(((name, pd.index), pd.records))  # type: ignore[arg-type]
            slots.append((partitions, len(partitions), pd.index))
            partitions.append(None)  # type: ignore[arg-type]   # filled from the append below
        topics.append(ProduceResponse.TopicProduceResponse(name=name, partition_responses=partitions))
    check = None
    if req.transactional_id is not None:   # KIP-890 part 1 (kbroker/coordinators/txn_service.py)
        verify, transactional_id = services.txns.verify_produce, req.transactional_id

        def check(tp: tuple[str, int], partition: Any, records: memoryview) -> ErrorCode:
            return verify(transactional_id, tp[0], tp[1], partition, records)
    appends = services.replicas.append_records(entries, acks, AppendOrigin.CLIENT, check)
    stats: dict[str, list[int]] = {}   # BrokerTopicMetrics per topic: [records, bytes], from the appends
    for ((name, _), records), (partitions, position, index), result in zip(entries, slots, appends.results, strict=True):
        partitions[position] = _answer(index, result, v)
        info = result.info
        if info is not None and not info.duplicate:
            counts = stats.setdefault(name, [0, 0])
            counts[0] += info.record_count
            counts[1] += len(records)
    for name, (records_in, bytes_in) in stats.items():
        TOPIC_STATS.produced(name, records_in, bytes_in)
    if acks == 0:
        failed = [f"{t.name}-{p.index}={ErrorCode(p.error_code).name}"
                  for t in topics for p in t.partition_responses if p.error_code]
        return _acks_0_close(ctx, ", ".join(failed)) if failed else NO_RESPONSE
    response = ProduceResponse(responses=topics, throttle_time_ms=0)
    if appends.waits:
        # appended: the connection's next requests may append after these while the ISR
        # catches up (their answers still leave after this one)
        ctx.took_effect()
        return _await_replication(appends, [(s[0][s[1]]) for s in slots], response, req.timeout_ms)
    return response


def _answer(index: int, result: PartitionAppend, v: int) -> PartitionResponse:
    info = result.info
    if info is not None:
        return PartitionResponse(index=index, error_code=0, base_offset=info.first_offset,
                                 log_append_time_ms=info.log_append_time, log_start_offset=info.log_start_offset)
    resp = _error(index, result.error)
    e = result.refusal
    if v >= 8 and e is not None and e.record_errors:
        # ReplicaManager: only a RecordValidationException has a custom message
        resp.error_message = str(e) or None
        resp.record_errors = [
            ProduceResponse.BatchIndexAndErrorMessage(batch_index=r.batch_index, batch_index_error_message=r.message)
            for r in e.record_errors]
    return resp


def _acks_0_close(ctx: RequestContext, errors: str) -> CloseConnection:
    """An acks=0 Produce that failed: the connection is closed, with Kafka's log line."""
    return CloseConnection(
        f"error during produce request with correlation id {ctx.correlation_id} from client id "
        f"{ctx.client_id} with ack=0; topic and partition to exceptions: {errors}")


async def _await_replication(appends: Appends, answers: list[PartitionResponse], response: ProduceResponse,
                             timeout_ms: int) -> ProduceResponse:
    """acks=all: park until the ISR has the records (Kafka's DelayedProduce); a partition
    that did not make it keeps its offsets and gets the purgatory's error."""
    for answer, result in zip(answers, await appends.replicated(timeout_ms), strict=True):
        if result.error != ErrorCode.NONE:
            answer.error_code = result.error
    return response
