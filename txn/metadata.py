"""One transactional id's state (Kafka's ``TransactionMetadata``) and the transition
protocol it follows.

A change is two steps, so that it takes effect only once its record is in the log:
``prepare_*`` checks the transition, marks ``pending_state`` and returns a
:class:`TxnTransit` (the target values, which are what the record says);
``complete_transition(transit)`` applies it after the append succeeded, and
``abort_transition()`` drops it after a failed one.  While a transition is pending every
other request for the id answers CONCURRENT_TRANSACTIONS (``pending_transition_in_progress``).

Epochs are int16: ``NO_PRODUCER_EPOCH`` (-1) before the first InitProducerId; an epoch is
exhausted at ``Short.MaxValue - 1`` (Kafka keeps the last value for the fencing bump) and
the id then rotates to a new producer id with epoch 0.  Partitions are (topic, index).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from txn.states import VALID_PREVIOUS, TxnState

__all__ = ["NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "TxnTransit", "TransactionMetadata",
           "IllegalTransition", "is_epoch_exhausted"]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767


def is_epoch_exhausted(epoch: int) -> bool:
    return epoch >= SHORT_MAX - 1


class IllegalTransition(Exception):
    """A transition the state machine does not allow (a coordinator bug, or a replayed log
    that makes no sense); the call answers an error instead of changing anything."""


@dataclass(slots=True)
class TxnTransit:
    """The values a transition moves to (Kafka's ``TxnTransitMetadata``)."""

    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]]
    txn_start_timestamp_ms: int
    txn_last_update_timestamp_ms: int


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    txn_start_timestamp_ms: int = -1
    txn_last_update_timestamp_ms: int = -1
    pending_state: TxnState | None = None

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    # ------------------------------------------------------------ the protocol
    def _current(self) -> TxnTransit:
        return TxnTransit(self.producer_id, self.previous_producer_id, self.next_producer_id,
                          self.producer_epoch, self.last_producer_epoch, self.txn_timeout_ms,
                          self.state, frozenset(self.partitions), self.txn_start_timestamp_ms,
                          self.txn_last_update_timestamp_ms)

    def _prepare(self, transit: TxnTransit) -> TxnTransit:
        if self.pending_state is not None:
            raise IllegalTransition(f"{self.transactional_id}: transition to {transit.state.name} "
                                    f"while {self.pending_state.name} is pending")
        if self.state not in VALID_PREVIOUS[transit.state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state.name} -> "
                                    f"{transit.state.name} is not a valid transition")
        if transit.producer_epoch < 0 and transit.state is not TxnState.DEAD:
            raise IllegalTransition(f"{self.transactional_id}: negative producer epoch")
        self.pending_state = transit.state
        return transit

    def complete_transition(self, transit: TxnTransit) -> None:
        """The transit's record is in the log: it takes effect."""
        if self.pending_state is not transit.state:
            raise IllegalTransition(f"{self.transactional_id}: completing {transit.state.name} "
                                    f"but {self.pending_state!r} is pending")
        self.producer_id = transit.producer_id
        self.previous_producer_id = transit.previous_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.txn_start_timestamp_ms = transit.txn_start_timestamp_ms
        self.txn_last_update_timestamp_ms = transit.txn_last_update_timestamp_ms
        self.pending_state = None

    def abort_transition(self) -> None:
        """The append failed: nothing changes (Kafka's ``pendingState = None``)."""
        self.pending_state = None

    def load(self, transit: TxnTransit) -> None:
        """Replay: the logged values become the state, whatever came before."""
        self.pending_state = transit.state
        self.complete_transition(transit)

    # ------------------------------------------------------------ transitions
    def prepare_increment_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                now_ms: int) -> TxnTransit | str:
        """InitProducerId on an idle id: bump the epoch (or recognise a retry).  Returns the
        transit, or the name of the error ("PRODUCER_FENCED")."""
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch  # a retry: no bump
        else:
            return "PRODUCER_FENCED"
        return self._prepare(replace(
            self._current(), producer_epoch=epoch, last_producer_epoch=last,
            txn_timeout_ms=timeout_ms, state=TxnState.EMPTY, partitions=frozenset(),
            txn_start_timestamp_ms=-1, txn_last_update_timestamp_ms=now_ms))

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        """The epoch is exhausted: a new producer id with epoch 0."""
        return self._prepare(replace(
            self._current(), producer_id=new_producer_id, previous_producer_id=self.producer_id,
            next_producer_id=NO_PRODUCER_ID, producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            txn_timeout_ms=timeout_ms, state=TxnState.EMPTY, partitions=frozenset(),
            txn_start_timestamp_ms=-1, txn_last_update_timestamp_ms=now_ms))

    def prepare_fence_epoch(self) -> int:
        """Fence the producer of an ongoing transaction before aborting it (Kafka's
        ``prepareFenceProducerEpoch``): marks PrepareEpochFence pending and returns the
        epoch the abort is written with (one above the current one unless exhausted)."""
        if self.state is not TxnState.ONGOING or self.pending_state is not None:
            raise IllegalTransition(f"{self.transactional_id}: cannot fence in {self.state.name}")
        self.pending_state = TxnState.PREPARE_EPOCH_FENCE
        return self.producer_epoch if self.is_producer_epoch_exhausted else self.producer_epoch + 1

    def prepare_add_partitions(self, partitions: set[tuple[str, int]], now_ms: int) -> TxnTransit:
        start = now_ms if self.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                         TxnState.COMPLETE_ABORT) else self.txn_start_timestamp_ms
        keep = self.partitions if self.state is TxnState.ONGOING else set()
        return self._prepare(replace(
            self._current(), state=TxnState.ONGOING, partitions=frozenset(keep | partitions),
            txn_start_timestamp_ms=start, txn_last_update_timestamp_ms=now_ms))

    def prepare_abort_or_commit(self, state: TxnState, now_ms: int,
                                fenced_epoch: int | None = None) -> TxnTransit:
        """PrepareCommit/PrepareAbort; ``fenced_epoch``: the abort of a fenced transaction,
        written with the bumped epoch (the pending PrepareEpochFence gives way to it)."""
        transit = replace(self._current(), state=state, txn_last_update_timestamp_ms=now_ms)
        if fenced_epoch is not None:
            if self.pending_state is not TxnState.PREPARE_EPOCH_FENCE:
                raise IllegalTransition(f"{self.transactional_id}: no epoch fence pending")
            self.pending_state = None
            transit.producer_epoch = fenced_epoch
            transit.last_producer_epoch = NO_PRODUCER_EPOCH
        return self._prepare(transit)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        state = (TxnState.COMPLETE_COMMIT if self.state is TxnState.PREPARE_COMMIT
                 else TxnState.COMPLETE_ABORT)
        return self._prepare(replace(self._current(), state=state, partitions=frozenset(),
                                     txn_last_update_timestamp_ms=now_ms))

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(replace(self._current(), state=TxnState.DEAD, partitions=frozenset()))
