"""``SharePartition``: the per-(group, topic-partition) record states of a share group.

A port of ``kafka.server.share.SharePartition`` (Kafka 4.3.1) without its I/O: no persister
(state transitions commit at once), no log reads (the caller gives the fetched batches'
offsets), no timer thread (``expire(now_ms)`` fires the acquisition locks that are due), no
delayed-fetch purgatory, no metrics.  Methods keep Kafka's names in their docstrings.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Sequence

from groups.share.state import (
    ACK_TYPE_TO_RECORD_STATE,
    EMPTY_MEMBER_ID,
    GAP,
    INCREASE,
    NO_OP,
    AcknowledgeType,
    AcquiredRecords,
    InFlightBatch,
    InFlightState,
    RecordState,
    accumulate,
)
from wire.error_codes import ErrorCode

# Broker defaults (ShareGroupConfig): group.share.delivery.count.limit,
# group.share.partition.max.record.locks, group.share.record.lock.duration.ms.
DEFAULT_DELIVERY_COUNT_LIMIT = 5
DEFAULT_MAX_RECORD_LOCKS = 2000
DEFAULT_RECORD_LOCK_DURATION_MS = 30_000
MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT = 2

Batch = tuple[int, int]  # a fetched record batch: (base offset, last offset)
AckBatch = tuple[int, int, Sequence[int]]  # (first offset, last offset, ack types)


class ShareAckError(Exception):
    """An acknowledgement or release that Kafka fails; nothing of the request was applied."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def throttle_records_delivery_limit(max_delivery_count: int) -> int:
    return max(MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT, math.ceil(max_delivery_count / 2))


