"""The transaction coordinator (Kafka's ``TransactionCoordinator`` with the cache of
``TransactionStateManager``), for transaction version 1 (no epoch bump per transaction).

Everything it does to the outside goes through three injected callables:

* ``store(partition, key, value, on_appended)``: append one record to partition
  ``partition`` of ``__transaction_state`` (acks=all); ``on_appended(error)`` runs exactly
  once with ``ErrorCode.NONE`` or the log's error, possibly before ``store`` returns;
* ``send_markers(job)``: write the COMMIT/ABORT markers of :class:`MarkerJob` to every
  partition of the transaction; the sender reports each written partition with
  :meth:`TransactionCoordinator.marker_written` and stops when ``job_is_current`` turns false;
* ``generate_producer_id()``: a fresh producer id, or None while none is available.

Answers go to the ``respond`` callback each call takes (the handler's future), once.
Store, then answer: a state change takes effect (``TransactionMetadata.complete_transition``)
and its answer leaves only after its record is appended; a failed append is answered with
Kafka's mapping of the log error and changes nothing.

Ownership: the coordinator serves the transactional ids of the ``__transaction_state``
partitions it owns (``complete_load(partition, coordinator_epoch)``), answers
COORDINATOR_LOAD_IN_PROGRESS for a partition being loaded and NOT_COORDINATOR for every
other.  The coordinator epoch is the partition's leader epoch; markers carry it, so a
broker can refuse markers from a deposed coordinator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from log.clock import Clock
from txn.config import TxnConfig
from txn.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransition,
    TransactionMetadata,
    TxnTransit,
    is_epoch_exhausted,
)
from txn.records import decode_key, decode_value, key_bytes, value_bytes
from txn.states import TxnState
from wire.error_codes import ErrorCode
from wire.java_hash import partition_for

__all__ = ["MarkerJob", "TransactionCoordinator", "append_error_to_coordinator_error"]

log = logging.getLogger("txn.coordinator")

E = ErrorCode
OnAppended = Callable[[ErrorCode], None]
Store = Callable[[int, bytes, "bytes | None", OnAppended], None]
InitRespond = Callable[[ErrorCode, int, int], None]     # error, producer id, epoch
Respond = Callable[[ErrorCode], None]


@dataclass(slots=True)
class MarkerJob:
    """The markers of one completing transaction: ``partitions`` still to be written."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    partitions: set[tuple[str, int]] = field(default_factory=set)


def append_error_to_coordinator_error(error: ErrorCode) -> ErrorCode:
    """Kafka's ``TransactionStateManager.appendTransactionToLog`` mapping of an append's
    error to what the client is told."""
    if error in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS,
                 E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE
    if error in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if error in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE):
        return E.UNKNOWN_SERVER_ERROR
    return error  # any other code passes through, as in Kafka


