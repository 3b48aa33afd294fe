"""Checkers for the replication scenarios, kept independent of the broker's code (they read
the load client's JSONL history, what a consumer read back, and the brokers' segment files
as bytes, and import nothing from kbroker/, log/ or wire/).

What they verify is what Kafka's ducktape and Jepsen's kafka workload verify:

- ducktape ``validate_delivery`` (tests/kafkatest/utils/util.py): every acknowledged record
  is read back; with idempotence on, a record read twice is a failure;
- Jepsen ``jepsen.tests.kafka``: *lost writes* (acked, never read), *inconsistent offsets*
  (two values at one (partition, offset)), *duplicates* (one value at two offsets),
  *non-contiguous* reads (a partition's offsets skip or go backwards), and, kgo-verifier
  style, an acked value read back at another offset than the one its ack named;
- kbroker's own: every replica of a partition holds byte-identical batches below the high
  watermark once the cluster is quiet, and each replica's ``leader-epoch-checkpoint`` has
  strictly increasing epochs and non-decreasing start offsets.

History formats (one JSON object a line, written by tests/support/load_client.py):
``{"t": "ack", "p": partition, "o": offset, "v": value}`` for each acknowledged record,
``{"t": "err", "p": partition, "v": value, "err": name, "retriable": bool}`` for each failed
one, ``{"t": "read", "p": partition, "o": offset, "v": value}`` for each record read back.
Values are unique per record (the producer's name and a sequence number), which is what
makes a duplicate or a misplaced record visible.
"""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# -- histories ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    value: str


@dataclass
class History:
    acked: list[Record] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)  # the "err" lines as written
    reads: list[Record] = field(default_factory=list)

    def extend(self, other: History) -> History:
        self.acked += other.acked
        self.failed += other.failed
        self.reads += other.reads
        return self


def read_history(*paths: Path) -> History:
    """Every ack, error and read line of the given JSONL files (a torn last line, from a
    writer killed mid-line, is ignored)."""
    h = History()
    for path in paths:
        for line in Path(path).read_text().splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue
            kind = e.get("t")
            if kind == "ack":
                h.acked.append(Record(e["p"], e["o"], e["v"]))
            elif kind == "read":
                h.reads.append(Record(e["p"], e["o"], e["v"]))
            elif kind == "err":
                h.failed.append(e)
    return h


@dataclass
class DeliveryReport:
    acked: int
    read: int
    lost: list[Record]                          # acked, never read back
    inconsistent: dict[tuple[int, int], set[str]]  # (partition, offset) -> the values seen there
    misplaced: list[tuple[Record, int]]         # acked at one offset, read at another
    duplicates: dict[str, list[tuple[int, int]]]  # value -> the (partition, offset)s it was read at
    gaps: list[str]                             # per partition: skipped or backwards offsets

    @property
    def ok(self) -> bool:
        return not (self.lost or self.inconsistent or self.misplaced or self.duplicates or self.gaps)

    def summary(self, limit: int = 10) -> str:
        lines = [f"{self.acked} acked, {self.read} read"]
        if self.lost:
            lines.append(f"{len(self.lost)} LOST acked records, e.g. {self.lost[:limit]}")
        if self.inconsistent:
            lines.append(f"{len(self.inconsistent)} offsets holding two values, e.g. "
                         f"{dict(list(self.inconsistent.items())[:limit])}")
        if self.misplaced:
            lines.append(f"{len(self.misplaced)} records read at another offset than acked, e.g. "
                         f"{self.misplaced[:limit]}")
        if self.duplicates:
            lines.append(f"{len(self.duplicates)} DUPLICATED values, e.g. "
                         f"{dict(list(self.duplicates.items())[:limit])}")
        if self.gaps:
            lines.append(f"{len(self.gaps)} non-contiguous reads, e.g. {self.gaps[:limit]}")
        return "; ".join(lines)


def check_delivery(history: History, *, log_start: dict[int, int] | None = None) -> DeliveryReport:
    """Compare what was acknowledged with what was read back: one pass over the whole of
    each partition, from ``log_start`` (default 0) to the high watermark, in the order the
    consumer returned it."""
    log_start = log_start or {}
    at_offset: dict[tuple[int, int], set[str]] = defaultdict(set)
    read_at: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in history.reads:
        at_offset[(r.partition, r.offset)].add(r.value)
        read_at[r.value].append((r.partition, r.offset))
    for a in history.acked:
        at_offset[(a.partition, a.offset)].add(a.value)

    lost: list[Record] = []
    misplaced: list[tuple[Record, int]] = []
    for a in history.acked:
        where = read_at.get(a.value)
        if not where:
            lost.append(a)
        elif (a.partition, a.offset) not in where:
            misplaced.append((a, where[0][1]))

    # A value read at two different places is a duplicate (a (partition, offset) read twice
    # is caught by the contiguity check below instead).
    duplicates = {v: sorted(set(w)) for v, w in read_at.items() if len(set(w)) > 1}

    gaps: list[str] = []
    by_partition: dict[int, list[int]] = defaultdict(list)
    for r in history.reads:
        by_partition[r.partition].append(r.offset)
    for p, offsets in sorted(by_partition.items()):
        expected = log_start.get(p, 0)
        for o in offsets:
            if o != expected:
                gaps.append(f"partition {p}: offset {o} read where {expected} was next")
                break
            expected = o + 1

    return DeliveryReport(
        acked=len(history.acked), read=len(history.reads), lost=lost,
        inconsistent={k: v for k, v in at_offset.items() if len(v) > 1},
        misplaced=misplaced, duplicates=duplicates, gaps=gaps,
    )


