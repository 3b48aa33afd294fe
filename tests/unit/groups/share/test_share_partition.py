"""The share-partition state machine (``groups.share``), against Kafka's SharePartitionTest
examples (Kafka 4.3.1; test names cited) and a per-offset model under hypothesis."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groups.share.partition import SharePartition
from groups.share.state import AcquiredRecords as AR
from groups.share.state import RecordState
from wire.error_codes import ErrorCode

M = "member-1"
ACCEPT, RELEASE, REJECT, GAP = 1, 2, 3, 0
LOCK = 30_000


def sp(**kw) -> SharePartition:
    kw.setdefault("max_in_flight_records", 200)  # SharePartitionTest's DEFAULT_MAX_IN_FLIGHT_RECORDS
    return SharePartition(0, **kw)


def records(start: int, n: int) -> list[tuple[int, int]]:
    """Kafka's ``memoryRecords(start, n)``: one batch."""
    return [(start, start + n - 1)]


def acq(p: SharePartition, batches, now=0, member=M, max_records=2**31 - 1, **kw):
    return p.acquire(member, batches, max_records, now, **kw)


def state(p: SharePartition, offset: int) -> tuple[RecordState, int, str]:
    s = p.record_state(offset)
    assert s is not None
    return s.state, s.delivery_count, s.member_id


# ---- examples from Kafka's SharePartitionTest ------------------------------------------------

def test_a_fetched_batch_is_acquired_whole_with_delivery_count_one():  # testAcquireMultipleRecords
    p = sp()
    assert acq(p, records(10, 5)) == [AR(10, 14, 1)]
    assert p.next_fetch_offset() == 15
    assert [(b.first_offset, b.last_offset) for b in p.cached_state()] == [(10, 14)]
    assert state(p, 12) == (RecordState.ACQUIRED, 1, M)
    assert (p.start_offset, p.end_offset) == (10, 14)


def test_max_records_is_a_soft_limit_that_never_cuts_a_fetched_batch():
    # testAcquireWithMaxInFlightRecordsAndTryAcquireNewBatch
    p = sp(max_in_flight_records=20)
    assert acq(p, records(0, 10), max_records=500) == [AR(0, 9, 1)]
    four = [(10, 14), (15, 24), (25, 29), (30, 31)]
    assert acq(p, four, max_records=500) == [AR(10, 24, 1)]  # 25 in flight: the batch 15-24 is whole
    assert p.next_fetch_offset() == 25
    assert acq(p, records(25, 10), max_records=500, fetch_offset=25) == []  # at the limit
    assert p.next_fetch_offset() == 25
    assert not p.can_acquire_records()


def test_at_the_in_flight_limit_only_released_records_are_acquired_again():
    # testAcquireWithMaxInFlightRecordsAndReleaseLastOffset
    p = sp(max_in_flight_records=20)
    log = [(10, 14), (15, 24), (25, 29), (30, 32)]
    assert acq(p, log, max_records=500) == [AR(10, 29, 1)]
    assert p.acknowledge(M, [(15, 19, [RELEASE])]) == ErrorCode.NONE
    assert p.next_fetch_offset() == 15
    assert p.can_acquire_records()
    assert acq(p, log, max_records=500, fetch_offset=15) == [AR(15, 19, 2)]
    assert p.next_fetch_offset() == 30
    assert p.acknowledge(M, [(29, 29, [RELEASE])]) == ErrorCode.NONE
    assert p.next_fetch_offset() == 29
    assert acq(p, log, max_records=500, fetch_offset=29) == [AR(29, 29, 2)]
    assert p.next_fetch_offset() == 30


def test_acknowledging_a_later_batch_leaves_the_spso_on_the_first():  # testAcknowledgeSingleRecordBatch
    p = sp()
    acq(p, records(0, 1))
    acq(p, records(1, 1))
    assert p.acknowledge(M, [(1, 1, [ACCEPT])]) == ErrorCode.NONE
    assert p.next_fetch_offset() == 2
    assert len(p.cached_state()) == 2
    assert state(p, 1) == (RecordState.ACKNOWLEDGED, 1, "")
    assert p.start_offset == 0


def test_acknowledging_outside_the_cache_is_invalid_record_state_or_invalid_request():
    # testAcknowledgeOutOfRangeCachedData
    p = sp()
    assert p.acknowledge(M, [(0, 15, [REJECT])]) == ErrorCode.INVALID_RECORD_STATE
    acq(p, records(5, 5))
    assert p.acknowledge(M, [(20, 25, [REJECT])]) == ErrorCode.INVALID_REQUEST


