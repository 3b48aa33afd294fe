"""Idempotent producers: duplicates of the last 5 batches, sequence and epoch errors, restarts."""

import pytest

from log.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from log.producer_state import read_snapshot

from .helpers import batch, open_log, reopen

PID = 4242


def pbatch(seq, n=2, epoch=0, pid=PID):
    return batch(n=n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_a_retried_batch_among_the_last_five_is_detected_as_a_duplicate(tmp_path):
    log = open_log(tmp_path)
    infos = [log.append_as_leader(pbatch(2 * i)) for i in range(7)]
    leo = log.log_end_offset
    for i in range(2, 7):  # the last 5
        dup = log.append_as_leader(pbatch(2 * i))
        assert dup.duplicate and (dup.first_offset, dup.last_offset) == (infos[i].first_offset, infos[i].last_offset)
    assert log.log_end_offset == leo
    with pytest.raises(OutOfOrderSequenceError):  # batch 1 is no longer retained
        log.append_as_leader(pbatch(2))


def test_sequence_gaps_and_old_epochs_are_rejected_with_kafkas_errors(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(pbatch(0))
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(pbatch(5))
    log.append_as_leader(pbatch(0, epoch=1))  # new epoch restarts at 0
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(pbatch(2, epoch=0))
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(pbatch(3, epoch=2))  # new epoch must start at 0


def test_the_first_batch_of_an_unknown_producer_is_accepted_with_any_sequence(tmp_path):
    log = open_log(tmp_path)
    info = log.append_as_leader(pbatch(1000, pid=77))
    assert not info.duplicate
    log.append_as_leader(pbatch(1002, pid=77))


def test_duplicates_are_still_detected_after_a_clean_restart(tmp_path):
    log = open_log(tmp_path)
    infos = [log.append_as_leader(pbatch(2 * i)) for i in range(3)]
    again = reopen(log, clean=True)
    dup = again.append_as_leader(pbatch(4))
    assert dup.duplicate and dup.first_offset == infos[2].first_offset


def test_duplicates_are_detected_after_a_crash_from_the_roll_snapshot_plus_log_replay(tmp_path):
    log = open_log(tmp_path)
    infos = []
    seq = 0
    while log.number_of_segments() < 3:
        infos.append(log.append_as_leader(pbatch(seq)))
        seq += 2
    tail = [log.append_as_leader(pbatch(seq + 2 * i)) for i in range(3)]
    snaps = sorted(log.producer_state_manager.snapshots)
    assert snaps and snaps[-1] == log.active_segment().base_offset
    entries = read_snapshot(log.producer_state_manager.snapshots[snaps[-1]])
    assert [e.producer_id for e in entries] == [PID]
    again = reopen(log, clean=False, recovery_point=log.active_segment().base_offset)
    for i, info in enumerate(tail):  # appended after the snapshot: found by replay
        dup = again.append_as_leader(pbatch(seq + 2 * i))
        assert dup.duplicate and dup.first_offset == info.first_offset
    nxt = again.append_as_leader(pbatch(seq + 6))
    assert not nxt.duplicate and nxt.first_offset == tail[-1].last_offset + 1
