"""Transactions in the log: LSO, markers, .txnindex (Kafka's format), read_committed reads,
recovery and truncation."""

from __future__ import annotations

import os
import struct

import pytest

from log.config import LogConfig
from log.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    TransactionCoordinatorFencedError,
)
from log.log import FetchIsolation
from log.producer_state import AppendOrigin, read_snapshot
from log.txn_index import ABORTED_TXN_SIZE, AbortedTxn, TransactionIndex
from wire.record_batch import (
    ControlRecordType,
    build_batch,
    build_control_batch,
    decode_control_record,
    iter_batches,
)

from .helpers import batch, open_log, reopen

SMALL_SEGMENTS = LogConfig(segment_bytes=1024, segment_index_bytes=1024, index_interval_bytes=64)


def txn_batch(pid: int, seq: int, n: int = 2, epoch: int = 0) -> bytearray:
    return batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)


def marker(log, pid: int, commit: bool, epoch: int = 0, coordinator_epoch: int = 0):
    return log.append_control_batch(commit=commit, producer_id=pid, producer_epoch=epoch,
                                    coordinator_epoch=coordinator_epoch)


def txnindex_files(log) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(log.dir)):
        if name.endswith(".txnindex"):
            with open(os.path.join(log.dir, name), "rb") as f:
                out[name] = f.read()
    return out


def committed_offsets(log, start: int = 0) -> list[int]:
    """Offsets a read_committed consumer returns: data below the LSO minus aborted
    transactions' records, control batches skipped (the client's algorithm)."""
    info = log.read(start, 1 << 20, FetchIsolation.TXN_COMMITTED)
    aborted = sorted((t.first_offset, t.producer_id) for t in info.aborted_transactions)
    out, aborting = [], set()
    for b in iter_batches(info.records.read()):
        while aborted and aborted[0][0] <= b.base_offset:
            aborting.add(aborted.pop(0)[1])
        if b.is_control:
            aborting.discard(b.producer_id)
            continue
        if b.is_transactional and b.producer_id in aborting:
            continue
        out.extend(r.offset for r in b)
    return out


def test_an_aborted_txn_entry_is_kafkas_34_byte_layout():
    txn = AbortedTxn(producer_id=7, first_offset=10, last_offset=15, last_stable_offset=16)
    assert txn.to_bytes() == struct.pack(">hqqqq", 0, 7, 10, 15, 16)
    assert ABORTED_TXN_SIZE == 34
    assert AbortedTxn.from_bytes(txn.to_bytes()) == txn


def test_the_marker_batch_is_a_transactional_control_batch_with_one_end_txn_record():
    data = build_control_batch(commit=False, producer_id=9, producer_epoch=3, coordinator_epoch=5, timestamp=1000)
    (b,) = list(iter_batches(data))
    assert b.is_control and b.is_transactional and b.producer_id == 9 and b.producer_epoch == 3
    assert b.base_sequence == -1 and b.record_count == 1
    (r,) = list(b)
    assert r.key == struct.pack(">hh", 0, 0) and r.value == struct.pack(">hi", 0, 5)
    assert decode_control_record(r) == (ControlRecordType.ABORT, 5)


def test_an_open_transaction_holds_the_lso_at_its_first_offset_until_its_marker(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(2))                 # 0-1 plain
    log.append_as_leader(txn_batch(100, 0))        # 2-3 txn of 100
    log.append_as_leader(batch(2))                 # 4-5 plain
    assert log.high_watermark == 6
    assert log.first_unstable_offset == 2 and log.last_stable_offset == 2
    marker(log, 100, commit=True)                  # 6
    assert log.first_unstable_offset is None and log.last_stable_offset == 7
    assert txnindex_files(log) == {}   # a commit is not indexed


