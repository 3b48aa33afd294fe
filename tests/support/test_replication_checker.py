"""The replication checkers themselves: each one fails on the history or the replica files
it exists to catch (a lost acked record, a duplicate, two values at one offset, a record at
another offset than acked, a gap, a replica that differs byte-wise or stops short of the
high watermark, a leader-epoch-checkpoint going backwards), and passes a clean one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.replication_checker import (
    History,
    Record,
    check_delivery,
    check_leader_epochs,
    compare_replicas,
    read_batches,
    read_history,
)
from wire.record_batch import build_batch


def clean_history() -> History:
    acked = [Record(p, o, f"L-{p}-{o}") for p in range(2) for o in range(5)]
    return History(acked=list(acked), reads=list(acked))


def test_a_history_where_every_acked_record_is_read_once_in_order_passes():
    report = check_delivery(clean_history())
    assert report.ok, report.summary()
    assert (report.acked, report.read) == (10, 10)


def test_an_acked_record_never_read_back_is_reported_lost():
    h = clean_history()
    h.acked.append(Record(0, 5, "L-0-5"))
    report = check_delivery(h)
    assert not report.ok
    assert report.lost == [Record(0, 5, "L-0-5")]
    assert "1 LOST" in report.summary()


def test_a_value_read_at_two_offsets_is_a_duplicate():
    h = clean_history()
    h.reads.append(Record(0, 5, "L-0-3"))  # the retried batch appended again
    report = check_delivery(h)
    assert report.duplicates == {"L-0-3": [(0, 3), (0, 5)]}
    assert not report.ok


def test_an_offset_acked_with_one_value_and_read_with_another_is_inconsistent():
    h = clean_history()
    h.acked.append(Record(1, 5, "zombie-ack"))  # acked by a deposed leader, overwritten
    h.reads.append(Record(1, 5, "new-leader"))
    report = check_delivery(h)
    assert report.inconsistent == {(1, 5): {"zombie-ack", "new-leader"}}
    assert report.lost == [Record(1, 5, "zombie-ack")]


def test_an_acked_record_read_back_at_another_offset_is_misplaced():
    h = clean_history()
    h.acked.append(Record(0, 5, "L-0-x"))
    h.reads.append(Record(0, 5, "L-0-y"))
    h.reads.append(Record(0, 6, "L-0-x"))
    report = check_delivery(h)
    assert report.misplaced == [(Record(0, 5, "L-0-x"), 6)]


def test_reads_that_skip_an_offset_or_go_backwards_are_not_contiguous():
    h = clean_history()
    h.reads = [r for r in h.reads if (r.partition, r.offset) != (1, 2)]
    assert check_delivery(h).gaps == ["partition 1: offset 3 read where 2 was next"]
    h2 = clean_history()
    h2.reads.insert(3, Record(0, 1, "L-0-1"))
    assert check_delivery(h2).gaps == ["partition 0: offset 1 read where 3 was next"]


def test_reads_may_start_at_the_log_start_offset():
    h = clean_history()
    h.reads = [r for r in h.reads if not (r.partition == 0 and r.offset < 2)]
    h.acked = [a for a in h.acked if not (a.partition == 0 and a.offset < 2)]
    assert check_delivery(h, log_start={0: 2}).ok
    assert check_delivery(h).gaps == ["partition 0: offset 2 read where 0 was next"]


def test_the_load_client_jsonl_is_read_back_into_a_history(tmp_path):
    f = tmp_path / "h.jsonl"
    f.write_text("\n".join(json.dumps(e) for e in [
        {"t": "ack", "p": 0, "o": 0, "v": "a", "ms": 1},
        {"t": "err", "p": 1, "v": "b", "err": "NOT_ENOUGH_REPLICAS", "retriable": True, "fatal": False},
        {"t": "read", "p": 0, "o": 0, "v": "a"},
        {"t": "done", "sent": 2},
    ]) + "\n{\"t\": \"ack\", \"p\"")  # a torn last line, as from a killed writer
    h = read_history(f)
    assert h.acked == [Record(0, 0, "a")] and h.reads == [Record(0, 0, "a")]
    assert [e["err"] for e in h.failed] == ["NOT_ENOUGH_REPLICAS"]


# -- replicas on disk ------------------------------------------------------------------------


def write_segment(partition_dir: Path, base: int, batches: list[bytes]) -> None:
    partition_dir.mkdir(parents=True, exist_ok=True)
    (partition_dir / f"{base:020d}.log").write_bytes(b"".join(batches))


def batches(first: int, count: int, per_batch: int = 3, epoch: int = 0, tag: bytes = b"v") -> list[bytes]:
    out = []
    for i in range(count):
        base = first + i * per_batch
        out.append(build_batch([(None, tag + b"%d" % (base + j), [], 1_700_000_000_000) for j in range(per_batch)],
                               base_offset=base, partition_leader_epoch=epoch, base_timestamp=1_700_000_000_000))
    return out


@pytest.fixture
def three_replicas(tmp_path) -> dict[int, Path]:
    dirs = {b: tmp_path / f"b{b}" / "t-0" for b in (1, 2, 3)}
    for d in dirs.values():
        write_segment(d, 0, batches(0, 4))          # offsets 0..11
        write_segment(d, 12, batches(12, 2, epoch=1))  # offsets 12..17
    return dirs


def test_replicas_with_the_same_batches_across_segments_compare_equal(three_replicas):
    assert [b.base_offset for b in read_batches(three_replicas[1])] == [0, 3, 6, 9, 12, 15]
    report = compare_replicas(three_replicas, high_watermark=18)
    assert report.ok, report.problems
    assert report.batches_compared == 18


def test_a_replica_whose_batch_differs_below_the_high_watermark_is_reported(three_replicas):
    d = three_replicas[3]
    (d / f"{12:020d}.log").write_bytes(b"".join(batches(12, 2, epoch=2)))  # a divergent tail
    report = compare_replicas(three_replicas, high_watermark=18)
    assert report.problems == ["broker 3 differs from broker 1 at batch 4 (offsets 12..14 epoch 2 vs 12..14 epoch 1)"]
    # above the high watermark replicas may differ: that part is not committed
    assert compare_replicas(three_replicas, high_watermark=12).ok


def test_a_replica_short_of_the_high_watermark_or_with_a_gap_is_reported(three_replicas):
    (three_replicas[2] / f"{12:020d}.log").unlink()
    report = compare_replicas(three_replicas, high_watermark=18)
    assert "broker 2: holds offsets up to 12, below the high watermark 18" in report.problems
    (three_replicas[3] / f"{0:020d}.log").write_bytes(b"".join(batches(0, 2) + batches(9, 1)))
    assert "broker 3: gap, batch at 9 where 6 was next" in compare_replicas(three_replicas, 18).problems


def test_a_torn_last_batch_is_not_read(three_replicas):
    seg = three_replicas[1] / f"{12:020d}.log"
    seg.write_bytes(seg.read_bytes()[:-5])
    assert [b.base_offset for b in read_batches(three_replicas[1])] == [0, 3, 6, 9, 12]


def test_a_leader_epoch_checkpoint_going_backwards_is_reported(tmp_path):
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n3\n0 0\n2 10\n5 40\n")
    assert check_leader_epochs(tmp_path) == []
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n2\n2 10\n1 40\n")
    assert check_leader_epochs(tmp_path) == [
        f"{tmp_path}: leader-epoch-checkpoint not increasing: (2, 10) then (1, 40)"]