def test_a_failed_acknowledgement_applies_none_of_its_batches():
    # testAcknowledgeOutOfRangeCachedDataFirstBatch
    p = sp()
    acq(p, records(0, 5))
    acq(p, records(20, 5))
    batches = [(0, 10, [ACCEPT]), (20, 24, [ACCEPT])]
    assert p.acknowledge(M, batches) == ErrorCode.INVALID_REQUEST
    assert state(p, 0) == (RecordState.ACQUIRED, 1, M)
    acq(p, records(5, 6))
    assert p.acknowledge(M, batches) == ErrorCode.NONE
    assert (p.start_offset, p.end_offset, p.cached_state()) == (25, 25, [])


def test_another_member_cannot_acknowledge_a_batch_it_does_not_hold():  # testAcknowledgeWithAnotherMember
    p = sp()
    acq(p, records(5, 5))
    assert p.acknowledge("member-2", [(5, 9, [REJECT])]) == ErrorCode.INVALID_RECORD_STATE
    assert state(p, 5) == (RecordState.ACQUIRED, 1, M)


def test_acknowledging_a_released_record_is_invalid_record_state():  # testAcknowledgeWhenOffsetNotAcquired
    p = sp()
    acq(p, records(5, 5))
    assert p.acknowledge(M, [(5, 9, [RELEASE])]) == ErrorCode.NONE
    assert p.acknowledge(M, [(5, 9, [ACCEPT])]) == ErrorCode.INVALID_RECORD_STATE
    assert acq(p, records(5, 5)) == [AR(5, 9, 2)]
    assert p.acknowledge(M, [(6, 8, [REJECT])]) == ErrorCode.NONE
    assert [state(p, o)[0] for o in range(5, 10)] == [
        RecordState.ACQUIRED, RecordState.ARCHIVED, RecordState.ARCHIVED, RecordState.ARCHIVED,
        RecordState.ACQUIRED]


def test_an_unknown_acknowledge_type_is_invalid_request():  # testInvalidAcknowledgeTypeInBatchAcknowledgement
    p = sp()
    acq(p, records(0, 5))
    assert p.acknowledge(M, [(0, 4, [9])]) == ErrorCode.INVALID_REQUEST
    assert state(p, 0) == (RecordState.ACQUIRED, 1, M)


def test_releasing_a_member_returns_only_its_records_and_keeps_acknowledged_ones():
    # testReleaseAcquiredRecordsWithAnotherMember (the fetched batch 10-20 has gaps the client reports)
    p = sp()
    acq(p, records(5, 1), member="member-2", fetch_offset=5)
    acq(p, [(10, 20)], fetch_offset=10)
    types = [ACCEPT, ACCEPT, GAP, GAP, ACCEPT, GAP, ACCEPT, GAP, ACCEPT]
    assert p.acknowledge(M, [(10, 18, types)]) == ErrorCode.NONE
    assert p.release_member(M) == 2
    assert p.next_fetch_offset() == 19
    assert state(p, 5) == (RecordState.ACQUIRED, 1, "member-2")
    expected = {10: 2, 11: 2, 12: 4, 13: 4, 14: 2, 15: 4, 16: 2, 17: 4, 18: 2, 19: 0, 20: 0}
    assert {o: int(state(p, o)[0]) for o in range(10, 21)} == expected
    assert all(state(p, o)[1:] == (1, "") for o in range(10, 21))
    p.release_member("member-2")
    assert p.next_fetch_offset() == 5
    assert state(p, 5) == (RecordState.AVAILABLE, 1, "")


def test_a_lock_that_expires_makes_the_batch_available_and_at_the_limit_archives_it():
    # testAcquisitionLockTimeoutCauseMaxDeliveryCountExceed
    p = sp(max_delivery_count=2, record_lock_duration_ms=LOCK)
    acq(p, records(0, 10), now=0)
    acq(p, records(10, 10), now=0)
    assert p.next_deadline_ms() == LOCK
    assert p.expire(LOCK - 1) == []
    assert p.expire(LOCK) == [(0, 9), (10, 19)]
    assert p.next_fetch_offset() == 0
    assert state(p, 10) == (RecordState.AVAILABLE, 1, "")
    assert acq(p, records(10, 10), now=LOCK) == [AR(10, 19, 2)]
    p.expire(2 * LOCK)
    assert p.next_fetch_offset() == 0
    assert state(p, 10) == (RecordState.ARCHIVED, 2, "")
    assert p.start_offset == 0


