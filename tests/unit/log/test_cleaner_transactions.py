"""Log compaction with transactions (Kafka's CleanedTransactionMetadata): aborted data is
removed and never hides committed values, markers stay while data of their transaction
remains and then until delete.retention.ms, the cleaned segment's .txnindex keeps the aborts
still needed, an open transaction is not cleaned."""

from __future__ import annotations

import os
from dataclasses import replace

from log.config import CleanerConfig
from log.log import FetchIsolation
from log.log_cleaner import LogCleaner
from wire.record_batch import ControlRecordType, build_batch, decode_control_record, iter_batches

from .helpers import COMPACT, keyed, open_log

DAY = 86_400_000


def _setup(tmp_path, **cfg):
    log = open_log(tmp_path, replace(COMPACT, **cfg))
    cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [str(tmp_path)], {log.topic_partition: log},
                         log.clock)
    return log, cleaner


class Txns:
    """A few transactional producers writing keyed records."""

    def __init__(self, log):
        self.log = log
        self.seq: dict[int, int] = {}

    def write(self, pid: int, records):
        seq = self.seq.get(pid, 0)
        enc = [(k.encode(), v.encode(), None, self.log.clock.milliseconds()) for k, v in records]
        self.log.append_as_leader(bytearray(build_batch(enc, producer_id=pid, producer_epoch=0, base_sequence=seq,
                                                        is_transactional=True)))
        self.seq[pid] = seq + len(records)

    def end(self, pid: int, commit: bool):
        self.log.append_control_batch(commit=commit, producer_id=pid, producer_epoch=0, coordinator_epoch=0)


def _batches(log, start=0):
    """Every batch below the HW (a read returns one segment's batches at most)."""
    out = []
    while start < log.high_watermark:
        got = list(iter_batches(log.read(start, 1 << 24).records.read()))
        if not got:
            break
        out += got
        start = got[-1].next_offset
    return out


def _committed_view(log) -> dict[bytes, bytes]:
    """key -> value as a read_committed consumer ends up with (aborted records skipped)."""
    batches, aborted, start = [], set(), 0
    while start < log.last_stable_offset:
        info = log.read(start, 1 << 24, FetchIsolation.TXN_COMMITTED)
        got = list(iter_batches(info.records.read()))
        if not got:
            break
        batches += got
        aborted |= {(t.first_offset, t.producer_id) for t in info.aborted_transactions}
        start = got[-1].next_offset
    aborted = sorted(aborted)
    out, aborting = {}, set()
    for b in batches:
        while aborted and aborted[0][0] <= b.base_offset:
            aborting.add(aborted.pop(0)[1])
        if b.is_control:
            aborting.discard(b.producer_id)
            continue
        if b.is_transactional and b.producer_id in aborting:
            continue
        for r in b:
            out[r.key] = r.value
    return out


def _markers(log):
    out = []
    for b in _batches(log):
        if b.is_control and b.record_count:
            (r,) = list(b)
            out.append((b.producer_id, b.base_offset, decode_control_record(r)[0]))
    return out


def test_aborted_records_are_removed_and_do_not_hide_older_committed_values(tmp_path):
    log, cleaner = _setup(tmp_path)
    t = Txns(log)
    log.append_as_leader(keyed([("a", "committed-a"), ("b", "committed-b")]))
    t.write(7, [("a", "aborted-a"), ("c", "aborted-c")])
    t.end(7, commit=False)
    t.write(8, [("b", "txn-b")])
    t.end(8, commit=True)
    log.append_as_leader(keyed([("d", "plain-d")]))
    log.roll()
    view_before = _committed_view(log)
    assert view_before == {b"a": b"committed-a", b"b": b"txn-b", b"d": b"plain-d"}
    assert cleaner.clean_once().committed
    values = [r.value for b in _batches(log) if not b.is_control for r in b]
    assert b"aborted-a" not in values and b"aborted-c" not in values
    assert b"committed-a" in values   # the aborted "a" did not supersede it
    assert _committed_view(log) == view_before


def test_an_abort_marker_stays_while_its_data_remains_then_until_delete_retention(tmp_path):
    log, cleaner = _setup(tmp_path, delete_retention_ms=DAY)
    t = Txns(log)
    t.write(7, [("a", "x"), ("b", "y")])
    t.end(7, commit=False)
    t.write(8, [("c", "z")])      # producer 7's marker is not its producer's ... last entry for 8
    t.end(8, commit=True)
    t.write(7, [("e", "later")])  # so producer 7's last entry is a later batch
    t.end(7, commit=True)
    log.append_as_leader(keyed([("f", "plain")]))
    log.roll()
    abort_offset = 2
    assert (7, abort_offset, ControlRecordType.ABORT) in _markers(log)

    cleaner.clean_once()  # round 1: aborted batches go; their marker stays (data was met) and is re-indexed
    assert (7, abort_offset, ControlRecordType.ABORT) in _markers(log)
    indexed = [x for seg in log.log_segments() for x in seg.txn_index.all_aborted_txns()]
    assert [(x.producer_id, x.first_offset, x.last_offset) for x in indexed] == [(7, 0, abort_offset)]
    # on disk too, under the cleaned segment's name (the .txnindex went through .cleaned/.swap)
    files = {n: open(os.path.join(log.dir, n), "rb").read() for n in os.listdir(log.dir) if n.endswith(".txnindex")}
    assert files == {"00000000000000000000.txnindex": indexed[0].to_bytes()}

    log.append_as_leader(keyed([("g", "1")]))
    log.roll()
    cleaner.clean_once()  # round 2: no data left: the marker gets a delete horizon, still there
    assert (7, abort_offset, ControlRecordType.ABORT) in _markers(log)
    assert [x for seg in log.log_segments() for x in seg.txn_index.all_aborted_txns()] == []

    log.clock.sleep(DAY + 1)
    log.append_as_leader(keyed([("h", "1")]))
    log.roll()
    cleaner.clean_once()  # round 3: past delete.retention.ms: the marker is gone
    assert (7, abort_offset, ControlRecordType.ABORT) not in _markers(log)
    assert _committed_view(log) == {b"c": b"z", b"e": b"later", b"f": b"plain", b"g": b"1", b"h": b"1"}


def test_an_open_transaction_is_not_cleaned(tmp_path):
    log, cleaner = _setup(tmp_path)
    t = Txns(log)
    log.append_as_leader(keyed([("a", "old")]))
    log.roll()
    t.write(7, [("a", "open")])   # open: the LSO stops here
    log.roll()
    log.append_as_leader(keyed([("a", "newer")]))
    log.roll()
    assert log.last_stable_offset == 1
    cleaner.clean_once()
    values = [r.value for b in _batches(log) for r in b if not b.is_control]
    assert values == [b"old", b"open", b"newer"]   # nothing at or past the LSO was cleaned
