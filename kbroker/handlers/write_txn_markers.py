"""WriteTxnMarkers (key 27), v0-1 (v1 flexible): the partition-leader side of ending a
transaction (Kafka's ``KafkaApis.handleWriteTxnMarkersRequest``).

The transaction coordinator sends, per producer, the result (COMMIT/ABORT), the producer
epoch, its coordinator epoch and the partitions of the transaction led by this broker.
For each partition the leader appends one marker (a transactional control batch,
log/control_batch.py) with origin COORDINATOR, which completes the producer's open
transaction there: the LSO moves on and an abort is indexed in the segment's ``.txnindex``.
As Kafka (acks=-1), a partition is answered once the ISR has its marker
(``Appends.replicated``, up to ``request.timeout.ms``: cluster mode's produce purgatory,
kbroker/replica/delayed_produce.py; at once on a single node).

Per partition: UNKNOWN_TOPIC_OR_PARTITION when this broker hosts no such partition (Kafka's
``getMagic`` is empty), NOT_LEADER_OR_FOLLOWER when it does not lead it, the log's error
from the append (INVALID_PRODUCER_EPOCH for a marker of an older epoch,
TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch, NOT_ENOUGH_REPLICAS ...),
or the purgatory's (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND). The whole request
needs ClusterAction on the cluster: kbroker/handlers/admin_authz.py wraps the registered handler.

Markers of ``__consumer_offsets`` partitions: once a marker is written,
``groups.complete_txn_offsets(producer_id, producer_epoch, commit, partitions)``
makes the transaction's pending offsets visible or drops them (Kafka's
``groupCoordinator.onTransactionCompleted``).

``write_txn_markers(services, request)`` is the core, called directly by the coordinator's
marker sender (kbroker/coordinators/txn_marker_sender.py; kbroker/app/wiring.py hands it over) when the leader
is this broker itself; the registered handler is a thin wrapper around it.

Ports (kbroker/server/services.py): ``catalog`` (the partitions), ``replicas`` (leadership, the
acks=all wait), ``groups`` (the pending transactional offsets), ``clock`` (the marker's
timestamp), ``config`` (``request.timeout.ms``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from log.control_batch import marker_batch
from log.producer_state import AppendOrigin
from wire.error_codes import ErrorCode
from wire.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from wire.topic_names import GROUP_METADATA_TOPIC

if TYPE_CHECKING:
    from kbroker.server.services import Services

__all__ = ["write_txn_markers"]

log = logging.getLogger(__name__)

R = WriteTxnMarkersResponse


async def write_txn_markers(svc: Services, req: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    """Append every marker of ``req`` to the partitions this broker leads, through the write
    door (kbroker/replica/appends.py: origin COORDINATOR, acks=all), and answer once each
    is replicated (see the module docstring)."""
    entries: list[tuple[tuple[str, int], memoryview]] = []
    owners: list[int] = []   # per entry: the index of its marker in the request
    now = svc.clock.milliseconds()
    for i, marker in enumerate(req.markers):
        for t in marker.topics:
            for index in t.partition_indexes:
                batch = marker_batch(commit=marker.transaction_result, producer_id=marker.producer_id,
                                     producer_epoch=marker.producer_epoch,
                                     coordinator_epoch=marker.coordinator_epoch, timestamp_ms=now)
                entries.append(((t.name, index), memoryview(batch)))
                owners.append(i)
    appends = svc.replicas.append_records(entries, -1, AppendOrigin.COORDINATOR)
    results = await appends.replicated(svc.config.config["request.timeout.ms"])
    errors: list[dict[tuple[str, int], ErrorCode]] = [{} for _ in req.markers]
    for (tp, _), i, result in zip(entries, owners, results, strict=True):
        if result.refusal is not None:
            log.debug("WriteTxnMarkers: marker of producer %d on %s-%d refused: %s",
                      req.markers[i].producer_id, *tp, result.refusal)
        errors[i][tp] = result.error
    out = []
    for marker, per in zip(req.markers, errors, strict=True):
        offsets_partitions = [i for (name, i), code in per.items() if name == GROUP_METADATA_TOPIC and code == ErrorCode.NONE]
        if offsets_partitions:
            svc.groups.complete_txn_offsets(marker.producer_id, marker.producer_epoch, marker.transaction_result,
                                            offsets_partitions)
        topics: dict[str, list[R.WritableTxnMarkerPartitionResult]] = {}
        for (name, index), code in per.items():
            topics.setdefault(name, []).append(R.WritableTxnMarkerPartitionResult(partition_index=index, error_code=code))
        out.append(R.WritableTxnMarkerResult(
            producer_id=marker.producer_id,
            topics=[R.WritableTxnMarkerTopicResult(name=n, partitions=ps) for n, ps in topics.items()]))
    return WriteTxnMarkersResponse(markers=out)


@REGISTRY.register(27, 0, 1)
def handle_write_txn_markers(ctx: RequestContext, req: WriteTxnMarkersRequest) -> object:
    return write_txn_markers(ctx.services, req)