def test_an_abort_is_indexed_with_the_lso_of_the_other_open_transaction(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(100, 0))        # 0-1 txn A (100)
    log.append_as_leader(txn_batch(200, 0))        # 2-3 txn B (200)
    marker(log, 100, commit=False)                 # 4: abort A; B still open from 2
    assert log.last_stable_offset == 2
    marker(log, 200, commit=False)                 # 5: abort B; nothing open
    assert log.last_stable_offset == 6
    files = txnindex_files(log)
    assert files == {"00000000000000000000.txnindex":
                     struct.pack(">hqqqq", 0, 100, 0, 4, 2) + struct.pack(">hqqqq", 0, 200, 2, 5, 6)}


def test_read_committed_stops_at_the_lso_and_names_the_aborted_transactions(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(100, 0))        # 0-1 aborted
    marker(log, 100, commit=False)                 # 2
    log.append_as_leader(txn_batch(200, 0))        # 3-4 committed
    marker(log, 200, commit=True)                  # 5
    log.append_as_leader(txn_batch(300, 0))        # 6-7 open
    info = log.read(0, 1 << 20, FetchIsolation.TXN_COMMITTED)
    assert [(t.producer_id, t.first_offset) for t in info.aborted_transactions] == [(100, 0)]
    assert max(b.next_offset for b in iter_batches(info.records.read())) == 6
    assert committed_offsets(log) == [3, 4]
    uncommitted = log.read(0, 1 << 20)
    assert uncommitted.aborted_transactions is None
    assert max(b.next_offset for b in iter_batches(uncommitted.records.read())) == 8
    # a fetch past the aborted transaction's marker does not name it
    assert log.read(3, 1 << 20, FetchIsolation.TXN_COMMITTED).aborted_transactions == []


def test_aborted_transactions_are_collected_across_segments(tmp_path):
    log = open_log(tmp_path, SMALL_SEGMENTS)
    log.append_as_leader(txn_batch(100, 0, n=3))
    seq = 3
    for _ in range(12):   # spans several segments
        log.append_as_leader(txn_batch(100, seq, n=3))
        seq += 3
    marker(log, 100, commit=False)
    assert log.number_of_segments() > 2
    (entry,) = [t for seg in log.log_segments() for t in seg.txn_index.all_aborted_txns()]
    assert entry.first_offset == 0 and entry.last_offset == log.log_end_offset - 1
    info = log.read(0, 1 << 20, FetchIsolation.TXN_COMMITTED)
    assert [(t.producer_id, t.first_offset) for t in info.aborted_transactions] == [(100, 0)]
    assert committed_offsets(log) == []


def test_a_marker_from_an_older_producer_epoch_is_invalid_producer_epoch(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(100, 0, epoch=2))
    with pytest.raises(InvalidProducerEpochError):
        marker(log, 100, commit=True, epoch=1)
    assert log.last_stable_offset == 0


def test_a_marker_from_an_older_coordinator_epoch_is_transaction_coordinator_fenced(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(100, 0))
    marker(log, 100, commit=True, coordinator_epoch=5)
    log.append_as_leader(txn_batch(100, 2))
    with pytest.raises(TransactionCoordinatorFencedError):
        marker(log, 100, commit=True, coordinator_epoch=4)
    marker(log, 100, commit=True, coordinator_epoch=5)
    assert log.last_stable_offset == log.log_end_offset


def test_clients_may_not_write_control_batches(tmp_path):
    log = open_log(tmp_path)
    data = bytearray(build_control_batch(commit=True, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=1))
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(data, origin=AppendOrigin.CLIENT)


def test_the_lso_waits_for_the_high_watermark_to_pass_the_marker(tmp_path):
    log = open_log(tmp_path, high_watermark_follows_log_end=False)
    log.append_as_leader(txn_batch(100, 0))        # 0-1
    marker(log, 100, commit=True)                  # 2
    log.update_high_watermark(2)
    assert log.last_stable_offset == 0   # the marker is not replicated yet
    log.update_high_watermark(3)
    assert log.last_stable_offset == 3


