"""Record states, acknowledge types and the in-flight state of a batch or an offset.

Ports ``RecordState``, ``AcknowledgeType``, ``DeliveryCountOps``, ``InFlightState`` and
``InFlightBatch`` (``org.apache.kafka.server.share.fetch``, Kafka 4.3).  An acquisition lock
is a deadline (``deadline_ms``) instead of a timer task: ``SharePartition.expire(now_ms)``
plays the timer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class RecordState(IntEnum):
    """Kafka's ``RecordState`` ids (the bytes the share coordinator persists)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3  # KIP-1191; never entered here
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AcknowledgeType(IntEnum):
    """Kafka's ``AcknowledgeType`` ids.  0 in a request's list is a gap (the record is absent)."""

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


GAP = 0

# SharePartition.ACK_TYPE_TO_RECORD_STATE
ACK_TYPE_TO_RECORD_STATE = {
    GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}

EMPTY_MEMBER_ID = ""

# DeliveryCountOps
INCREASE, NO_OP = 1, 0


def valid_transition(current: RecordState, new: RecordState) -> bool:
    """``RecordState.validateTransition``: AVAILABLE -> ACQUIRED -> AVAILABLE | ACKNOWLEDGED | ARCHIVED."""
    if current == new or current.terminal:
        return False
    return not (current == RecordState.AVAILABLE and new != RecordState.ACQUIRED)


@dataclass(slots=True)
class InFlightState:
    """The state of one record, or of a whole batch while it is tracked as one."""

    state: RecordState
    delivery_count: int
    member_id: str
    deadline_ms: int | None = None  # the acquisition lock; None when no lock is held

    def try_update(self, new: RecordState, ops: int, max_delivery_count: int, member_id: str) -> bool:
        """``InFlightState.tryUpdateState``: a release at the delivery limit archives instead."""
        if new == RecordState.AVAILABLE and self.delivery_count >= max_delivery_count:
            new = RecordState.ARCHIVED
        if not valid_transition(self.state, new):
            return False
        self.state = new
        if new != RecordState.ARCHIVED:
            self.delivery_count += ops
        self.member_id = member_id
        return True

    def archive(self) -> None:
        """``InFlightState.archive``: terminal whatever the state (LSO movement, compaction)."""
        self.state = RecordState.ARCHIVED
        self.member_id = EMPTY_MEMBER_ID
        self.deadline_ms = None

    def snapshot(self) -> tuple[RecordState, int, str, int | None]:
        return self.state, self.delivery_count, self.member_id, self.deadline_ms

    def restore(self, snap: tuple[RecordState, int, str, int | None]) -> None:
        self.state, self.delivery_count, self.member_id, self.deadline_ms = snap


class InFlightBatch:
    """``InFlightBatch``: one state for ``first..last`` until offsets diverge, then one per offset.

    Kafka keeps the batch shape because it decides what ``acquire`` returns (a whole cached batch
    is handed out as one range) and when the cache may drop entries (only whole batches).
    """

    __slots__ = ("first_offset", "last_offset", "batch_state", "offset_state")

    def __init__(self, first_offset: int, last_offset: int, state: InFlightState) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.batch_state: InFlightState | None = state
        self.offset_state: dict[int, InFlightState] | None = None  # ordered by offset

    def split(self) -> None:
        """``maybeInitializeOffsetStateUpdate``: per-offset states, each inheriting the batch's lock."""
        if self.offset_state is None:
            b = self.batch_state
            assert b is not None
            self.offset_state = {
                o: InFlightState(b.state, b.delivery_count, b.member_id, b.deadline_ms)
                for o in range(self.first_offset, self.last_offset + 1)
            }
            self.batch_state = None

    def states(self) -> list[tuple[int, int, InFlightState]]:
        """(first, last, state) runs: one for a batch-tracked batch, one per offset otherwise."""
        if self.offset_state is None:
            assert self.batch_state is not None
            return [(self.first_offset, self.last_offset, self.batch_state)]
        return [(o, o, s) for o, s in self.offset_state.items()]

    def state_at(self, offset: int) -> InFlightState:
        if self.offset_state is None:
            assert self.batch_state is not None
            return self.batch_state
        return self.offset_state[offset]

    def __repr__(self) -> str:
        inner = self.batch_state if self.offset_state is None else self.offset_state
        return f"InFlightBatch({self.first_offset}-{self.last_offset}, {inner})"


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """One range handed to a consumer (ShareFetchResponse's AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


def accumulate(result: list[AcquiredRecords], acquired: list[AcquiredRecords]) -> None:
    """``ShareFetchUtils.accumulateAcquiredRecords``: merge adjacent ranges of equal delivery count."""
    if not acquired:
        return
    first, last, count = acquired[0].first_offset, acquired[0].last_offset, acquired[0].delivery_count
    for cur in acquired[1:]:
        if cur.first_offset == last + 1 and cur.delivery_count == count:
            last = cur.last_offset
        else:
            result.append(AcquiredRecords(first, last, count))
            first, last, count = cur.first_offset, cur.last_offset, cur.delivery_count
    result.append(AcquiredRecords(first, last, count))
