"""KIP-890 part 1: a transactional batch is appended only if its partition is part of the
producer's ongoing transaction (Kafka's ``ReplicaManager.appendRecordsWithTransactionVerification``
with ``AddPartitionsToTxnManager``; ``transaction.partition.verification.enable``).

Only batches of a producer without an ongoing transaction on the partition are checked
(``Log.hasOngoingTransaction``: once its first batch is in, the rest of the transaction on
that partition was verified with it).  The coordinator is asked directly when this broker
is it (always on a single node, ``check_local``).  In cluster mode a coordinator on another
broker is asked with AddPartitionsToTxn v4 ``verify_only`` over an inter-broker link
(``remote_verification``): the Produce request waits for the answer, then is handled
again with the answers in hand (``_answers``, consulted by ``check_local`` during that
synchronous re-run only).

Answers to the producer as Kafka gives them: NONE; INVALID_TXN_STATE (the partition was
not added); INVALID_PRODUCER_EPOCH for PRODUCER_FENCED; NOT_ENOUGH_REPLICAS (retriable)
while the coordinator is loading, moving, busy with the previous transaction, or
unreachable; INVALID_PRODUCER_ID_MAPPING as is.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from wire.error_codes import ErrorCode
from wire.java_hash import partition_for
from wire.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from wire.record_batch import RecordBatch
from wire.topic_names import TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from kbroker.coordinators.txn_marker_sender import ClusterLinks, TxnMarkerSender
    from kbroker.replica.broker_state import BrokerState
    from txn import TransactionCoordinator

log = logging.getLogger("kbroker.txn")

# Test seam: on a single node, the first Produce of a producer's transaction to a partition
# waits this many ms before it is verified, as if its coordinator were on another broker;
# later ones of that transaction to the partition are not delayed (as if the answer were
# cached): a connection's later requests must still take effect after it.  Nothing but
# the compat tests sets it.
_SLOW_VERIFY_MS = int(os.environ.get("KBROKER_TEST_SLOW_TXN_VERIFY_MS", "0") or 0)
if _SLOW_VERIFY_MS:
    log.warning("KBROKER_TEST_SLOW_TXN_VERIFY_MS: transactional produce verification waits %d ms",
                _SLOW_VERIFY_MS)

VERIFY_VERSION = 4
VERIFY_TIMEOUT_S = 30.0
_RETRIABLE = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
              ErrorCode.NOT_COORDINATOR, ErrorCode.CONCURRENT_TRANSACTIONS)
Key = tuple[str, int, int, str, int]  # transactional id, producer id, epoch, topic, partition


def producer_answer(error: ErrorCode) -> ErrorCode:
    """The coordinator's verification answer as the producer is told it."""
    if error is ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error in _RETRIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return error


def unverified_producer(partition: Any, records: memoryview | None) -> tuple[int, int] | None:
    """(producer id, epoch) of a transactional batch that needs verification, or None."""
    if records is None:
        return None
    try:
        batch = RecordBatch(records, 0)
        if not batch.is_transactional:
            return None
        pid, epoch = batch.producer_id, batch.producer_epoch
    except Exception:  # noqa: BLE001 - a malformed batch is the log's to refuse
        return None
    if partition.has_ongoing_transaction(pid, epoch):
        return None
    return pid, epoch