def test_open_transactions_survive_a_clean_restart_through_the_snapshot(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(2))
    log.append_as_leader(txn_batch(100, 0))        # 2-3 open
    log = reopen(log, clean=True)
    (entry,) = [e for e in read_snapshot(log.producer_state_manager.snapshots[4]) if e.producer_id == 100]
    assert entry.current_txn_first_offset == 2
    assert log.last_stable_offset == 2
    marker(log, 100, commit=False)
    assert log.last_stable_offset == 5
    assert [t.first_offset for t in log.active_segment().txn_index.all_aborted_txns()] == [2]


@pytest.mark.parametrize("clean", [True, False])
def test_the_txnindex_is_rebuilt_by_recovery_after_a_crash(tmp_path, clean):
    log = open_log(tmp_path, SMALL_SEGMENTS)
    seq = {100: 0, 200: 0}
    for i in range(30):
        pid = 100 if i % 2 else 200
        log.append_as_leader(txn_batch(pid, seq[pid]))
        seq[pid] += 2
        if i % 3 == 2:
            marker(log, pid, commit=i % 2 == 0)
    before = txnindex_files(log)
    assert before   # some aborts were indexed
    lso = log.last_stable_offset
    if not clean:
        for seg in log.log_segments():   # a crash that lost every .txnindex
            seg.txn_index.delete_if_exists()
    log = reopen(log, clean=clean)
    assert txnindex_files(log) == before
    assert log.last_stable_offset == lso


def test_a_torn_txnindex_is_rebuilt_on_open(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(100, 0))
    marker(log, 100, commit=False)
    log.append_as_leader(batch(1))
    before = txnindex_files(log)
    log.flush()
    log.close()
    path = os.path.join(log.dir, "00000000000000000000.txnindex")
    for cut in range(1, ABORTED_TXN_SIZE):
        with open(path, "r+b") as f:
            f.truncate(cut)
        reopened = reopen(log, clean=True, recovery_point=log.log_end_offset)
        assert txnindex_files(reopened) == before, cut
        reopened.close()


def test_truncation_drops_txnindex_entries_at_and_above_the_target(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(100, 0))        # 0-1
    marker(log, 100, commit=False)                 # 2
    log.append_as_leader(txn_batch(200, 0))        # 3-4
    marker(log, 200, commit=False)                 # 5
    log.truncate_to(5)
    assert [t.producer_id for t in log.active_segment().txn_index.all_aborted_txns()] == [100]
    assert log.last_stable_offset == 3   # 200's transaction is open again
    log.truncate_to(2)
    assert txnindex_files(log) == {"00000000000000000000.txnindex": b""}
    assert log.last_stable_offset == 0


def test_retention_deletes_a_segments_txnindex_with_it(tmp_path):
    log = open_log(tmp_path, SMALL_SEGMENTS)
    log.append_as_leader(txn_batch(100, 0))
    marker(log, 100, commit=False)
    while log.number_of_segments() < 3:
        log.append_as_leader(batch(5))
    assert "00000000000000000000.txnindex" in txnindex_files(log)
    log.maybe_increment_log_start_offset(log.log_segments()[1].base_offset)
    log.delete_old_segments()
    names = os.listdir(log.dir)
    assert "00000000000000000000.txnindex.deleted" in names and "00000000000000000000.txnindex" not in names
    log.clock.sleep(log.config.file_delete_delay_ms)
    log.scheduler.run_pending()
    assert not any(n.startswith("00000000000000000000.txnindex") for n in os.listdir(log.dir))


def test_a_follower_tracks_transactions_as_its_leader_does(tmp_path):
    leader = open_log(tmp_path, name="t-0")
    follower = open_log(tmp_path, name="t-1")
    leader.append_as_leader(txn_batch(100, 0))
    leader.append_as_leader(txn_batch(200, 0))
    marker(leader, 100, commit=False)
    follower.append_as_follower(leader.read(0, 1 << 20, FetchIsolation.LOG_END).records.read())
    assert follower.last_stable_offset == leader.last_stable_offset == 2
    assert follower.active_segment().txn_index.all_aborted_txns() == leader.active_segment().txn_index.all_aborted_txns()