def test_releasing_at_the_delivery_limit_archives_and_moves_the_spso():
    # testMaxDeliveryCountLimitExceededForRecordBatch
    p = sp(max_delivery_count=2)
    for _ in range(2):
        acq(p, records(5, 10))
        assert p.acknowledge(M, [(5, 14, [RELEASE])]) == ErrorCode.NONE
    assert (p.next_fetch_offset(), p.start_offset, p.end_offset, p.cached_state()) == (15, 15, 15, [])


def test_released_subsets_are_reacquired_per_offset_and_archived_at_the_limit():
    # testMaxDeliveryCountLimitExceededForRecordsSubset
    p = sp(max_delivery_count=2)
    acq(p, records(10, 5))
    acq(p, records(15, 5))
    assert p.acknowledge(M, [(10, 12, [ACCEPT]), (13, 16, [RELEASE]), (17, 19, [ACCEPT])]) == ErrorCode.NONE
    assert acq(p, records(10, 5)) == [AR(13, 14, 2)]
    assert acq(p, records(15, 5)) == [AR(15, 16, 2)]
    assert p.acknowledge(M, [(13, 16, [RELEASE])]) == ErrorCode.NONE
    assert (p.next_fetch_offset(), p.cached_state()) == (20, [])


def test_the_spso_stops_at_the_first_record_not_done_and_drops_only_whole_batches():
    p = sp()
    acq(p, records(0, 10))
    acq(p, records(10, 10))
    assert p.acknowledge(M, [(0, 4, [ACCEPT])]) == ErrorCode.NONE
    assert p.start_offset == 5 and len(p.cached_state()) == 2
    assert p.acknowledge(M, [(5, 9, [REJECT])]) == ErrorCode.NONE
    assert p.start_offset == 10 and [b.first_offset for b in p.cached_state()] == [10]


def test_the_initial_spso_is_the_offset_auto_offset_reset_resolved_to():
    p = SharePartition(100)  # e.g. latest: the high watermark
    assert (p.start_offset, p.end_offset, p.next_fetch_offset()) == (100, 100, 100)
    assert acq(p, [(90, 99), (100, 104)]) == [AR(100, 104, 1)]
    assert acq(SharePartition(100), [(90, 99)]) == []


def test_a_record_one_delivery_from_the_limit_is_handed_out_alone():
    p = sp(max_delivery_count=5)
    acq(p, records(0, 4))
    for dc in range(1, 4):
        p.acknowledge(M, [(0, 3, [RELEASE])])
        got = acq(p, records(0, 4))
        assert got[0].delivery_count == dc + 1
    # every record is at 4 = limit - 1 and available after a release: one at a time from here
    p.acknowledge(M, [(o, o, [RELEASE]) for o in range(4) if state(p, o)[0] == RecordState.ACQUIRED])
    assert acq(p, records(0, 4)) == [AR(0, 0, 5)]


# ---- properties against a per-offset model ---------------------------------------------------

MEMBERS = ("m1", "m2", "m3")


def _batches(sizes: list[int]) -> list[tuple[int, int]]:
    out, o = [], 0
    for s in sizes:
        out.append((o, o + s - 1))
        o += s
    return out


def _fetch(log: list[tuple[int, int]], offset: int, n_batches: int) -> list[tuple[int, int]]:
    """What a log read from ``offset`` returns: whole batches, the first containing the offset."""
    i = next((k for k, (_, last) in enumerate(log) if last >= offset), len(log))
    return log[i:i + n_batches]


op = st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 4), st.integers(1, 30)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.integers(0, 60), st.integers(0, 6),
              st.sampled_from([ACCEPT, RELEASE, REJECT, GAP]), st.booleans()),
    st.tuples(st.just("tick"), st.integers(0, 40)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=15), limit=st.integers(1, 25),
       max_dc=st.integers(1, 5), ops=st.lists(op, max_size=40))
