"""InitProducerId (key 22), v0-4, for idempotent producers.

Non-transactional producers (transactional_id null) always get a fresh producer id with
epoch 0, also when v3+ requests carry their current id and epoch (KIP-360): that is
what Kafka does (``KafkaApis.handleInitProducerIdRequest``: an idempotent producer's
epoch bump is a new id).  Transactions are not implemented yet: a transactional id is
answered with INVALID_REQUEST (see NOT_IMPLEMENTED.md).  In cluster mode ids come in blocks
claimed in ZooKeeper; while the next block is being claimed the answer is
COORDINATOR_LOAD_IN_PROGRESS, which clients retry (Kafka 3.x's RPCProducerIdManager).
"""

from __future__ import annotations

from kbroker.producer_ids import ProducerIdsNotReady
from kbroker.registry import REGISTRY
from kbroker.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import InitProducerIdRequest, InitProducerIdResponse


@REGISTRY.register(22, 0, 4)
def handle_init_producer_id(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse:
    if req.transactional_id is not None:
        return InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1,
                                      producer_epoch=-1)
    try:
        pid = ctx.broker.producer_ids.generate()
    except ProducerIdsNotReady:  # cluster mode, the next block not claimed yet: retriable
        return InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                      producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=pid, producer_epoch=0)
