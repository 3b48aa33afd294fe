"""kbroker/replica/fetch_session.py against Kafka's FetchSession / FetchSessionCacheShard /
FetchManager.newContext rules (FetchSessionTest.java's cases, in kbroker's terms)."""

from __future__ import annotations

import random
import uuid

import pytest

from kbroker.replica.fetch_session import (
    INT32_MAX,
    CachedPartition,
    FetchSessionCache,
    Full,
    Incremental,
    SessionError,
    Sessionless,
    new_context,
    next_epoch,
)
from wire.error_codes import ErrorCode
from wire.messages import FetchRequest, FetchResponse

NOW = 1_000_000


def fp(partition: int, offset: int = 0) -> FetchRequest.FetchPartition:
    return FetchRequest.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)


def pd(partition: int, hw: int, log_start: int = 0, records: bytes = b"", error: int = 0, **kw) -> FetchResponse.PartitionData:
    return FetchResponse.PartitionData(partition_index=partition, error_code=error, high_watermark=hw,
                                       last_stable_offset=hw, log_start_offset=log_start, records=records, **kw)


def parts_of(*keys: tuple[str, int]) -> dict:
    return {k: CachedPartition(k[0], None, k[1], fp(k[1])) for k in keys}


def make_session(cache: FetchSessionCache, *keys: tuple[str, int], now: int = NOW, privileged: bool = False) -> int:
    return cache.maybe_create_session(now, privileged, len(keys), False, lambda: parts_of(*keys))


def classify(cache, session_id, epoch, version=12, data=(), forget=(), follower=False, now=NOW):
    return new_context(cache, version, session_id, epoch, follower,
                       lambda: [((t, p), t, None, fp(p, off)) for t, p, off in data],
                       lambda: list(forget), now)


def test_next_epoch_counts_up_wraps_int_max_to_one_and_keeps_final():
    assert [next_epoch(0), next_epoch(1), next_epoch(INT32_MAX), next_epoch(-1)] == [1, 2, 1, -1]


def test_session_id_zero_epoch_minus_one_is_sessionless_and_epoch_zero_is_full():
    cache = FetchSessionCache(10, 1000)
    assert isinstance(classify(cache, 0, -1), Sessionless)
    full = classify(cache, 0, 0, version=13, follower=True)
    assert isinstance(full, Full) and full.uses_topic_ids and full.privileged


def test_a_new_session_gets_a_positive_id_and_expects_epoch_one():
    cache = FetchSessionCache(10, 1000)
    sid = make_session(cache, ("t", 0))
    assert 0 < sid <= INT32_MAX and cache.get(sid).epoch == 1
    assert (len(cache), cache.num_partitions) == (1, 1)


def test_an_unknown_session_id_is_fetch_session_id_not_found():
    cache = FetchSessionCache(10, 1000)
    ctx = classify(cache, 12345, 1)
    assert isinstance(ctx, SessionError) and ctx.error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    # session 0 with an incremental epoch names no session either (Kafka looks 0 up)
    assert classify(cache, 0, 3).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_a_wrong_epoch_is_invalid_fetch_session_epoch_and_leaves_the_session_as_it_was():
    cache = FetchSessionCache(10, 1000)
    sid = make_session(cache, ("t", 0))
    assert classify(cache, sid, 2).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert cache.get(sid).epoch == 1
    assert isinstance(classify(cache, sid, 1), Incremental)
    assert cache.get(sid).epoch == 2
    assert classify(cache, sid, 1).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH   # a replay


def test_a_version_that_does_not_match_the_sessions_use_of_topic_ids_is_fetch_session_topic_id_error():
    cache = FetchSessionCache(10, 1000)
    sid = make_session(cache, ("t", 0))     # made by a v12 request: names
    assert classify(cache, sid, 1, version=13).error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    tid = uuid.uuid4()
    sid2 = cache.maybe_create_session(NOW, False, 1, True, lambda: {(tid, 0): CachedPartition("t", tid, 0, fp(0))})
    assert classify(cache, sid2, 1, version=12).error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_a_full_fetch_naming_a_session_closes_it():
    cache = FetchSessionCache(10, 1000)
    sid = make_session(cache, ("t", 0))
    assert isinstance(classify(cache, sid, 0), Full)
    assert cache.get(sid) is None and cache.num_partitions == 0
    sid = make_session(cache, ("t", 0))
    assert isinstance(classify(cache, sid, -1), Sessionless)
    assert cache.get(sid) is None


def test_an_incremental_request_adds_updates_and_forgets_partitions():
    cache = FetchSessionCache(10, 1000)
    sid = make_session(cache, ("t", 0), ("t", 1))
    ctx = classify(cache, sid, 1, data=[("t", 1, 7), ("u", 0, 3)], forget=[("t", 0)])
    assert isinstance(ctx, Incremental)
    parts = cache.get(sid).parts
    assert [(k, cp.fp.fetch_offset) for k, cp in parts.items()] == [(("t", 1), 7), (("u", 0), 3)]
    assert cache.num_partitions == 2