class SharePartition:
    """The in-flight records of one share partition, between SPSO and SPEO.

    ``start_offset`` is the SPSO: every record below it is done (acknowledged or archived).
    ``end_offset`` is the SPEO: the last offset in flight, or, when nothing is in flight, the
    next offset to fetch (Kafka's quirk, kept: then ``start_offset == end_offset``).
    """

    def __init__(
        self,
        start_offset: int,
        *,
        max_delivery_count: int = DEFAULT_DELIVERY_COUNT_LIMIT,
        max_in_flight_records: int = DEFAULT_MAX_RECORD_LOCKS,
        record_lock_duration_ms: int = DEFAULT_RECORD_LOCK_DURATION_MS,
    ) -> None:
        """``start_offset``: the offset ``share.auto.offset.reset`` resolved to (the log start
        offset for earliest, the high watermark for latest), or the persisted SPSO."""
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.max_delivery_count = max_delivery_count
        self.max_in_flight_records = max_in_flight_records
        self.record_lock_duration_ms = record_lock_duration_ms
        self._cache: dict[int, InFlightBatch] = {}
        self._keys: list[int] = []  # sorted keys of _cache

    # ---- the cache as a navigable map -------------------------------------------------------

    def cached_state(self) -> list[InFlightBatch]:
        return [self._cache[k] for k in self._keys]

    def _put(self, batch: InFlightBatch) -> None:
        if batch.first_offset not in self._cache:
            insort(self._keys, batch.first_offset)
        self._cache[batch.first_offset] = batch

    def _floor(self, offset: int) -> InFlightBatch | None:
        i = bisect_right(self._keys, offset)
        return self._cache[self._keys[i - 1]] if i else None

    def _sub(self, lo: int, hi: int, hi_inclusive: bool = True) -> list[InFlightBatch]:
        """Batches whose first offset is in ``[lo, hi]`` (or ``[lo, hi)``)."""
        i = bisect_left(self._keys, lo)
        j = bisect_right(self._keys, hi) if hi_inclusive else bisect_left(self._keys, hi)
        return [self._cache[k] for k in self._keys[i:j]]

    def _clear(self) -> None:
        self._cache.clear()
        self._keys.clear()

    # ---- views --------------------------------------------------------------------------------

    def record_state(self, offset: int) -> InFlightState | None:
        """The state of one in-flight offset, or None when it is not cached."""
        b = self._floor(offset)
        if b is None or offset > b.last_offset:
            return None
        return b.state_at(offset)

    def num_in_flight_records(self) -> int:
        return 0 if not self._cache else self.end_offset - self.start_offset + 1

    def next_fetch_offset(self) -> int:
        """``nextFetchOffset``: the first AVAILABLE cached offset, else past the in-flight records.

        Kafka caches the answer behind ``findNextFetchOffset``; computing it is the same answer."""
        if not self._cache or self.start_offset > self._cache[self._keys[-1]].last_offset:
            return self.end_offset
        for b in self.cached_state():
            for first, _last, s in b.states():
                if s.state == RecordState.AVAILABLE:
                    return first
        return self.end_offset + 1

    def can_acquire_records(self) -> bool:
        """``canAcquireRecords``: records to redeliver, or room under the in-flight limit."""
        if self.next_fetch_offset() != self.end_offset + 1:
            return True
        return self.num_in_flight_records() < self.max_in_flight_records

    # ---- acquire ------------------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        batches: Sequence[Batch],
        max_records: int,
        now_ms: int,
        *,
        fetch_offset: int | None = None,
        batch_size: int | None = None,
    ) -> list[AcquiredRecords]:
        """``acquire`` in BATCH_OPTIMIZED mode over fetched batches ``[(base, last), ...]``.

        ``max_records`` is a soft limit: a fetched batch is never cut.  ``fetch_offset`` is
        where the log was read (default: the first batch's base); ``batch_size`` splits new
        ranges at fetched-batch boundaries (default: no split).  Locks are due at
        ``now_ms + record_lock_duration_ms``; locks already due at ``now_ms`` expire first.
        """
        self.expire(now_ms)
        if max_records <= 0 or not batches:
            return []
        deadline = now_ms + self.record_lock_duration_ms
        batch_size = batch_size if batch_size is not None else 2**62
        first_base, last_batch_last = batches[0][0], batches[-1][1]
        fetch_offset = first_base if fetch_offset is None else fetch_offset
        if last_batch_last < self.start_offset:
            return []
        last_to_acquire, max_to_acquire = self._last_offset_and_max_records(
            fetch_offset, max_records, last_batch_last)
        if max_to_acquire <= 0:
            return []

        base = first_base
        self._maybe_archive_stale_batches(fetch_offset, base)
        floor = self._floor(base)
        if floor is None:
            base = max(base, self.start_offset)
        elif floor.last_offset >= base:
            base = floor.first_offset
        sub = self._sub(min(first_base, base), last_to_acquire)
        if not sub:
            return self._acquire_new(member_id, batches, base, last_to_acquire, batch_size,
                                     max_to_acquire, deadline)[0]

        result: list[AcquiredRecords] = []
        acquired = 0
        for b in sub:
            if acquired >= max_to_acquire:
                break
            full_match = b.first_offset >= first_base and b.last_offset <= last_to_acquire
            throttle = self._should_throttle(b, first_base, last_to_acquire)
            if throttle and acquired > 0:
                max_to_acquire = 0
                break
            if not full_match or b.offset_state is not None or throttle:
                if b.offset_state is None:
                    assert b.batch_state is not None
                    if b.batch_state.state != RecordState.AVAILABLE:
                        continue
                    b.split()
                n = self._acquire_subset(member_id, first_base, last_to_acquire, b, result, deadline)
                acquired += n
                if throttle and n > 0:
                    max_to_acquire = 0
                    break
                continue
            s = b.batch_state
            assert s is not None
            if s.state != RecordState.AVAILABLE:
                continue
            if not s.try_update(RecordState.ACQUIRED, INCREASE, self.max_delivery_count, member_id):
                continue
            s.deadline_ms = deadline
            result.append(AcquiredRecords(b.first_offset, b.last_offset, s.delivery_count))
            acquired += b.last_offset - b.first_offset + 1

        if acquired < max_to_acquire and sub[-1].last_offset < last_to_acquire:
            more, _ = self._acquire_new(member_id, batches, sub[-1].last_offset + 1, last_to_acquire,
                                        batch_size, max_to_acquire - acquired, deadline)
            result.extend(more)
        return result

    def _last_offset_and_max_records(self, fetch_offset: int, max_fetch: int, last_offset: int) -> tuple[int, int]:
        """``lastOffsetAndMaxRecordsToAcquire``: cap by the room left under the in-flight limit."""
        max_to_acquire = min(max_fetch, self.max_in_flight_records - self.num_in_flight_records())
        last_to_acquire = last_offset
        if max_to_acquire <= 0 and fetch_offset <= self.end_offset:
            # re-acquiring released records between SPSO and SPEO: never past SPEO
            max_to_acquire = min(max_fetch, self.end_offset - fetch_offset + 1)
            last_to_acquire = min(last_offset, self.end_offset)
        return last_to_acquire, max_to_acquire

    def _acquire_new(
        self, member_id: str, batches: Sequence[Batch], first: int, last: int, batch_size: int,
        max_fetch: int, deadline: int,
    ) -> tuple[list[AcquiredRecords], int]:
        """``acquireNewBatchRecords`` + ``createBatches``: records never seen before."""
        first_acquired = first
        if not self._cache and self.end_offset > first_acquired:
            first_acquired = self.end_offset
        last_acquired = last
        if max_fetch < last_acquired - first_acquired + 1:
            last_acquired = _last_offset_of_batch_containing(batches, first_acquired + max_fetch - 1)
        ranges: list[AcquiredRecords] = []
        current = first_acquired
        if last_acquired - first_acquired + 1 > batch_size:
            for base, _ in batches:
                if base > last_acquired:
                    break
                if base - current >= batch_size:
                    ranges.append(AcquiredRecords(current, base - 1, 1))
                    current = base
        ranges.append(AcquiredRecords(current, last_acquired, 1))
        for r in ranges:
            self._put(InFlightBatch(r.first_offset, r.last_offset,
                                    InFlightState(RecordState.ACQUIRED, 1, member_id, deadline)))
        if self._keys[0] == first_acquired:
            self.start_offset = first_acquired
        if last_acquired > self.end_offset:
            self.end_offset = last_acquired
        return ranges, last_acquired - first_acquired + 1

    def _should_throttle(self, b: InFlightBatch, first: int, last: int) -> bool:
        """``shouldThrottleRecordsDelivery``: an available record at half the delivery limit."""
        limit = throttle_records_delivery_limit(self.max_delivery_count)
        if b.offset_state is None:
            s = b.batch_state
            assert s is not None
            return s.state == RecordState.AVAILABLE and s.delivery_count >= limit
        counts = [s.delivery_count for o, s in b.offset_state.items()
                  if first <= o <= last and s.state == RecordState.AVAILABLE]
        return max(counts, default=0) >= limit

    def _acquire_subset(
        self, member_id: str, first: int, last: int, b: InFlightBatch,
        result: list[AcquiredRecords], deadline: int,
    ) -> int:
        """``acquireSubsetBatchRecords``: per offset, isolating records near the delivery limit."""
        assert b.offset_state is not None
        max_dc = self.max_delivery_count
        limit = throttle_records_delivery_limit(max_dc)
        throttled_max = -1
        has_throttled = False
        acquired = 0
        got: list[AcquiredRecords] = []
        for o, s in b.offset_state.items():
            if o < first:
                continue
            if o > last:
                break
            if s.state != RecordState.AVAILABLE:
                continue
            # a record on its last delivery goes alone (a poison record cannot take others down)
            if max_dc > 2 and s.delivery_count == max_dc - 1 and acquired > 0:
                break
            if s.delivery_count >= limit and throttled_max < 0:
                throttled_max = max(1, len(b.offset_state) >> (s.delivery_count - limit + 1))
                has_throttled = True
            if not s.try_update(RecordState.ACQUIRED, INCREASE, max_dc, member_id):
                continue
            s.deadline_ms = deadline
            got.append(AcquiredRecords(o, o, s.delivery_count))
            acquired += 1
            if s.delivery_count == max_dc and max_dc > 2:
                break
            if has_throttled and acquired == throttled_max:
                break
        accumulate(result, got)
        return acquired

    def _maybe_archive_stale_batches(self, fetch_offset: int, base_offset: int) -> None:
        """``maybeArchiveStaleBatches``: cached AVAILABLE records the log no longer has (compaction)."""
        if not self._cache or fetch_offset >= base_offset:
            return
        floor_offset = fetch_offset
        floor = self._floor(fetch_offset)
        if floor is not None and floor.last_offset >= fetch_offset:
            floor_offset = floor.first_offset
        for b in self._sub(floor_offset, base_offset, hi_inclusive=False):
            full = b.first_offset >= fetch_offset and b.last_offset <= base_offset - 1
            if not full or b.offset_state is not None:
                if b.offset_state is None:
                    assert b.batch_state is not None
                    if b.batch_state.state != RecordState.AVAILABLE:
                        continue
                    b.split()
                assert b.offset_state is not None
                for o, s in b.offset_state.items():
                    if fetch_offset <= o < base_offset and s.state == RecordState.AVAILABLE:
                        s.archive()
            elif b.batch_state is not None and b.batch_state.state == RecordState.AVAILABLE:
                b.batch_state.archive()

    # ---- acknowledge ----------------------------------------------------------------------------

    def acknowledge(self, member_id: str, ack_batches: Sequence[AckBatch], now_ms: int | None = None) -> ErrorCode:
        """``acknowledge``: all the batches or none (Kafka rolls back the started transitions).

        Ack types per batch: one type for the whole range, or one per offset (0 = gap, archived).
        Returns ``ErrorCode.NONE``, ``INVALID_RECORD_STATE`` (not acquired, not this member's,
        not cached) or ``INVALID_REQUEST`` (bad type, offsets past the acquired records).
        ``now_ms``, when given, first fires the locks due by then.
        """
        if now_ms is not None:
            self.expire(now_ms)
        undo: list[tuple[InFlightState, tuple]] = []
        try:
            for first, last, types in ack_batches:
                type_map = _ack_type_map(first, last, types)
                if last < self.start_offset:
                    continue
                sub = self._sub_for_ack(first, last)
                self._ack_batch(member_id, first, last, types, type_map, sub, undo)
        except ShareAckError as e:
            for state, snap in reversed(undo):
                state.restore(snap)
            return e.code
        self._maybe_update_cached_state_and_offsets()
        return ErrorCode.NONE

    def _sub_for_ack(self, first: int, last: int) -> list[InFlightBatch]:
        """``fetchSubMapForAcknowledgementBatch``."""
        floor = self._floor(first)
        if floor is None:
            if first < self.start_offset <= last:
                floor = self._floor(self.start_offset)
            if floor is None:
                raise ShareAckError(ErrorCode.INVALID_RECORD_STATE,
                                    "Batch record not found. The request batch offsets are not found in the cache.")
        sub = self._sub(floor.first_offset, last)
        if sub[-1].last_offset < first:
            raise ShareAckError(ErrorCode.INVALID_REQUEST,
                                "Batch record not found. The first offset in request is past acquired records.")
        if last > sub[-1].last_offset:
            raise ShareAckError(ErrorCode.INVALID_REQUEST,
                                "Batch record not found. The last offset in request is past acquired records.")
        return sub

    def _ack_batch(
        self, member_id: str, first: int, last: int, types: Sequence[int], type_map: dict[int, int],
        sub: list[InFlightBatch], undo: list,
    ) -> None:
        """``acknowledgeBatchRecords`` (+ ``acknowledgePerOffsetBatchRecords``/``acknowledgeCompleteBatch``)."""
        for b in sub:
            if b.last_offset < self.start_offset:
                continue
            if b.offset_state is None:
                s = b.batch_state
                assert s is not None
                if s.member_id == EMPTY_MEMBER_ID:
                    raise ShareAckError(ErrorCode.INVALID_RECORD_STATE,
                                        "The batch cannot be acknowledged. The batch is not in the acquired state.")
                if s.member_id != member_id:
                    raise ShareAckError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of batch record")
            full_match = b.first_offset >= first and b.last_offset <= last
            per_offset_ack = len(types) > 1
            start_moved = b.first_offset < self.start_offset <= b.last_offset
            if not full_match or b.offset_state is not None or per_offset_ack or start_moved:
                if b.offset_state is None:
                    assert b.batch_state is not None
                    if b.batch_state.state != RecordState.ACQUIRED:
                        raise ShareAckError(ErrorCode.INVALID_RECORD_STATE,
                                            "The batch cannot be acknowledged. The subset batch is not in the acquired state.")
                    b.split()
                assert b.offset_state is not None
                for o, s in b.offset_state.items():
                    if o < first or o < self.start_offset:
                        continue
                    if o > last:
                        break
                    if s.state != RecordState.ACQUIRED:
                        raise ShareAckError(ErrorCode.INVALID_RECORD_STATE,
                                            "The offset cannot be acknowledged. The offset is not acquired.")
                    if s.member_id != member_id:
                        raise ShareAckError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of offset")
                    ack = type_map[o] if len(type_map) > 1 else types[0]
                    self._transition_on_ack(s, ack, undo)
            else:
                s = b.batch_state
                assert s is not None
                if s.state != RecordState.ACQUIRED:
                    raise ShareAckError(ErrorCode.INVALID_RECORD_STATE,
                                        "The batch cannot be acknowledged. The batch is not in the acquired state.")
                self._transition_on_ack(s, type_map[first], undo)

    def _transition_on_ack(self, s: InFlightState, ack: int, undo: list) -> None:
        if ack == AcknowledgeType.RENEW:
            # Kafka renews the lock only when the group enables it (KIP-1222); not ported yet.
            raise ShareAckError(ErrorCode.INVALID_RECORD_STATE,
                                "Renewing acquisition locks is not enabled for the group.")
        snap = s.snapshot()
        if not s.try_update(ACK_TYPE_TO_RECORD_STATE[ack], NO_OP, self.max_delivery_count, EMPTY_MEMBER_ID):
            raise ShareAckError(ErrorCode.INVALID_RECORD_STATE, "Unable to acknowledge records for the batch")
        s.deadline_ms = None  # the lock is cancelled when the transition completes
        undo.append((s, snap))

    # ---- release and expiry ---------------------------------------------------------------------

    def release_member(self, member_id: str) -> int:
        """``releaseAcquiredRecords``: a leaving member's records become AVAILABLE again (ARCHIVED
        at the delivery limit, or below the SPSO).  Returns the number of records released."""
        released = 0
        for b in self.cached_state():
            s = b.batch_state
            if (s is not None and s.state == RecordState.ACQUIRED and s.member_id == member_id
                    and b.first_offset < self.start_offset <= b.last_offset):
                b.split()
            for first, last, st in b.states():
                if st.member_id not in (member_id, EMPTY_MEMBER_ID) or st.state != RecordState.ACQUIRED:
                    continue
                target = RecordState.ARCHIVED if last < self.start_offset else RecordState.AVAILABLE
                st.try_update(target, NO_OP, self.max_delivery_count, EMPTY_MEMBER_ID)
                st.deadline_ms = None
                released += last - first + 1
        self._maybe_update_cached_state_and_offsets()
        return released

    def next_deadline_ms(self) -> int | None:
        """The earliest acquisition lock deadline, for the caller's timer."""
        deadlines = [s.deadline_ms for b in self.cached_state() for _, _, s in b.states()
                     if s.state == RecordState.ACQUIRED and s.deadline_ms is not None]
        return min(deadlines, default=None)

    def expire(self, now_ms: int) -> list[tuple[int, int]]:
        """``releaseAcquisitionLockOnTimeout`` for every lock due at ``now_ms``.  Returns the
        (first, last) ranges whose lock expired."""
        expired: list[tuple[int, int]] = []
        for b in self.cached_state():
            s = b.batch_state
            if (s is not None and s.state == RecordState.ACQUIRED and s.deadline_ms is not None
                    and s.deadline_ms <= now_ms and b.first_offset < self.start_offset <= b.last_offset):
                b.split()
            for first, last, st in b.states():
                if st.state != RecordState.ACQUIRED or st.deadline_ms is None or st.deadline_ms > now_ms:
                    continue
                target = RecordState.ARCHIVED if last < self.start_offset else RecordState.AVAILABLE
                st.try_update(target, NO_OP, self.max_delivery_count, EMPTY_MEMBER_ID)
                st.deadline_ms = None
                expired.append((first, last))
        if expired:
            self._maybe_update_cached_state_and_offsets()
        return expired

    # ---- SPSO movement --------------------------------------------------------------------------

    def _can_move_start_offset(self) -> bool:
        if not self._cache:
            return False
        b = self._floor(self.start_offset)
        if b is None:
            return False
        if b.offset_state is None:
            assert b.batch_state is not None
            return b.batch_state.state.terminal
        s = b.offset_state.get(self.start_offset)
        return s is not None and s.state.terminal

    def _last_offset_acknowledged(self) -> int:
        """``findLastOffsetAcknowledgedAndMetadata``: the end of the terminal run at the front."""
        last_acked = -1
        for b in self.cached_state():
            for _first, last, s in b.states():
                if not s.state.terminal:
                    return last_acked
                last_acked = last
        return last_acked

    def _maybe_update_cached_state_and_offsets(self) -> None:
        """``maybeUpdateCachedStateAndOffsets``: move the SPSO past the done records at the front;
        drop only whole batches from the cache."""
        if not self._can_move_start_offset():
            return
        last_acked = self._last_offset_acknowledged()
        if last_acked == -1:
            return
        last_cached = self._cache[self._keys[-1]].last_offset
        if last_acked == last_cached:
            self.start_offset = self.end_offset = last_cached + 1
            self._clear()
            return
        b = self._floor(last_acked)
        assert b is not None
        if last_acked == b.last_offset:
            higher = self._keys[bisect_right(self._keys, last_acked)]
            self.start_offset = max(self.start_offset, higher)
            last_key_to_remove = b.first_offset
        else:
            self.start_offset = max(self.start_offset, last_acked + 1)
            i = bisect_left(self._keys, b.first_offset)
            last_key_to_remove = self._keys[i - 1] if i else -1
        if last_key_to_remove != -1:
            j = bisect_right(self._keys, last_key_to_remove)
            for k in self._keys[:j]:
                del self._cache[k]
            del self._keys[:j]


def _ack_type_map(first: int, last: int, types: Sequence[int]) -> dict[int, int]:
    """``fetchAckTypeMapForBatch`` (+ the request validation Kafka does before it)."""
    if not types or (len(types) > 1 and len(types) != last - first + 1) or last < first:
        raise ShareAckError(ErrorCode.INVALID_REQUEST, f"Invalid acknowledge types: {list(types)}")
    for t in types:
        if t != GAP and t not in AcknowledgeType._value2member_map_:
            raise ShareAckError(ErrorCode.INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}")
    return {first + i: t for i, t in enumerate(types)}


def _last_offset_of_batch_containing(batches: Sequence[Batch], offset: int) -> int:
    """``lastOffsetFromBatchWithRequestOffset``: never cut a fetched batch."""
    previous: Batch | None = None
    for b in batches:
        if offset >= b[0]:
            previous = b
            continue
        break
    if previous is not None and offset <= previous[1]:
        return previous[1]
    return offset