class TransactionCoordinator:
    def __init__(self, config: TxnConfig, clock: Clock, store: Store,
                 send_markers: Callable[[MarkerJob], None],
                 generate_producer_id: Callable[[], int | None]) -> None:
        self.config = config
        self.clock = clock
        self._store = store
        self._send_markers = send_markers
        self._generate_producer_id = generate_producer_id
        self.num_partitions = config.num_partitions
        self.owned: dict[int, int] = {}       # __transaction_state partition -> coordinator epoch
        self.loading: set[int] = set()
        self.txns: dict[str, TransactionMetadata] = {}
        self._complete_retries: set[str] = set()  # markers written, Complete* append failed

    # ------------------------------------------------------------ ownership and loading
    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def begin_load(self, partition: int) -> None:
        self.loading.add(partition)

    def replay(self, key: bytes | memoryview, value: bytes | memoryview | None) -> None:
        """Apply one ``__transaction_state`` record (the last record of an id wins)."""
        txn_id = decode_key(key)
        if txn_id is None:
            return
        transit = decode_value(value)
        if transit is None or transit.state is TxnState.DEAD:
            self.txns.pop(txn_id, None)
            return
        md = self.txns.get(txn_id)
        if md is None:
            md = self.txns[txn_id] = TransactionMetadata(txn_id, transit.producer_id)
        md.pending_state = None
        md.load(transit)

    def complete_load(self, partition: int, coordinator_epoch: int) -> None:
        """The partition is replayed: serve its ids, and finish what the previous coordinator
        left prepared (Kafka resends the markers of PrepareCommit/PrepareAbort on load)."""
        self.loading.discard(partition)
        self.owned[partition] = coordinator_epoch
        for md in list(self.txns.values()):
            if self.partition_for(md.transactional_id) == partition and md.state.is_prepare:
                self._start_markers(md, md.state is TxnState.PREPARE_COMMIT, coordinator_epoch)

    def unload_partition(self, partition: int) -> None:
        """Leadership moved away: forget the partition's ids; appends and marker jobs in
        flight for them end in NOT_COORDINATOR / are dropped."""
        self.owned.pop(partition, None)
        self.loading.discard(partition)
        for txn_id in [t for t in self.txns if self.partition_for(t) == partition]:
            del self.txns[txn_id]
            self._complete_retries.discard(txn_id)

    def _state_of(self, txn_id: str) -> tuple[ErrorCode, int, TransactionMetadata | None]:
        """Kafka's ``getTransactionState``: (error, coordinator epoch, metadata or None)."""
        partition = self.partition_for(txn_id)
        if partition in self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS, -1, None
        epoch = self.owned.get(partition)
        if epoch is None:
            return E.NOT_COORDINATOR, -1, None
        return E.NONE, epoch, self.txns.get(txn_id)

    def _is_current(self, md: TransactionMetadata, coordinator_epoch: int) -> bool:
        return (self.txns.get(md.transactional_id) is md
                and self.owned.get(self.partition_for(md.transactional_id)) == coordinator_epoch)

    # ------------------------------------------------------------ appends
    def _append(self, md: TransactionMetadata, coordinator_epoch: int, transit: TxnTransit,
                done: Callable[[ErrorCode], None]) -> None:
        """Store ``transit`` for ``md``; on success it takes effect, then ``done(NONE)``;
        otherwise the pending transition is dropped and ``done`` gets the client's error."""
        partition = self.partition_for(md.transactional_id)
        value = None if transit.state is TxnState.DEAD else value_bytes(transit)

        def on_appended(error: ErrorCode) -> None:
            if not self._is_current(md, coordinator_epoch):
                # unloaded (or reloaded with another epoch) meanwhile: not ours any more
                done(E.NOT_COORDINATOR)
                return
            if error is not E.NONE:
                log.info("appending %s of transactional id %s failed: %s", transit.state.name,
                         md.transactional_id, error.name)
                md.abort_transition()
                done(append_error_to_coordinator_error(error))
                return
            md.complete_transition(transit)
            done(E.NONE)

        self._store(partition, key_bytes(md.transactional_id), value, on_appended)

    # ------------------------------------------------------------ InitProducerId
    def init_producer_id(self, txn_id: str, timeout_ms: int, expected_pid: int,
                         expected_epoch: int, respond: InitRespond) -> None:
        """InitProducerId with a transactional id (KIP-98, KIP-360 recovery when
        ``expected_pid``/``expected_epoch`` are not -1)."""
        def fail(error: ErrorCode) -> None:
            respond(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)

        if not txn_id:
            return fail(E.INVALID_REQUEST)
        if timeout_ms <= 0 or timeout_ms > self.config.max_timeout_ms:
            return fail(E.INVALID_TRANSACTION_TIMEOUT)
        error, coordinator_epoch, md = self._state_of(txn_id)
        if error is not E.NONE:
            return fail(error)
        now = self.clock.milliseconds()
        if md is None:
            pid = self._generate_producer_id()
            if pid is None:
                return fail(E.COORDINATOR_LOAD_IN_PROGRESS)  # retriable, as the non-txn path
            md = self.txns[txn_id] = TransactionMetadata(
                txn_id, pid, txn_timeout_ms=timeout_ms, txn_last_update_timestamp_ms=now)
        expected = (expected_pid, expected_epoch) if expected_pid != -1 and expected_epoch != -1 \
            else None
        if md.pending_transition_in_progress:
            return fail(E.CONCURRENT_TRANSACTIONS)
        if expected is not None and not _is_valid_producer_id(md, *expected):
            return fail(E.PRODUCER_FENCED)
        state = md.state
        if state.is_prepare or state in (TxnState.DEAD, TxnState.PREPARE_EPOCH_FENCE):
            return fail(E.CONCURRENT_TRANSACTIONS)
        if state is TxnState.ONGOING:
            # fence the producer and abort its transaction; the caller retries meanwhile
            fenced_epoch = md.prepare_fence_epoch()

            def after_abort(error: ErrorCode) -> None:
                fail(error if error is not E.NONE else E.CONCURRENT_TRANSACTIONS)

            self._end(md, coordinator_epoch, md.producer_id, fenced_epoch, False, after_abort,
                      from_client=False)
            return None
        # Empty, CompleteCommit, CompleteAbort
        try:
            if md.is_producer_epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
                pid = self._generate_producer_id()
                if pid is None:
                    return fail(E.COORDINATOR_LOAD_IN_PROGRESS)
                transit: TxnTransit | str = md.prepare_producer_id_rotation(
                    pid, timeout_ms, now, expected is not None)
            else:
                transit = md.prepare_increment_epoch(
                    timeout_ms, None if expected is None else expected[1], now)
        except IllegalTransition:
            log.exception("InitProducerId for %s", txn_id)
            return fail(E.CONCURRENT_TRANSACTIONS)
        if isinstance(transit, str):
            return fail(E[transit])
        done_transit = transit

        def done(error: ErrorCode) -> None:
            if error is E.NONE:
                respond(E.NONE, done_transit.producer_id, done_transit.producer_epoch)
            else:
                fail(error)

        self._append(md, coordinator_epoch, done_transit, done)
        return None

    # ------------------------------------------------------------ AddPartitions / AddOffsets
    def add_partitions(self, txn_id: str, producer_id: int, producer_epoch: int,
                       partitions: set[tuple[str, int]], respond: Respond) -> None:
        """AddPartitionsToTxn (client form) and AddOffsetsToTxn (its offsets partition):
        one error for the whole call."""
        if not txn_id:
            return respond(E.INVALID_REQUEST)
        error, coordinator_epoch, md = self._state_of(txn_id)
        if error is not E.NONE:
            return respond(error)
        if md is None or md.producer_id != producer_id:
            return respond(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != producer_epoch:
            return respond(E.PRODUCER_FENCED)
        if md.pending_transition_in_progress or md.state.is_prepare:
            return respond(E.CONCURRENT_TRANSACTIONS)
        if md.state is TxnState.ONGOING and partitions <= md.partitions:
            return respond(E.NONE)  # nothing new: no record
        try:
            transit = md.prepare_add_partitions(partitions, self.clock.milliseconds())
        except IllegalTransition:
            log.exception("AddPartitionsToTxn for %s", txn_id)
            return respond(E.INVALID_TXN_STATE)
        self._append(md, coordinator_epoch, transit, respond)
        return None

    def verify_partitions(self, txn_id: str, producer_id: int, producer_epoch: int,
                          partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """KIP-890 part 1 (AddPartitionsToTxn v4 ``verify_only``): is each partition part of
        the producer's ongoing transaction?  No record is written."""
        def every(error: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return {tp: error for tp in partitions}

        if not txn_id:
            return every(E.INVALID_REQUEST)
        error, _, md = self._state_of(txn_id)
        if error is not E.NONE:
            return every(error)
        if md is None or md.producer_id != producer_id:
            return every(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != producer_epoch:
            return every(E.PRODUCER_FENCED)
        if md.state.is_prepare:
            return every(E.CONCURRENT_TRANSACTIONS)
        return {tp: E.NONE if tp in md.partitions else E.INVALID_TXN_STATE for tp in partitions}

    # ------------------------------------------------------------ EndTxn and markers
    def end_txn(self, txn_id: str, producer_id: int, producer_epoch: int, committed: bool,
                respond: Respond) -> None:
        if not txn_id:
            return respond(E.INVALID_REQUEST)
        error, coordinator_epoch, md = self._state_of(txn_id)
        if error is not E.NONE:
            return respond(error)
        if md is None:
            return respond(E.INVALID_PRODUCER_ID_MAPPING)
        self._end(md, coordinator_epoch, producer_id, producer_epoch, committed, respond,
                  from_client=True)
        return None

    def _end(self, md: TransactionMetadata, coordinator_epoch: int, producer_id: int,
             producer_epoch: int, committed: bool, respond: Respond, *, from_client: bool) -> None:
        """Kafka's ``endTransaction`` (TV1): write PrepareCommit/PrepareAbort, answer, then
        send the markers; ``from_client`` False is the coordinator's own abort of a fenced
        or timed-out transaction (``producer_epoch`` is then the fencing epoch)."""
        fencing = md.pending_state is TxnState.PREPARE_EPOCH_FENCE
        if md.producer_id != producer_id:
            error = E.INVALID_PRODUCER_ID_MAPPING
        elif (from_client and producer_epoch != md.producer_epoch) or producer_epoch < md.producer_epoch:
            error = E.PRODUCER_FENCED
        elif md.pending_transition_in_progress and not (fencing and not from_client):
            error = E.CONCURRENT_TRANSACTIONS
        else:
            error = _end_state_error(md.state, committed)
        if error is not None:
            if fencing and not from_client:
                md.abort_transition()
            return respond(error)
        target = TxnState.PREPARE_COMMIT if committed else TxnState.PREPARE_ABORT
        try:
            transit = md.prepare_abort_or_commit(
                target, self.clock.milliseconds(),
                fenced_epoch=producer_epoch if fencing and not from_client else None)
        except IllegalTransition:
            log.exception("EndTxn for %s", md.transactional_id)
            md.abort_transition()
            return respond(E.INVALID_TXN_STATE)

        def prepared(error: ErrorCode) -> None:
            if error is not E.NONE:
                respond(error)
                return
            respond(E.NONE)  # TV1: the client is answered once the prepare is logged
            self._start_markers(md, committed, coordinator_epoch)

        self._append(md, coordinator_epoch, transit, prepared)
        return None

    def _start_markers(self, md: TransactionMetadata, committed: bool, coordinator_epoch: int) -> None:
        job = MarkerJob(md.transactional_id, md.producer_id, md.producer_epoch, committed,
                        coordinator_epoch, set(md.partitions))
        if not job.partitions:
            self._complete(md, coordinator_epoch)
            return
        self._send_markers(job)

    def job_is_current(self, job: MarkerJob) -> bool:
        """Should the sender go on with ``job``?  False once the coordinator lost the id's
        partition, or the transaction moved on (fenced, completed)."""
        md = self.txns.get(job.transactional_id)
        if md is None or not self._is_current(md, job.coordinator_epoch):
            return False
        want = TxnState.PREPARE_COMMIT if job.committed else TxnState.PREPARE_ABORT
        return (md.state is want and md.producer_id == job.producer_id
                and md.producer_epoch == job.producer_epoch)

    def marker_written(self, job: MarkerJob, tp: tuple[str, int]) -> None:
        """The sender wrote ``job``'s marker to ``tp`` (or the partition is gone); after the
        last one the transaction completes (CompleteCommit/CompleteAbort is logged)."""
        job.partitions.discard(tp)
        if not self.job_is_current(job):
            return
        md = self.txns[job.transactional_id]
        md.partitions.discard(tp)  # DescribeTransactions shows the partitions left
        if not md.partitions and not md.pending_transition_in_progress:
            self._complete(md, job.coordinator_epoch)

    def _complete(self, md: TransactionMetadata, coordinator_epoch: int) -> None:
        transit = md.prepare_complete(self.clock.milliseconds())

        def completed(error: ErrorCode) -> None:
            if error is E.NONE:
                self._complete_retries.discard(md.transactional_id)
            elif error is not E.NOT_COORDINATOR:
                # Kafka's channel manager retries the append; the next poll does
                self._complete_retries.add(md.transactional_id)

        self._append(md, coordinator_epoch, transit, completed)

    # ------------------------------------------------------------ timers
    def poll(self) -> None:
        """Retry Complete* appends that failed (called on the abort-timeout tick)."""
        for txn_id in list(self._complete_retries):
            self._complete_retries.discard(txn_id)
            error, coordinator_epoch, md = self._state_of(txn_id)
            if (error is E.NONE and md is not None and md.state.is_prepare
                    and not md.partitions and not md.pending_transition_in_progress):
                self._complete(md, coordinator_epoch)

    def abort_timed_out_transactions(self) -> list[str]:
        """Kafka's ``abortTimedOutTransactions``: fence and abort every ongoing transaction
        older than its timeout; returns the ids it started aborting."""
        self.poll()
        now = self.clock.milliseconds()
        aborted = []
        for md in list(self.txns.values()):
            if (md.state is not TxnState.ONGOING or md.pending_transition_in_progress
                    or md.txn_start_timestamp_ms + md.txn_timeout_ms >= now):
                continue
            error, coordinator_epoch, _ = self._state_of(md.transactional_id)
            if error is not E.NONE:
                continue
            log.info("aborting transaction %s (producer id %d, epoch %d): it started %d ms ago, "
                     "its timeout is %d ms", md.transactional_id, md.producer_id,
                     md.producer_epoch, now - md.txn_start_timestamp_ms, md.txn_timeout_ms)
            fenced_epoch = md.prepare_fence_epoch()
            txn_id = md.transactional_id

            def after(error: ErrorCode, txn_id: str = txn_id) -> None:
                if error is not E.NONE:
                    log.info("aborting timed-out transaction %s failed: %s", txn_id, error.name)

            self._end(md, coordinator_epoch, md.producer_id, fenced_epoch, False, after,
                      from_client=False)
            aborted.append(txn_id)
        return aborted

    def remove_expired_transactional_ids(self) -> list[str]:
        """Kafka's ``removeExpiredTransactionalIds``: an idle id (Empty or Complete*) not
        used for ``transactional.id.expiration.ms`` gets a tombstone and leaves memory."""
        now = self.clock.milliseconds()
        removed = []
        for md in list(self.txns.values()):
            if (md.state not in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
                    or md.pending_transition_in_progress
                    or md.txn_last_update_timestamp_ms > now - self.config.transactional_id_expiration_ms):
                continue
            error, coordinator_epoch, _ = self._state_of(md.transactional_id)
            if error is not E.NONE:
                continue
            transit = md.prepare_dead()

            def dead(error: ErrorCode, md: TransactionMetadata = md) -> None:
                if error is E.NONE and self.txns.get(md.transactional_id) is md:
                    del self.txns[md.transactional_id]

            self._append(md, coordinator_epoch, transit, dead)
            removed.append(md.transactional_id)
        return removed

    # ------------------------------------------------------------ admin
    def describe(self, txn_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        error, _, md = self._state_of(txn_id)
        if error is not E.NONE:
            return error, None
        if md is None or md.state is TxnState.DEAD:
            return E.TRANSACTIONAL_ID_NOT_FOUND, None
        return E.NONE, md

    def list_transactions(self, states: set[TxnState], producer_ids: set[int],
                          duration_ms: int) -> tuple[ErrorCode, list[TransactionMetadata]]:
        if self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS, []
        now = self.clock.milliseconds()
        out = []
        for md in self.txns.values():
            if self.partition_for(md.transactional_id) not in self.owned or md.state is TxnState.DEAD:
                continue
            if states and md.state not in states:
                continue
            if producer_ids and md.producer_id not in producer_ids:
                continue
            # KIP-994: only those running longer than the duration (Kafka compares the start
            # timestamp whatever the state: an idle id's -1 start always passes)
            if duration_ms >= 0 and now - md.txn_start_timestamp_ms <= duration_ms:
                continue
            out.append(md)
        return E.NONE, sorted(out, key=lambda m: m.transactional_id)


def _is_valid_producer_id(md: TransactionMetadata, producer_id: int, epoch: int) -> bool:
    """Kafka's ``isValidProducerId`` (KIP-360): the request's id is the current one, the
    metadata is new, or it is the previous id with an exhausted epoch (a retried rotation)."""
    return (md.producer_epoch == NO_PRODUCER_EPOCH or producer_id == md.producer_id
            or (producer_id == md.previous_producer_id and is_epoch_exhausted(epoch)))


def _end_state_error(state: TxnState, committed: bool) -> ErrorCode | None:
    """EndTxn in ``state``: None to go on (Ongoing), else the answer (NONE for a retry of a
    completed end)."""
    if state is TxnState.ONGOING:
        return None
    if state is TxnState.COMPLETE_COMMIT:
        return E.NONE if committed else E.INVALID_TXN_STATE
    if state is TxnState.COMPLETE_ABORT:
        return E.INVALID_TXN_STATE if committed else E.NONE
    if state is TxnState.PREPARE_COMMIT:
        return E.CONCURRENT_TRANSACTIONS if committed else E.INVALID_TXN_STATE
    if state is TxnState.PREPARE_ABORT:
        return E.INVALID_TXN_STATE if committed else E.CONCURRENT_TRANSACTIONS
    return E.INVALID_TXN_STATE  # Empty, Dead, PrepareEpochFence