def test_an_incremental_request_that_forgets_every_partition_closes_the_session_and_is_sessionless():
    cache = FetchSessionCache(10, 1000)
    sid = make_session(cache, ("t", 0))
    assert isinstance(classify(cache, sid, 1, forget=[("t", 0)]), Sessionless)
    assert cache.get(sid) is None and len(cache) == 0


def test_no_room_and_nothing_evictable_gives_session_id_zero():
    cache = FetchSessionCache(1, 1000)
    assert make_session(cache, ("t", 0)) != 0
    assert make_session(cache, ("t", 0), now=NOW + 10) == 0   # same size, younger than the eviction time
    assert cache.evictions == 0


def test_zero_slots_never_make_a_session():
    assert make_session(FetchSessionCache(0, 1000), ("t", 0)) == 0


def test_a_session_unused_for_longer_than_the_eviction_time_is_evicted_first():
    cache = FetchSessionCache(2, 1000)
    a = make_session(cache, ("t", 0), ("t", 1), ("t", 2), now=NOW)
    b = make_session(cache, ("t", 0), now=NOW + 500)
    c = make_session(cache, ("t", 0), now=NOW + 1001)   # a was last used 1001 ms ago
    assert c != 0 and cache.get(a) is None and cache.get(b) is not None and cache.evictions == 1


def test_a_bigger_session_evicts_the_smallest_session_older_than_the_eviction_time():
    cache = FetchSessionCache(2, 1000)
    small = make_session(cache, ("t", 0), now=NOW)
    big = make_session(cache, ("t", 0), ("t", 1), ("t", 2), now=NOW)
    # both are used again (not stale) after they are older than the eviction time
    cache.touch(cache.get(small), NOW + 1500)
    cache.touch(cache.get(big), NOW + 1500)
    assert make_session(cache, ("u", 0), now=NOW + 1600) == 0   # size 1 < the smallest (1, id): no
    new = make_session(cache, ("u", 0), ("u", 1), now=NOW + 1600)
    assert new != 0 and cache.get(small) is None and cache.get(big) is not None


def test_a_follower_session_may_evict_a_young_consumer_session_but_a_consumer_may_not():
    cache = FetchSessionCache(1, 1000)
    consumer = make_session(cache, ("t", 0), now=NOW)
    assert make_session(cache, ("t", 0), now=NOW + 1) == 0
    follower = make_session(cache, ("t", 0), now=NOW + 2, privileged=True)
    assert follower != 0 and cache.get(consumer) is None
    # and a consumer cannot evict a young follower session
    assert make_session(cache, ("t", 0), ("t", 1), now=NOW + 3) == 0


def test_session_ids_are_random_and_never_reused_while_live():
    cache = FetchSessionCache(100, 1000, random.Random(7))
    ids = {make_session(cache, ("t", 0)) for _ in range(50)}
    assert len(ids) == 50 and 0 not in ids


def test_an_incremental_answer_carries_records_errors_and_changed_offsets_only():
    cp = CachedPartition("t", None, 0, fp(0))
    assert cp.must_respond(pd(0, hw=5))                        # first answer: HW changed from -1
    assert not cp.must_respond(pd(0, hw=5))                    # nothing new
    assert cp.must_respond(pd(0, hw=5, records=b"x"))          # records
    assert cp.must_respond(pd(0, hw=6)) and not cp.must_respond(pd(0, hw=6))
    assert cp.must_respond(pd(0, hw=6, log_start=2)) and not cp.must_respond(pd(0, hw=6, log_start=2))
    assert cp.must_respond(pd(0, hw=6, log_start=2, preferred_read_replica=3))
    assert cp.must_respond(pd(0, hw=6, log_start=2,
                              diverging_epoch=FetchResponse.EpochEndOffset(epoch=1, end_offset=4)))


def test_an_error_is_always_answered_and_the_partition_is_answered_again_once_it_is_gone():
    cp = CachedPartition("t", None, 0, fp(0))
    cp.must_respond(pd(0, hw=6))
    assert cp.must_respond(pd(0, hw=-1, error=ErrorCode.NOT_LEADER_OR_FOLLOWER))
    assert cp.must_respond(pd(0, hw=-1, error=ErrorCode.NOT_LEADER_OR_FOLLOWER))
    assert cp.high_watermark == -1
    assert cp.must_respond(pd(0, hw=6))   # the same HW as before the error: still sent


def test_asking_without_update_changes_nothing():
    cp = CachedPartition("t", None, 0, fp(0))
    assert cp.must_respond(pd(0, hw=5), update=False)
    assert cp.must_respond(pd(0, hw=5), update=False)


@pytest.mark.parametrize("evict_ms", [0, 120_000])
def test_touch_counts_partitions_once_per_session(evict_ms):
    cache = FetchSessionCache(10, evict_ms)
    sid = make_session(cache, ("t", 0), ("t", 1))
    cache.touch(cache.get(sid), NOW + 1)
    cache.touch(cache.get(sid), NOW + 2)
    assert cache.num_partitions == 2
    cache.remove(sid)
    assert cache.num_partitions == 0
