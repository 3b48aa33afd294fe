"""TxnOffsetCommit (28) v0-3: a transactional producer commits a consumer group's offsets
(``send_offsets_to_transaction``), as Kafka's ``KafkaApis.handleTxnOffsetCommitRequest``
and ``GroupCoordinatorService.commitTransactionalOffsets``.

Order of checks (KafkaApis): Write on the transactional id, else every partition
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; Read on the group, else GROUP_AUTHORIZATION_FAILED
(both by the wrapper of kbroker/handlers/admin_authz.py, only with an authorizer); then here, per
topic, Read (TOPIC_AUTHORIZATION_FAILED, with an authorizer) and existence
(UNKNOWN_TOPIC_OR_PARTITION for an unknown topic or partition); the rest goes to the group
coordinator (groups/coordinator.py ``txn_offset_commit``), whose offsets stay pending until
the transaction's marker reaches the group's ``__consumer_offsets`` partition.

KIP-890 part 1 (``transaction.partition.verification.enable``): before the write, a
producer without an open transaction on the group's ``__consumer_offsets`` partition must
have added that partition to its transaction (AddOffsetsToTxn), so a zombie's late commit
cannot open a transaction there that nobody will ever complete.  The transaction
coordinator is asked directly when it is on this broker (always on a single node);
PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH (v0-3 predate it), coordinator
unavailability as COORDINATOR_NOT_AVAILABLE (Kafka: NOT_ENOUGH_REPLICAS from the
verification, mapped as the group coordinator maps append errors), INVALID_TXN_STATE as it is.

v4 (KIP-890 part 2's TRANSACTION_ABORTABLE) is not offered: transaction version 2 is not
served (kbroker/handlers/transactions.py).

Ports (kbroker/server/services.py): ``groups`` (the group coordinator), ``txns`` (the
verification), ``metadata`` (does the cluster have the partition), ``catalog`` (the group's
``__consumer_offsets`` partition here), ``authorizer``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kbroker.handlers.authorize import authorize
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.acl import READ, TOPIC
from wire.error_codes import ErrorCode
from wire.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from wire.topic_names import GROUP_METADATA_TOPIC

if TYPE_CHECKING:
    from kbroker.server.services import Services

log = logging.getLogger("kbroker.groups")

E = ErrorCode
Topic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
Partition = TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition
_COORDINATOR_UNAVAILABLE = (E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS,
                            E.NOT_COORDINATOR, E.CONCURRENT_TRANSACTIONS)


def _every(req: TxnOffsetCommitRequest, code: ErrorCode) -> TxnOffsetCommitResponse:
    return TxnOffsetCommitResponse(throttle_time_ms=0, topics=[
        Topic(name=t.name, partitions=[Partition(partition_index=p.partition_index,
                                                 error_code=int(code)) for p in t.partitions])
        for t in req.topics])


def verify_offsets_partition(svc: Services, req: TxnOffsetCommitRequest) -> ErrorCode:
    """KIP-890 part 1 for the group's ``__consumer_offsets`` partition (see the module
    docstring); NONE when verification is off, not needed, or not possible here."""
    txns = svc.txns
    if not txns.verification_enabled:
        return E.NONE
    index = svc.groups.coordinator.partition_for(req.group_id)
    partition = svc.catalog.partition(GROUP_METADATA_TOPIC, index)
    if partition is not None and partition.has_ongoing_transaction(req.producer_id, req.producer_epoch):
        return E.NONE  # its transaction is open here: verified when it began
    c = txns.coordinator
    txn_partition = c.partition_for(req.transactional_id)
    if txn_partition not in c.owned and txn_partition not in c.loading:
        return E.NONE  # coordinated by another broker (cluster mode): not verified here
    tp = (GROUP_METADATA_TOPIC, index)
    error = c.verify_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                                [tp])[tp]
    if error is E.PRODUCER_FENCED:
        return E.INVALID_PRODUCER_EPOCH
    if error in _COORDINATOR_UNAVAILABLE:
        return E.COORDINATOR_NOT_AVAILABLE
    return error


@REGISTRY.register(28, 0, 3)
def handle_txn_offset_commit(ctx: RequestContext, req: TxnOffsetCommitRequest) -> Any:
    services = ctx.services
    refused: list[Any] = []   # (topic, partition indexes, error) answered here
    kept = []
    metadata = services.metadata.view()   # the partition may live on another broker
    for t in req.topics:
        if not authorize(ctx, READ, TOPIC, t.name):
            refused.append((t.name, [p.partition_index for p in t.partitions],
                            E.TOPIC_AUTHORIZATION_FAILED))
            continue
        present = [p for p in t.partitions if metadata.has_partition(t.name, p.partition_index)]
        missing = [p.partition_index for p in t.partitions
                   if not metadata.has_partition(t.name, p.partition_index)]
        if missing:
            refused.append((t.name, missing, E.UNKNOWN_TOPIC_OR_PARTITION))
        if present:
            kept.append(TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t.name, partitions=present))

    def merge(resp: TxnOffsetCommitResponse) -> TxnOffsetCommitResponse:
        for name, indexes, code in refused:
            entry = next((t for t in resp.topics if t.name == name), None)
            if entry is None:
                entry = Topic(name=name, partitions=[])
                resp.topics.append(entry)
            entry.partitions.extend(Partition(partition_index=i, error_code=int(code))
                                    for i in indexes)
        return resp

    if not kept:
        return merge(TxnOffsetCommitResponse(throttle_time_ms=0, topics=[]))
    req.topics = kept
    svc = services.groups
    early = svc.coordinator.group_error(req.group_id)
    if early is None and req.group_id:
        verified = verify_offsets_partition(services, req)
        if verified is not E.NONE:
            log.info("TxnOffsetCommit of %s for group %s refused by verification: %s",
                     req.transactional_id, req.group_id, verified.name)
            return merge(_every(req, verified))
    answer = svc.answer(svc.coordinator.txn_offset_commit(req, ctx.api_version))
    if hasattr(answer, "__await__"):
        async def after() -> TxnOffsetCommitResponse:
            return merge(await answer)
        return after()
    return merge(answer)
