"""The transaction coordinator's APIs (txn/coordinator.py through kbroker/coordinators/txn_service.py):
AddPartitionsToTxn (24) 0-3 (v4 for brokers only), AddOffsetsToTxn (25) 0-3, EndTxn (26) 0-3,
DescribeTransactions (65) 0, ListTransactions (66) 0-1.  FindCoordinator key type 1 is
kbroker/handlers/groups.py's, through the ``coordinators`` port.

Ports (kbroker/server/services.py): ``txns`` (the coordinator), ``groups`` (AddOffsetsToTxn: the
group's ``__consumer_offsets`` partition), ``metadata`` (AddPartitionsToTxn: does the
cluster have the partition).

Versions: v0-3 of AddPartitionsToTxn are the client form (one transaction; one error for
every partition, or per partition UNKNOWN_TOPIC_OR_PARTITION for partitions the broker does
not know and OPERATION_NOT_ATTEMPTED for the rest, as KafkaApis); v4 is the brokers'
batched form, with ``verify_only`` for KIP-890 produce verification, served in cluster
mode and never advertised (kafka-python infers the broker's version from the highest
AddPartitionsToTxn version: 4 would make it a 3.6 broker).  v5 and EndTxn v4-5
(TRANSACTION_ABORTABLE, transaction version 2) are not offered, so clients use
transaction version 1.  Older versions get INVALID_PRODUCER_EPOCH where Kafka says
PRODUCER_FENCED (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn below v2).
"""

from __future__ import annotations

from typing import Any

from kbroker.server.registry import INTER_BROKER, REGISTRY
from kbroker.server.request_context import RequestContext
from txn.states import TxnState
from wire.error_codes import ErrorCode
from wire.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from wire.topic_names import GROUP_METADATA_TOPIC

E = ErrorCode
TopicResult = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
PartitionResult = AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult


def _fenced_for(version: int, first_with_fenced: int, error: ErrorCode) -> ErrorCode:
    if version < first_with_fenced and error is E.PRODUCER_FENCED:
        return E.INVALID_PRODUCER_EPOCH
    return error


def _topic_results(errors: dict[tuple[str, int], ErrorCode]) -> list[Any]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), error in errors.items():
        by_topic.setdefault(topic, []).append(
            PartitionResult(partition_index=index, partition_error_code=error))
    return [TopicResult(name=t, results_by_partition=ps) for t, ps in by_topic.items()]


# ---------------------------------------------------------------- AddPartitionsToTxn
@REGISTRY.register(24, 0, 3)
def handle_add_partitions_to_txn(ctx: RequestContext, req: AddPartitionsToTxnRequest) -> Any:
    version = ctx.api_version
    svc = ctx.services.txns
    partitions = [(t.name, p) for t in req.v3_and_below_topics for p in t.partitions]
    metadata = ctx.services.metadata.view()   # the partition may live on another broker
    unknown = {tp for tp in partitions if not metadata.has_partition(*tp)}
    if unknown:
        # KafkaApis: nothing is added when a partition is unknown
        return AddPartitionsToTxnResponse(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(
            {tp: E.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else E.OPERATION_NOT_ATTEMPTED
             for tp in partitions}))

    def build(error: ErrorCode) -> AddPartitionsToTxnResponse:
        error = _fenced_for(version, 2, error)
        return AddPartitionsToTxnResponse(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(
            {tp: error for tp in partitions}))

    return svc.call(lambda respond: svc.coordinator.add_partitions(
        req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
        req.v3_and_below_producer_epoch, set(partitions), respond), build)


@INTER_BROKER.register(24, 4, 4)
async def handle_add_partitions_to_txn_batched(ctx: RequestContext, req: AddPartitionsToTxnRequest) -> Any:
    """v4: several transactions, from brokers (cluster mode only, not advertised: a client
    does not send it, and kafka-python would infer a 3.6 broker from it); ``verify_only``
    checks without adding (KIP-890 part 1, kbroker/coordinators/txn_verification.py)."""
    svc = ctx.services.txns
    results = []
    for txn in req.transactions:
        partitions = [(t.name, p) for t in txn.topics for p in t.partitions]
        if txn.verify_only:
            errors = svc.coordinator.verify_partitions(
                txn.transactional_id, txn.producer_id, txn.producer_epoch, partitions)
        else:
            answer = svc.call(lambda respond, txn=txn, partitions=partitions: svc.coordinator.add_partitions(
                txn.transactional_id, txn.producer_id, txn.producer_epoch, set(partitions), respond),
                lambda error: error)
            error = answer if isinstance(answer, ErrorCode) else await answer
            errors = {tp: error for tp in partitions}
        results.append(AddPartitionsToTxnResponse.AddPartitionsToTxnResult(
            transactional_id=txn.transactional_id, topic_results=_topic_results(errors)))
    return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=E.NONE,
                                      results_by_transaction=results)


