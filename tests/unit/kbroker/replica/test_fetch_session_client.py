"""kbroker/replica/fetch_session_client.py, the replica fetcher's side of KIP-227, as Kafka's
FetchSessionHandler: full first, then only what changed, forgotten partitions, and a full
request again after a session error or a lost request."""

from __future__ import annotations

from kbroker.replica.fetch_session_client import FetchSessionHandler
from wire.error_codes import ErrorCode
from wire.messages import FetchRequest


def fp(partition: int, offset: int) -> FetchRequest.FetchPartition:
    return FetchRequest.FetchPartition(partition=partition, current_leader_epoch=3, fetch_offset=offset,
                                       last_fetched_epoch=3, log_start_offset=0, partition_max_bytes=1 << 20)


def test_the_first_request_is_full_then_only_changed_and_forgotten_partitions_are_sent():
    h = FetchSessionHandler()
    wanted = {("t", 0): fp(0, 5), ("t", 1): fp(1, 7)}
    assert h.build(wanted) == (0, 0, wanted, [])
    assert h.answered(wanted, True, 0, 4242)
    wanted2 = {("t", 0): fp(0, 9), ("u", 0): fp(0, 0)}
    sid, epoch, named, forget = h.build(wanted2)
    assert (sid, epoch, sorted(named), forget) == (4242, 1, [("t", 0), ("u", 0)], [("t", 1)])
    assert h.answered(wanted2, False, 0, 4242)
    same = {("t", 0): fp(0, 9), ("u", 0): fp(0, 0)}
    assert h.build(same) == (4242, 2, {}, [])


def test_no_session_granted_keeps_every_request_full():
    h = FetchSessionHandler()
    wanted = {("t", 0): fp(0, 5)}
    assert h.answered(wanted, True, 0, 0)
    assert h.build(wanted) == (0, 0, wanted, [])


def test_an_invalid_epoch_closes_and_reopens_the_session_and_not_found_forgets_its_id():
    h = FetchSessionHandler()
    wanted = {("t", 0): fp(0, 5)}
    h.answered(wanted, True, 0, 77)
    assert not h.answered(wanted, False, ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
    assert h.build(wanted) == (77, 0, wanted, [])   # (id, 0): close it, make a new one
    h.answered(wanted, True, 0, 78)
    assert not h.answered(wanted, False, ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    assert h.build(wanted) == (0, 0, wanted, [])


def test_a_lost_request_makes_the_next_one_full():
    h = FetchSessionHandler()
    wanted = {("t", 0): fp(0, 5)}
    h.answered(wanted, True, 0, 9)
    h.reset()
    assert h.build(wanted) == (9, 0, wanted, [])
