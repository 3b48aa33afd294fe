"""The soak's checks (tests/soak/checks.py): the committed-offset check on member histories
(what it fails and what it explains as a client's retry of an older commit) and the
delivery check (an acknowledgement without an offset)."""

from __future__ import annotations

from tests.soak.checks import Findings, check_commits, check_delivery


def _commit(seq: int, offset: int, ms: int) -> dict:
    return {"t": "commit", "seq": seq, "iv": 1, "offsets": [["t", 0, offset]], "ms": ms}


def _ack(seq: int, offset: int, ms: int) -> dict:
    return {"t": "commit_ack", "seq": seq, "iv": 1, "now_iv": 1, "ok": [["t", 0, offset]],
            "failed": [], "err": None, "ms": ms}


def _fetch(offset: int, ms: int) -> dict:
    return {"t": "fetch", "iv": 1, "final": False, "ms": ms, "offsets": [["t", 0, offset]]}


def test_a_fetch_below_the_last_acknowledged_commit_is_a_regression():
    f = Findings()
    check_commits(f, "m", [_commit(1, 10, 1), _ack(1, 10, 2), _commit(2, 20, 3), _ack(2, 20, 4),
                           _fetch(10, 5)])
    assert len(f.commit_regressions) == 1 and "#2" in f.commit_regressions[0]


def test_a_fetch_that_reads_an_older_commit_re_sent_and_answered_just_after_it_is_noted_not_failed():
    # the 30-minute soak's case: #1 sent to the old coordinator, re-sent by librdkafka to the
    # new one after #2; the fetch reads #1's offset and #1's answer is recorded 1 ms later
    f = Findings()
    check_commits(f, "m", [_commit(1, 10, 1), _commit(2, 20, 2), _ack(2, 20, 3), _fetch(10, 4),
                           _ack(1, 10, 5)])
    assert f.commit_regressions == []
    assert any("sent earlier and answered after the fetch" in n for n in f.notes)


def test_an_older_offset_that_no_re_sent_commit_carries_is_still_a_regression():
    f = Findings()
    check_commits(f, "m", [_commit(1, 10, 1), _commit(2, 20, 2), _ack(2, 20, 3), _fetch(9, 4),
                           _ack(1, 10, 5)])
    assert len(f.commit_regressions) == 1


def test_a_commit_sent_after_the_fetch_explains_nothing():
    f = Findings()
    check_commits(f, "m", [_commit(2, 20, 1), _ack(2, 20, 2), _fetch(10, 3), _commit(1, 10, 4),
                           _ack(1, 10, 5)])
    assert len(f.commit_regressions) == 1


def _delivered(o: int | None, read_at: list[tuple[int, int]]) -> Findings:
    f = Findings()
    acks = [{"t": "ack", "topic": "t", "p": 0, "o": 66, "v": "idem-1"},
            {"t": "ack", "topic": "t", "p": 0, "o": o, "v": "idem-2"}]
    reads = [{"t": "read", "iso": "read_committed", "topic": "t", "p": 0, "o": 66, "v": "idem-1"}]
    reads += [{"t": "read", "iso": "read_committed", "topic": "t", "p": p, "o": at, "v": "idem-2"}
              for p, at in read_at]
    check_delivery(f, acks, [], reads, [])
    return f


def test_a_record_acknowledged_at_its_offset_and_read_there_passes():
    f = _delivered(67, [(0, 67)])
    assert (f.lost, f.misplaced, f.duplicated, f.acked_idempotent) == ([], [], [], 2)


def test_a_record_read_elsewhere_than_its_acknowledged_offset_is_misplaced():
    assert len(_delivered(67, [(0, 68)]).misplaced) == 1


def test_librdkafkas_implicit_ack_without_an_offset_passes_when_read_once_in_its_partition():
    f = _delivered(None, [(0, 67)])
    assert (f.lost, f.misplaced, f.duplicated) == ([], [], [])
    assert any("without an offset" in n and n.endswith(": 1") for n in f.notes)


def test_an_offset_less_ack_read_in_another_partition_is_misplaced_and_never_read_is_lost():
    assert len(_delivered(None, [(1, 67)]).misplaced) == 1
    assert len(_delivered(None, []).lost) == 1
    assert len(_delivered(None, [(0, 67), (0, 70)]).duplicated) == 1