class TxnVerifier:
    def __init__(self, state: BrokerState, coordinator: TransactionCoordinator, markers: TxnMarkerSender) -> None:
        """``state``: the partitions this broker holds and the config; ``markers``: the
        transaction coordinator's links to other brokers (its ``cluster``, and the sends)."""
        self.state = state
        self.coordinator = coordinator
        self.markers = markers
        self._answers: dict[Key, ErrorCode] = {}
        self._rerun: set[int] = set()  # id() of the Produce requests being handled again
        self._slowed: set[Key] = set()  # the test seam's first Produces (module top)

    @property
    def enabled(self) -> bool:
        return bool(self.state.config["transaction.partition.verification.enable"])

    def check_local(self, transactional_id: str, topic: str, index: int, partition: Any,
                    records: memoryview) -> ErrorCode:
        """The verdict for one partition of a Produce being handled now."""
        if not self.enabled:
            return ErrorCode.NONE
        producer = unverified_producer(partition, records)
        if producer is None:
            return ErrorCode.NONE
        pid, epoch = producer
        answered = self._answers.get((transactional_id, pid, epoch, topic, index))
        if answered is not None:
            return answered
        c = self.coordinator
        txn_partition = c.partition_for(transactional_id)
        if txn_partition not in c.owned and txn_partition not in c.loading:
            # coordinated elsewhere and not asked (remote_verification found no leader for
            # it, or the request came in before this broker knew the topic): retriable
            return ErrorCode.NOT_ENOUGH_REPLICAS if self._cluster() is not None else ErrorCode.NONE
        error = c.verify_partitions(transactional_id, pid, epoch, [(topic, index)])[(topic, index)]
        return producer_answer(error)

    def _cluster(self) -> ClusterLinks | None:
        return self.markers.cluster

    def remote_verification(self, req: Any, handle: Callable[[], Any]) -> Awaitable[Any] | None:
        """Cluster mode, before a Produce with a transactional id is handled: when its
        coordinator is another broker and some batch needs verification, an awaitable that
        asks that broker and then runs ``handle()`` (the Produce handler again); else None
        (handle it now)."""
        cluster = self._cluster()
        tid = req.transactional_id
        if tid is None or not self.enabled or id(req) in self._rerun:
            return None
        if cluster is None:
            return self._slowed_down(req, handle) if _SLOW_VERIFY_MS else None
        topic_info = cluster.cache.topic(TRANSACTION_STATE_TOPIC)
        if topic_info is None or not topic_info.partitions:
            return None  # no coordinator can have this id: check_local answers
        txn_partition = partition_for(tid, len(topic_info.partitions))
        c = self.coordinator
        if txn_partition in c.owned or txn_partition in c.loading:
            return None
        needed: dict[tuple[int, int], list[tuple[str, int]]] = {}
        for topic in req.topic_data:
            for pd in topic.partition_data:
                partition = self.state.partition(topic.name, pd.index)
                if partition is None or cluster.replicas.leader_error(topic.name, pd.index) is not None:
                    continue  # answered NOT_LEADER / UNKNOWN by the handler anyway
                producer = unverified_producer(partition, pd.records)
                if producer is not None:
                    needed.setdefault(producer, []).append((topic.name, pd.index))
        if not needed:
            return None
        return self._verify_then_handle(req, txn_partition, needed, handle)

    def _slowed_down(self, req: Any, handle: Callable[[], Any]) -> Awaitable[Any] | None:
        """The test seam (module top): an awaitable that waits, then handles ``req``, when
        some batch of it is its transaction's first to its partition; else None."""
        first = False
        for topic in req.topic_data:
            for pd in topic.partition_data:
                partition = self.state.partition(topic.name, pd.index)
                producer = None if partition is None else unverified_producer(partition, pd.records)
                if producer is not None:
                    key = (req.transactional_id, *producer, topic.name, pd.index)
                    if key not in self._slowed:
                        self._slowed.add(key)
                        first = True
        if not first:
            return None

        async def later() -> Any:
            await asyncio.sleep(_SLOW_VERIFY_MS / 1000)
            return await self._handle_again(req, handle)

        return later()

    async def _handle_again(self, req: Any, handle: Callable[[], Any],
                            answers: dict[Key, ErrorCode] | None = None) -> Any:
        """Handle ``req`` again, its verification done, with the coordinator's ``answers``."""
        answers = answers or {}
        # the re-run's checks read these synchronously; nothing else runs in between
        self._answers.update(answers)
        self._rerun.add(id(req))
        try:
            response = handle()
        finally:
            self._rerun.discard(id(req))
            for key in answers:
                self._answers.pop(key, None)
        return await response if inspect.isawaitable(response) else response

    async def _verify_then_handle(self, req: Any, txn_partition: int,
                                  needed: dict[tuple[int, int], list[tuple[str, int]]],
                                  handle: Callable[[], Any]) -> Any:
        tid = req.transactional_id
        answers: dict[Key, ErrorCode] = {}
        for (pid, epoch), tps in needed.items():
            errors = await self._ask(tid, txn_partition, pid, epoch, tps)
            for tp in tps:
                answers[(tid, pid, epoch, *tp)] = producer_answer(errors.get(tp, ErrorCode.NOT_ENOUGH_REPLICAS))
        return await self._handle_again(req, handle, answers)

    async def _ask(self, tid: str, txn_partition: int, pid: int, epoch: int,
                   tps: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        cluster = self._cluster()
        leader = cluster.cache.leader(TRANSACTION_STATE_TOPIC, txn_partition)
        by_topic: dict[str, list[int]] = {}
        for topic, index in tps:
            by_topic.setdefault(topic, []).append(index)
        request = AddPartitionsToTxnRequest(transactions=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
                transactional_id=tid, producer_id=pid, producer_epoch=epoch, verify_only=True,
                topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps)
                        for t, ps in by_topic.items()])])
        fut = self.markers.send_to_broker(leader, request, VERIFY_VERSION) if leader >= 0 else None
        if fut is None:
            return {}
        try:
            response: AddPartitionsToTxnResponse = await asyncio.wait_for(fut, VERIFY_TIMEOUT_S)
        except (TimeoutError, asyncio.CancelledError):
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            return {}
        if response.error_code:
            return {tp: ErrorCode(response.error_code) for tp in tps}
        out = {}
        for result in response.results_by_transaction:
            for t in result.topic_results:
                for p in t.results_by_partition:
                    out[(t.name, p.partition_index)] = ErrorCode(p.partition_error_code)
        return out