def test_the_partition_keeps_kafkas_invariants_against_a_per_offset_model(sizes, limit, max_dc, ops):
    log = _batches(sizes)
    biggest = max(sizes)
    p = SharePartition(0, max_delivery_count=max_dc, max_in_flight_records=limit, record_lock_duration_ms=10)
    model: dict[int, tuple[RecordState, int, str, int | None]] = {}  # offset -> state, count, owner, deadline
    now = 0
    spso = 0

    def expire_model(t):
        for o, (s, dc, _owner, dl) in list(model.items()):
            if s == RecordState.ACQUIRED and dl is not None and dl <= t:
                model[o] = (RecordState.ARCHIVED if dc >= max_dc else RecordState.AVAILABLE, dc, "", None)

    for step in ops:
        kind = step[0]
        if kind == "acquire":
            _, member, nb, max_records = step
            expire_model(now)
            got = p.acquire(member, _fetch(log, p.next_fetch_offset(), nb), max_records, now)
            for r in got:
                for o in range(r.first_offset, r.last_offset + 1):
                    before = model.get(o, (RecordState.AVAILABLE, 0, "", None))
                    assert before[0] == RecordState.AVAILABLE, (o, before)  # never two owners, never terminal
                    assert o >= spso
                    assert r.delivery_count == before[1] + 1 <= max_dc
                    model[o] = (RecordState.ACQUIRED, before[1] + 1, member, now + 10)
        elif kind == "ack":
            _, member, first, length, ack, per_offset = step
            last = first + length
            types = [ack] * (length + 1) if per_offset and length else [ack]
            held = all(model.get(o, (None,))[0] == RecordState.ACQUIRED and model[o][2] == member
                       for o in range(max(first, spso), last + 1))
            snapshot = {o: (s.state, s.delivery_count, s.member_id) for b in p.cached_state()
                        for o in range(b.first_offset, b.last_offset + 1) if (s := p.record_state(o))}
            code = p.acknowledge(member, [(first, last, types)])
            if code == ErrorCode.NONE:
                assert held or last < spso
                target = {ACCEPT: RecordState.ACKNOWLEDGED, REJECT: RecordState.ARCHIVED,
                          GAP: RecordState.ARCHIVED, RELEASE: RecordState.AVAILABLE}[ack]
                for o in range(max(first, spso), last + 1):
                    _, dc, _, _ = model[o]
                    t = RecordState.ARCHIVED if target == RecordState.AVAILABLE and dc >= max_dc else target
                    model[o] = (t, dc, "", None)
            else:
                after = {o: (s.state, s.delivery_count, s.member_id) for b in p.cached_state()
                         for o in range(b.first_offset, b.last_offset + 1) if (s := p.record_state(o))}
                assert after == snapshot  # all or nothing
            if held and last >= spso and max(first, spso) <= last:
                assert code == ErrorCode.NONE
        elif kind == "tick":
            now += step[1]
            p.expire(now)
            expire_model(now)
        else:
            member = step[1]
            p.release_member(member)
            for o, (s, dc, owner, _dl) in list(model.items()):
                if s == RecordState.ACQUIRED and owner == member:
                    model[o] = (RecordState.ARCHIVED if dc >= max_dc else RecordState.AVAILABLE, dc, "", None)

        # the partition agrees with the model on every offset it still tracks
        for o in range(p.start_offset, p.end_offset + 1):
            s = p.record_state(o)
            if s is not None:
                m = model[o]
                assert (s.state, s.delivery_count, s.member_id) == m[:3], (o, s, m)
                if s.state == RecordState.ACQUIRED:
                    assert s.deadline_ms == m[3]
        # the SPSO only moves forward, and everything below it is done
        assert p.start_offset >= spso
        spso = p.start_offset
        assert all(model[o][0].terminal for o in model if o < spso)
        # delivery counts never exceed the limit
        assert all(dc <= max_dc for _, dc, _, _ in model.values())
        # the in-flight window stays within the limit, overshooting by less than one fetched batch
        acquired = sum(1 for s, *_ in model.values() if s == RecordState.ACQUIRED)
        assert acquired <= p.num_in_flight_records() <= limit + biggest - 1


@settings(max_examples=100, deadline=None)
@given(limit=st.integers(1, 20), n=st.integers(1, 60), fetches=st.lists(st.integers(1, 10), max_size=20))
def test_with_single_record_batches_acquired_records_never_exceed_the_in_flight_limit(limit, n, fetches):
    log = [(o, o) for o in range(n)]
    p = SharePartition(0, max_in_flight_records=limit)
    held = 0
    for i, k in enumerate(fetches):
        held += sum(r.last_offset - r.first_offset + 1
                    for r in p.acquire(f"m{i % 2}", _fetch(log, p.next_fetch_offset(), k), 100, 0))
        assert held <= limit