def test_transaction_index_search_stops_at_an_entry_whose_lso_passes_the_bound(tmp_path):
    idx = TransactionIndex(0, os.path.join(str(tmp_path), "00000000000000000000.txnindex"))
    idx.append(AbortedTxn(1, 0, 5, 6))
    idx.append(AbortedTxn(2, 7, 10, 20))
    idx.append(AbortedTxn(3, 21, 25, 26))
    r = idx.collect_aborted_txns(0, 15)
    assert [t.producer_id for t in r.aborted_transactions] == [1, 2] and r.is_complete
    r = idx.collect_aborted_txns(6, 30)
    assert [t.producer_id for t in r.aborted_transactions] == [2, 3] and not r.is_complete
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(4, 0, 25, 26))


def test_a_transaction_index_without_a_file_at_open_answers_empty_without_touching_the_file_system(
        tmp_path, monkeypatch):
    """As Kafka's TransactionIndex (it opens the file in its constructor only if it exists):
    the first read_committed fetch of a partition that never had an abort asks nothing of
    the disk; an append still writes the file and is read back."""
    path = os.path.join(str(tmp_path), "00000000000000000000.txnindex")
    idx = TransactionIndex(0, path)
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: (_ for _ in ()).throw(AssertionError(f"stat {p}")))
    assert idx.is_empty()
    assert idx.collect_aborted_txns(0, 100).aborted_transactions == []
    monkeypatch.setattr(os.path, "exists", real_exists)
    idx.append(AbortedTxn(7, 3, 5, 5))
    assert TransactionIndex(0, path).all_aborted_txns() == [AbortedTxn(7, 3, 5, 5)]


def test_a_log_cut_at_every_byte_of_an_abort_marker_recovers_a_consistent_txnindex_and_lso(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(100, 0))        # 0-1
    marker_start = log.active_segment().size()
    marker(log, 100, commit=False)                 # 2
    marker_end = log.active_segment().size()
    log.flush()
    log.close()
    path = os.path.join(log.dir, "00000000000000000000.log")
    with open(path, "rb") as f:
        whole = f.read()
    for cut in range(marker_start, marker_end + 1):
        with open(path, "wb") as f:
            f.write(whole[:cut])
        idx = os.path.join(log.dir, "00000000000000000000.txnindex")
        with open(idx, "wb") as f:   # what the crash left: the entry, whatever the .log kept
            f.write(struct.pack(">hqqqq", 0, 100, 0, 2, 3))
        recovered = reopen(log, clean=False)
        if cut == marker_end:
            assert recovered.log_end_offset == 3 and recovered.last_stable_offset == 3
            assert txnindex_files(recovered) == {"00000000000000000000.txnindex": struct.pack(">hqqqq", 0, 100, 0, 2, 3)}
        else:   # the marker is gone: the transaction is open again and nothing is indexed
            assert recovered.log_end_offset == 2 and recovered.last_stable_offset == 0
            assert txnindex_files(recovered) == {"00000000000000000000.txnindex": b""}
        recovered.close()
        log = recovered


def test_an_empty_control_batch_left_by_the_cleaner_survives_recovery_and_replication(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(100, 0))        # 0-1
    empty = bytearray(build_batch([], base_offset=2, producer_id=100, producer_epoch=0, is_transactional=True,
                                  is_control=True, last_offset_delta=0))
    log.append_as_follower(empty)                  # 2: a marker whose record the cleaner removed
    log.append_as_leader(batch(2))                 # 3-4
    assert log.last_stable_offset == 0             # it ends nothing: the transaction stays open
    follower = open_log(tmp_path, name="topic-1")
    follower.append_as_follower(log.read(0, 1 << 20, FetchIsolation.LOG_END).records.read())
    assert follower.log_end_offset == 5 and follower.last_stable_offset == 0
    recovered = reopen(log, clean=False)
    assert recovered.log_end_offset == 5 and recovered.last_stable_offset == 0