def assert_delivered(history: History, **kw: object) -> DeliveryReport:
    report = check_delivery(history, **kw)  # type: ignore[arg-type]
    assert report.ok, report.summary()
    return report


# -- replicas on disk ---------------------------------------------------------------------

# Kafka's record batch header (magic 2), big-endian: baseOffset int64, batchLength int32
# (bytes after this field), partitionLeaderEpoch int32, magic int8, crc uint32, attributes
# int16, lastOffsetDelta int32, ...  A batch occupies 12 + batchLength bytes.
_BATCH_HEAD = struct.Struct(">qiibIhi")
LOG_OVERHEAD = 12


@dataclass(frozen=True)
class Batch:
    base_offset: int
    last_offset: int
    leader_epoch: int
    raw: bytes


def segment_files(partition_dir: Path) -> list[Path]:
    """The partition's ``<20-digit base offset>.log`` segments in offset order."""
    return sorted(Path(partition_dir).glob("*.log"), key=lambda p: int(p.stem))


def read_batches(partition_dir: Path) -> list[Batch]:
    """Every whole batch in the partition's segments, in order; a torn tail (a batch still
    being written, or cut by a crash) ends a segment's reading."""
    batches: list[Batch] = []
    for seg in segment_files(partition_dir):
        data = seg.read_bytes()
        pos = 0
        while pos + _BATCH_HEAD.size <= len(data):
            base, length, epoch, _magic, _crc, _attrs, last_delta = _BATCH_HEAD.unpack_from(data, pos)
            end = pos + LOG_OVERHEAD + length
            if length <= 0 or end > len(data):
                break
            batches.append(Batch(base, base + last_delta, epoch, data[pos:end]))
            pos = end
    return batches


@dataclass
class ReplicaReport:
    problems: list[str]
    batches_compared: int

    @property
    def ok(self) -> bool:
        return not self.problems


def compare_replicas(partition_dirs: dict[int, Path], high_watermark: int,
                     log_start: int = 0) -> ReplicaReport:
    """Each replica (broker id -> its partition directory) must hold the same batches, byte
    for byte, from ``log_start`` up to ``high_watermark``, and they must chain without a gap
    (a batch's base offset is the previous batch's last offset + 1)."""
    problems: list[str] = []
    below: dict[int, list[Batch]] = {}
    for broker, d in sorted(partition_dirs.items()):
        if not Path(d).is_dir():
            problems.append(f"broker {broker}: no partition directory {d}")
            continue
        bs = [b for b in read_batches(d) if b.base_offset < high_watermark and b.last_offset >= log_start]
        below[broker] = bs
        expected = log_start
        for b in bs:
            if b.base_offset > expected:
                problems.append(f"broker {broker}: gap, batch at {b.base_offset} where {expected} was next")
                break
            if b.last_offset < expected:
                problems.append(f"broker {broker}: batch {b.base_offset}..{b.last_offset} repeats offsets "
                                f"below {expected}")
                break
            expected = b.last_offset + 1
        if expected < high_watermark:
            problems.append(f"broker {broker}: holds offsets up to {expected}, below the high watermark "
                            f"{high_watermark}")
    if len(below) >= 2:
        reference_broker, reference = next(iter(below.items()))
        for broker, bs in below.items():
            if broker == reference_broker:
                continue
            for i, (x, y) in enumerate(zip(reference, bs, strict=False)):
                if x.raw != y.raw:
                    problems.append(f"broker {broker} differs from broker {reference_broker} at batch {i} "
                                    f"(offsets {y.base_offset}..{y.last_offset} epoch {y.leader_epoch} vs "
                                    f"{x.base_offset}..{x.last_offset} epoch {x.leader_epoch})")
                    break
            if len(bs) != len(reference) and not any(p.startswith(f"broker {broker}") for p in problems):
                problems.append(f"broker {broker} has {len(bs)} batches below the high watermark, broker "
                                f"{reference_broker} {len(reference)}")
    return ReplicaReport(problems, sum(len(bs) for bs in below.values()))


def read_leader_epoch_checkpoint(partition_dir: Path) -> list[tuple[int, int]]:
    """``leader-epoch-checkpoint``: a version line (0), a count line, then "epoch startOffset"
    lines (Kafka's LeaderEpochCheckpointFile).  Missing file: no entries."""
    path = Path(partition_dir) / "leader-epoch-checkpoint"
    if not path.exists():
        return []
    lines = path.read_text().split("\n")
    version, count = int(lines[0]), int(lines[1])
    assert version == 0, f"{path}: version {version}"
    entries = [tuple(map(int, line.split())) for line in lines[2:2 + count]]
    return [(e, s) for e, s in entries]


def check_leader_epochs(partition_dir: Path) -> list[str]:
    entries = read_leader_epoch_checkpoint(partition_dir)
    problems = []
    for (e1, s1), (e2, s2) in zip(entries, entries[1:], strict=False):
        if e2 <= e1 or s2 < s1:
            problems.append(f"{partition_dir}: leader-epoch-checkpoint not increasing: ({e1}, {s1}) then ({e2}, {s2})")
    return problems


def partition_dirs(log_dirs: dict[int, Path], topic: str, partition: int) -> dict[int, Path]:
    return {b: Path(d) / f"{topic}-{partition}" for b, d in log_dirs.items()}


def write_jsonl(path: Path, entries: Iterable[dict]) -> None:
    with open(path, "a") as f:
        for e in entries:
            f.write(json.dumps(e) + "\n")