# ---------------------------------------------------------------- AddOffsetsToTxn
@REGISTRY.register(25, 0, 3)
def handle_add_offsets_to_txn(ctx: RequestContext, req: AddOffsetsToTxnRequest) -> Any:
    """The group's ``__consumer_offsets`` partition joins the transaction, so that its
    TxnOffsetCommit records get the transaction's marker."""
    version = ctx.api_version
    svc = ctx.services.txns
    groups = ctx.services.groups
    groups.ensure_topic()
    offsets_partition = groups.coordinator.partition_for(req.group_id)

    def build(error: ErrorCode) -> AddOffsetsToTxnResponse:
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=_fenced_for(version, 2, error))

    return svc.call(lambda respond: svc.coordinator.add_partitions(
        req.transactional_id, req.producer_id, req.producer_epoch,
        {(GROUP_METADATA_TOPIC, offsets_partition)}, respond), build)


# ---------------------------------------------------------------- EndTxn
@REGISTRY.register(26, 0, 3)
def handle_end_txn(ctx: RequestContext, req: EndTxnRequest) -> Any:
    version = ctx.api_version
    svc = ctx.services.txns

    def build(error: ErrorCode) -> EndTxnResponse:
        return EndTxnResponse(throttle_time_ms=0, error_code=_fenced_for(version, 2, error))

    return svc.call(lambda respond: svc.coordinator.end_txn(
        req.transactional_id, req.producer_id, req.producer_epoch, req.committed, respond), build)


# ---------------------------------------------------------------- admin
@REGISTRY.register(65, 0, 0)
def handle_describe_transactions(ctx: RequestContext, req: DescribeTransactionsRequest) -> Any:
    coordinator = ctx.services.txns.coordinator
    states = []
    for txn_id in req.transactional_ids:
        error, md = coordinator.describe(txn_id)
        if md is None:
            states.append(DescribeTransactionsResponse.TransactionState(
                error_code=error, transactional_id=txn_id, transaction_state="",
                transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1,
                producer_epoch=-1, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(md.partitions):
            by_topic.setdefault(topic, []).append(index)
        states.append(DescribeTransactionsResponse.TransactionState(
            error_code=E.NONE, transactional_id=txn_id, transaction_state=md.state.state_name,
            transaction_timeout_ms=md.txn_timeout_ms,
            transaction_start_time_ms=md.txn_start_timestamp_ms, producer_id=md.producer_id,
            producer_epoch=md.producer_epoch,
            topics=[DescribeTransactionsResponse.TopicData(topic=t, partitions=ps)
                    for t, ps in by_topic.items()]))
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=states)


@REGISTRY.register(66, 0, 1)
def handle_list_transactions(ctx: RequestContext, req: ListTransactionsRequest) -> Any:
    coordinator = ctx.services.txns.coordinator
    states: set[TxnState] = set()
    unknown = []
    for name in req.state_filters:
        state = TxnState.from_name(name)
        if state is None:
            unknown.append(name)
        else:
            states.add(state)
    duration = req.duration_filter if ctx.api_version >= 1 else -1
    if unknown and not states:
        # only unknown filters: nothing can match (Kafka answers an empty list)
        return ListTransactionsResponse(throttle_time_ms=0, error_code=E.NONE,
                                        unknown_state_filters=unknown, transaction_states=[])
    error, found = coordinator.list_transactions(states, set(req.producer_id_filters), duration)
    return ListTransactionsResponse(
        throttle_time_ms=0, error_code=error, unknown_state_filters=unknown,
        transaction_states=[ListTransactionsResponse.TransactionState(
            transactional_id=md.transactional_id, producer_id=md.producer_id,
            transaction_state=md.state.state_name) for md in found])
