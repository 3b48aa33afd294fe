"""InitProducerId (key 22), v0-4.

Ports (kbroker/server/services.py): ``producer_ids`` (idempotent producers), ``txns`` (with a
transactional id).

Non-transactional producers (transactional_id null) always get a fresh producer id with
epoch 0, also when v3+ requests carry their current id and epoch (KIP-360): that is
what Kafka does (``KafkaApis.handleInitProducerIdRequest``: an idempotent producer's
epoch bump is a new id).  In cluster mode ids come in blocks claimed in ZooKeeper; while
the next block is being claimed the answer is COORDINATOR_LOAD_IN_PROGRESS, which clients
retry (Kafka 3.x's RPCProducerIdManager).

With a transactional id the transaction coordinator answers (txn/coordinator.py via
kbroker/coordinators/txn_service.py): epoch bump and fencing of the previous producer, the abort of
its ongoing transaction first (answered CONCURRENT_TRANSACTIONS meanwhile), KIP-360
recovery with the request's producer id/epoch (v3+), INVALID_TRANSACTION_TIMEOUT above
``transaction.max.timeout.ms``.  Versions below 4 get INVALID_PRODUCER_EPOCH where Kafka
says PRODUCER_FENCED (KafkaApis: older clients do not know that code).  v5 (transaction
version 2) is not offered.
"""

from __future__ import annotations

from typing import Any

from kbroker.coordinators.producer_ids import ProducerIdsNotReady
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import InitProducerIdRequest, InitProducerIdResponse


@REGISTRY.register(22, 0, 4)
def handle_init_producer_id(ctx: RequestContext, req: InitProducerIdRequest) -> Any:
    if req.transactional_id is not None:
        return _transactional(ctx, req)
    try:
        pid = ctx.services.producer_ids.generate()
    except ProducerIdsNotReady:  # cluster mode, the next block not claimed yet: retriable
        return InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                      producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=pid, producer_epoch=0)


def _transactional(ctx: RequestContext, req: InitProducerIdRequest) -> Any:
    version = ctx.api_version
    svc = ctx.services.txns
    expected_pid = req.producer_id if version >= 3 else -1
    expected_epoch = req.producer_epoch if version >= 3 else -1

    def build(error: ErrorCode, producer_id: int, epoch: int) -> InitProducerIdResponse:
        if version < 4 and error is ErrorCode.PRODUCER_FENCED:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        return InitProducerIdResponse(throttle_time_ms=0, error_code=error,
                                      producer_id=producer_id, producer_epoch=epoch)

    return svc.call(lambda respond: svc.coordinator.init_producer_id(
        req.transactional_id, req.transaction_timeout_ms, expected_pid, expected_epoch, respond),
        build)
