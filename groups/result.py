"""What every coordinator call hands back to the adapter: records to store, then answers.

Store, then propagate (Kafka's ``GroupMetadataManager.storeGroup`` / ``storeOffsets``): a
call's state change that needs a record only takes effect, and its answers only leave, once
the adapter reports that the record was appended.  The adapter's loop, whatever its append
is (synchronous today, awaited acks=all later)::

    result = coordinator.some_call(request, version)
    while result is not None:
        errors = [append(w.group_id, w.records) for w in result.writes]   # NONE or the code
        result = result.appended(errors)          # follow-up work, or None
    answer with the first result's ``response`` / ``pending``

Appends of one ``__consumer_offsets`` partition must keep the order of the writes handed out
(a later call's record may supersede an earlier one; replay keeps the last).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from groups.pending import Pending
from groups.records import Record
from wire.error_codes import ErrorCode

__all__ = ["Result", "Write"]


@dataclass(slots=True)
class Write:
    """One group's records for its ``__consumer_offsets`` partition, appended as one batch.

    ``on_appended(error)`` runs once the append's outcome is known: ``ErrorCode.NONE``, or the
    error the log answered (MESSAGE_TOO_LARGE, KAFKA_STORAGE_ERROR, NOT_ENOUGH_REPLICAS ...,
    unmapped: the continuation maps it to the group or offset error Kafka answers).  None: the
    records carry nothing anyone waits for (Kafka only logs such a failure).

    ``producer_id`` >= 0 (TxnOffsetCommit): the batch is a transactional batch of that
    producer id and ``producer_epoch`` (base sequence 0, as Kafka's coordinator writes it).
    ``base_offset`` is set by the adapter to the batch's first offset before
    ``on_appended`` runs (-1: not known), so replay knows each record's offset."""

    group_id: str
    records: list[Record]
    on_appended: Callable[[ErrorCode], None] | None = None
    producer_id: int = -1
    producer_epoch: int = -1
    base_offset: int = -1


@dataclass(slots=True)
class Result:
    """``writes`` go to ``__consumer_offsets`` (in order) before any answer of this call
    leaves: ``response`` for the caller, or ``pending`` (JoinGroup and SyncGroup) whose
    callbacks deliver it.  ``deliveries`` are parked requests (the caller's or other
    members') that this call completed; their callbacks run in :meth:`appended`.

    A Result without writes is settled when handed out (its deliveries already released);
    otherwise ``response``/``pending`` are final only after :meth:`appended`."""

    writes: list[Write] = field(default_factory=list)
    response: Any = None
    pending: Pending | None = None
    deliveries: list[Pending] = field(default_factory=list)
    # The coordinator's collector: what the continuations produced, as a new Result.
    follow_up: Callable[[], Result] | None = None
    settled: bool = False

    @property
    def records(self) -> list[Record]:
        """Every record of every write, in append order."""
        return [r for w in self.writes for r in w.records]

    def appended(self, errors: Sequence[ErrorCode | int] | None = None) -> Result | None:
        """Report the outcome of each write (same order; None: all succeeded).  Runs the
        continuations, then releases the answers this call completed.  Returns the follow-up
        Result (records and answers the continuations produced, e.g. a failed SyncGroup
        rebalancing the group), to be handled the same way, or None."""
        if self.settled:
            return None
        self.settled = True
        if errors is None:
            errors = [ErrorCode.NONE] * len(self.writes)
        if len(errors) != len(self.writes):
            raise ValueError(f"{len(errors)} outcome(s) for {len(self.writes)} write(s)")
        continued = False
        for write, error in zip(self.writes, errors, strict=True):
            if write.on_appended is not None:
                write.on_appended(ErrorCode(error))
                continued = True
        for pending in self.deliveries:
            pending.release()
        if not continued or self.follow_up is None:
            return None
        follow = self.follow_up()  # settled already when it has nothing to store
        return follow if follow.writes else None
