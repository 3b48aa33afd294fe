"""Idempotent-producer state: Kafka's ``ProducerStateEntry``, ``ProducerAppendInfo`` and
``ProducerStateManager`` with its ``.snapshot`` files.

Per producer id we keep the epoch and the metadata of its last 5 appended batches
(``NUM_BATCHES_TO_RETAIN``: first/last sequence, last offset, offset delta, max timestamp), so a
retried batch (same epoch and sequence range as one of those 5) is recognised as a duplicate
and answered with the original offsets instead of being written twice.

Sequence rules (``ProducerAppendInfo.checkSequence``, client appends only):

* epoch lower than the current one: INVALID_PRODUCER_EPOCH;
* a new (higher) epoch must start at sequence 0 unless the producer is unknown;
* same epoch: first sequence must be last sequence + 1 (wrapping at Int.MAX to 0), else
  OUT_OF_ORDER_SEQUENCE_NUMBER;
* a producer id with no state (new, expired, or its data deleted) is accepted with any
  sequence: modern Kafka no longer answers UNKNOWN_PRODUCER_ID here.

Snapshot file ``<offset:020d>.snapshot`` (Kafka's ``PID_SNAPSHOT_MAP_SCHEMA``, big-endian)::

    version int16 (=1) | crc uint32 (CRC-32C of everything after it) |
    entries: int32 count, then per producer:
      producer_id int64 | epoch int16 | last_sequence int32 | last_offset int64 |
      offset_delta int32 | timestamp int64 | coordinator_epoch int32 |
      current_txn_first_offset int64 (-1 = none)

Transactions (Kafka's ``TxnMetadata``/``CompletedTxn``): a producer's first transactional
batch after a marker (or ever) starts a transaction at its base offset
(``current_txn_first_offset``, kept in snapshots, so a reload knows its open transactions);
its marker (a control batch, decoded by the caller: ``log/control_batch.py``) completes it.
``ongoing_txns`` (first offset -> TxnMetadata, ascending) are those without a marker;
completed ones wait in ``unreplicated_txns`` until the high watermark passes their marker
(``on_high_watermark_updated``).  The **first unstable offset** is the lowest first offset
of either map; the log's LSO is min(first unstable offset, HW).  Marker rules: a marker of
an older producer epoch is INVALID_PRODUCER_EPOCH, one whose coordinator epoch is below the
producer's last one TRANSACTION_COORDINATOR_FENCED (both only logged for REPLICATION, as
Kafka); a marker for a producer with no open transaction completes nothing (no LSO move, no
``.txnindex`` entry).  Whoever appends a marker computes ``last_stable_offset(completed)``
(for the ``.txnindex`` entry of an abort) *before* ``complete_txn(completed)``.

As in Kafka, a snapshot stores only the *last* batch of each producer; batches appended after
the snapshot offset are recovered by replaying the log from there (``load_batch``).  Snapshots
are taken when a segment rolls (at the new segment's base offset) and at clean shutdown.

Who may call: ``Log`` under its lock.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

import crc32c

from log.clock import Clock
from log.config import ProducerStateManagerConfig
from log.durable_files import replace_file
from log.errors import (
    CorruptSnapshotError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from log.files import (
    DELETED_FILE_SUFFIX,
    PRODUCER_SNAPSHOT_FILE_SUFFIX,
    offset_from_file_name,
    producer_snapshot_file,
)
from wire.batch_header import NO_PRODUCER_ID, BatchHeader

if TYPE_CHECKING:
    from log.control_batch import EndTxnMarker

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "AppendOrigin",
    "BatchMetadata",
    "CompletedTxn",
    "ProducerAppendInfo",
    "ProducerStateEntry",
    "ProducerStateManager",
    "TxnMetadata",
    "read_snapshot",
    "write_snapshot",
]

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
_INT32_MAX = (1 << 31) - 1
PRODUCER_SNAPSHOT_VERSION = 1
_HEAD = struct.Struct(">hIi")  # version, crc, array length
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_OFFSET = 2
_ENTRIES_OFFSET = 6


class AppendOrigin(Enum):
    REPLICATION = "replication"
    COORDINATOR = "coordinator"
    CLIENT = "client"
    RAFT_LEADER = "raft_leader"


def _decrement_sequence(seq: int, decrement: int) -> int:
    if seq < decrement:
        return _INT32_MAX - (decrement - seq) + 1
    return seq - decrement


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return _decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class TxnMetadata:
    """A transaction of one producer in this partition: its first offset and, once its
    marker is appended, the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int | None = None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """What a marker completed: the transaction's first offset, the marker's offset, and
    whether it was an abort (Kafka's ``CompletedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ProducerStateEntry:
    """State of one producer id: epoch, coordinator epoch, last timestamp, ongoing transaction
    first offset, and up to 5 ``BatchMetadata`` (oldest first)."""

    __slots__ = ("producer_id", "producer_epoch", "coordinator_epoch", "last_timestamp",
                 "current_txn_first_offset", "batch_metadata")

    def __init__(self, producer_id: int, producer_epoch: int = NO_PRODUCER_EPOCH, coordinator_epoch: int = -1,
                 last_timestamp: int = -1, current_txn_first_offset: int | None = None,
                 first_batch: BatchMetadata | None = None) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self.batch_metadata: deque[BatchMetadata] = deque()
        if first_batch is not None:
            self.batch_metadata.append(first_batch)

    @classmethod
    def empty(cls, producer_id: int) -> ProducerStateEntry:
        return cls(producer_id)

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batch_metadata[0].first_offset if self.batch_metadata else -1

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def is_empty(self) -> bool:
        return not self.batch_metadata

    def with_producer_id_and_no_batches(self) -> ProducerStateEntry:
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch,
                                  self.last_timestamp, self.current_txn_first_offset)

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        self.maybe_update_producer_epoch(producer_epoch)
        self._add_batch_metadata(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        if self.producer_epoch != producer_epoch:
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
            return True
        return False

    def _add_batch_metadata(self, batch: BatchMetadata) -> None:
        if len(self.batch_metadata) == NUM_BATCHES_TO_RETAIN:
            self.batch_metadata.popleft()
        self.batch_metadata.append(batch)

    def update(self, next_entry: ProducerStateEntry) -> None:
        self.maybe_update_producer_epoch(next_entry.producer_epoch)
        for b in next_entry.batch_metadata:
            self._add_batch_metadata(b)
        self.coordinator_epoch = next_entry.coordinator_epoch
        self.current_txn_first_offset = next_entry.current_txn_first_offset
        self.last_timestamp = next_entry.last_timestamp

    def find_duplicate_batch(self, producer_epoch: int, base_sequence: int, last_sequence: int) -> BatchMetadata | None:
        """The retained batch with exactly this epoch and sequence range, if any."""
        if producer_epoch != self.producer_epoch:
            return None
        for m in self.batch_metadata:
            if m.first_seq == base_sequence and m.last_seq == last_sequence:
                return m
        return None

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
                f"currentTxnFirstOffset={self.current_txn_first_offset}, coordinatorEpoch={self.coordinator_epoch}, "
                f"lastTimestamp={self.last_timestamp}, batchMetadata={list(self.batch_metadata)})")


class ProducerAppendInfo:
    """Validates one append's batches of one producer against its current state and
    accumulates the updated entry (applied with ``ProducerStateManager.update``)."""

    def __init__(self, topic_partition: tuple[str, int], producer_id: int,
                 current_entry: ProducerStateEntry, origin: AppendOrigin) -> None:
        self.topic_partition = topic_partition
        self.producer_id = producer_id
        self.current_entry = current_entry
        self.origin = origin
        self.updated_entry = current_entry.with_producer_id_and_no_batches()
        self.transactions: list[TxnMetadata] = []  # transactions this append started

    def _check_producer_epoch(self, producer_epoch: int, offset: int) -> None:
        current = self.updated_entry.producer_epoch
        if producer_epoch < current and self.origin is not AppendOrigin.REPLICATION:
            raise InvalidProducerEpochError(
                f"Epoch of producer {self.producer_id} at offset {offset} in {self.topic_partition} is "
                f"{producer_epoch}, which is smaller than the last seen epoch {current}")

    def _check_sequence(self, producer_epoch: int, append_first_seq: int, offset: int) -> None:
        if producer_epoch != self.updated_entry.producer_epoch:
            if append_first_seq != 0 and self.updated_entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {self.producer_id} at offset {offset} in "
                    f"partition {self.topic_partition}: {producer_epoch} (request epoch), {append_first_seq} "
                    f"(seq. number), {self.updated_entry.producer_epoch} (current producer epoch)")
        else:
            if not self.updated_entry.is_empty():
                current_last_seq = self.updated_entry.last_seq
            elif producer_epoch == self.current_entry.producer_epoch:
                current_last_seq = self.current_entry.last_seq
            else:
                current_last_seq = NO_SEQUENCE
            # no current epoch (new producer, or its state was deleted): any sequence is fine
            if not (self.current_entry.producer_epoch == NO_PRODUCER_EPOCH
                    or append_first_seq == current_last_seq + 1
                    or (append_first_seq == 0 and current_last_seq == _INT32_MAX)):
                raise OutOfOrderSequenceError(
                    f"Out of order sequence number for producer {self.producer_id} at offset {offset} in "
                    f"partition {self.topic_partition}: {append_first_seq} (incoming seq. number), "
                    f"{current_last_seq} (current end sequence number)")

    def append(self, header: BatchHeader, marker: EndTxnMarker | None = None) -> CompletedTxn | None:
        """Account for one batch (offsets already assigned).  ``marker``: the decoded control
        record of a control batch (None for data batches; a control batch without one is
        treated as a marker of unknown type, i.e. a commit, for callers that cannot decode).
        Returns the transaction a marker completed (None for data and for a marker of a
        producer with no open transaction)."""
        if header.is_control:
            if header.record_count == 0:
                # the cleaner emptied it: its whole transaction is gone (Kafka does nothing)
                return None
            return self._append_end_txn_marker(header, marker)
        self._append_data_batch(header)
        return None

    def _append_end_txn_marker(self, header: BatchHeader, marker: EndTxnMarker | None) -> CompletedTxn | None:
        # Kafka's appendEndTxnMarker.  A control record other than ABORT/COMMIT (KRaft's
        # leader-change records) carries no producer state: it ends nothing.
        if marker is not None and marker.control_type not in (0, 1):
            return None
        offset = header.base_offset
        self._check_producer_epoch(header.producer_epoch, offset)
        coordinator_epoch = marker.coordinator_epoch if marker is not None else self.updated_entry.coordinator_epoch
        if self.updated_entry.coordinator_epoch > coordinator_epoch:
            if self.origin is not AppendOrigin.REPLICATION:
                raise TransactionCoordinatorFencedError(
                    f"Invalid coordinator epoch for producerId {self.producer_id} at offset {offset} in partition "
                    f"{self.topic_partition}: {coordinator_epoch} (zombie), {self.updated_entry.coordinator_epoch} (current)")
        completed = None
        first = self.updated_entry.current_txn_first_offset
        if first is not None:
            completed = CompletedTxn(self.producer_id, first, offset, marker is not None and marker.control_type == 0)
        self.updated_entry.maybe_update_producer_epoch(header.producer_epoch)
        self.updated_entry.current_txn_first_offset = None
        self.updated_entry.coordinator_epoch = coordinator_epoch
        self.updated_entry.last_timestamp = header.max_timestamp
        return completed

    def _append_data_batch(self, header: BatchHeader) -> None:
        first_offset = header.base_offset
        last_offset = header.base_offset + header.last_offset_delta
        self._check_producer_epoch(header.producer_epoch, first_offset)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(header.producer_epoch, header.base_sequence, first_offset)
        self.updated_entry.add_batch(header.producer_epoch, header.last_sequence, last_offset,
                                     last_offset - first_offset, header.max_timestamp)
        txn = self.updated_entry.current_txn_first_offset
        if txn is not None and not header.is_transactional:
            raise InvalidTxnStateError(
                f"Expected transactional write from producer {self.producer_id} at offset {first_offset} "
                f"in partition {self.topic_partition}")
        if txn is None and header.is_transactional:
            self.updated_entry.current_txn_first_offset = first_offset
            self.transactions.append(TxnMetadata(self.producer_id, first_offset))


def write_snapshot(path: str, entries: dict[int, ProducerStateEntry], sync: bool = True) -> None:
    body = bytearray(_HEAD.pack(PRODUCER_SNAPSHOT_VERSION, 0, len(entries)))
    for pid, e in entries.items():
        body += _ENTRY.pack(pid, e.producer_epoch, e.last_seq, e.last_data_offset, e.last_offset_delta,
                            e.last_timestamp, e.coordinator_epoch,
                            -1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
    struct.pack_into(">I", body, _CRC_OFFSET, crc32c.crc32c(memoryview(body)[_ENTRIES_OFFSET:]))
    replace_file(path, body, sync)


def read_snapshot(path: str) -> list[ProducerStateEntry]:
    with open(path, "rb") as f:
        buf = f.read()
    try:
        version, crc, count = _HEAD.unpack_from(buf, 0)
    except struct.error as e:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {e}") from None
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    computed = crc32c.crc32c(memoryview(buf)[_ENTRIES_OFFSET:])
    if crc != computed:
        raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}")
    if count < 0 or len(buf) != _HEAD.size + count * _ENTRY.size:
        raise CorruptSnapshotError("Snapshot failed schema validation: wrong size")
    out = []
    for i in range(count):
        pid, epoch, seq, offset, delta, ts, coord, txn = _ENTRY.unpack_from(buf, _HEAD.size + i * _ENTRY.size)
        batch = BatchMetadata(seq, offset, delta, ts) if offset >= 0 else None
        out.append(ProducerStateEntry(pid, epoch, coord, ts, txn if txn >= 0 else None, batch))
    return out


class ProducerStateManager:
    """Map producer id -> entry, the offset it is valid up to (``map_end_offset``) and the
    snapshot files of the log directory."""

    def __init__(self, topic_partition: tuple[str, int], log_dir: str, clock: Clock,
                 config: ProducerStateManagerConfig | None = None) -> None:
        self.topic_partition = topic_partition
        self.log_dir = log_dir
        self.clock = clock
        self.config = config or ProducerStateManagerConfig()
        self.producers: dict[int, ProducerStateEntry] = {}
        # first offset -> transaction, ascending (appends come in offset order; a reload
        # from a snapshot sorts): open transactions, and completed ones whose marker is not
        # yet below the high watermark
        self.ongoing_txns: dict[int, TxnMetadata] = {}
        self.unreplicated_txns: dict[int, TxnMetadata] = {}
        self.last_map_offset = 0
        self.last_snap_offset = 0
        self.snapshots: dict[int, str] = self._load_snapshots()

    def _load_snapshots(self) -> dict[int, str]:
        out: dict[int, str] = {}
        if os.path.isdir(self.log_dir):
            for name in os.listdir(self.log_dir):
                if name.endswith(PRODUCER_SNAPSHOT_FILE_SUFFIX):
                    try:
                        out[offset_from_file_name(name)] = os.path.join(self.log_dir, name)
                    except ValueError:
                        continue
        return dict(sorted(out.items()))

    def remove_stray_snapshots(self, segment_base_offsets: list[int]) -> None:
        """Delete snapshots that match no segment, except the largest one if it is above every
        segment (the one written at clean shutdown)."""
        snapshots = self._load_snapshots()
        bases = set(segment_base_offsets)
        latest_stray: int | None = None
        for off in list(snapshots):
            if off not in bases:
                if latest_stray is not None:
                    self._delete_file(snapshots.pop(latest_stray))
                latest_stray = off
        if latest_stray is not None and bases and latest_stray < max(bases):
            self._delete_file(snapshots.pop(latest_stray))
        self.snapshots = snapshots

    @staticmethod
    def _delete_file(path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass

    # -- state
    def is_empty(self) -> bool:
        return not self.producers

    def map_end_offset(self) -> int:
        return self.last_map_offset

    def active_producers(self) -> dict[int, ProducerStateEntry]:
        return dict(self.producers)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def find_duplicate_batch(self, header: BatchHeader) -> BatchMetadata | None:
        """If ``header`` repeats one of its producer's last 5 batches, that batch's metadata."""
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None
        return entry.find_duplicate_batch(header.producer_epoch, header.base_sequence, header.last_sequence)

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry.empty(producer_id)
        return ProducerAppendInfo(self.topic_partition, producer_id, current, origin)

    def update(self, append_info: ProducerAppendInfo) -> None:
        if append_info.producer_id == NO_PRODUCER_ID:
            raise ValueError(f"Invalid producer id {append_info.producer_id} passed to update for partition {self.topic_partition}")
        updated = append_info.updated_entry
        current = self.producers.get(append_info.producer_id)
        if current is not None:
            current.update(updated)
        else:
            self.producers[append_info.producer_id] = updated
        for txn in append_info.transactions:
            self.ongoing_txns[txn.first_offset] = txn

    # -- transactions
    def _next_incomplete_txn(self, producer_id: int) -> TxnMetadata | None:
        for txn in self.ongoing_txns.values():
            if txn.producer_id != producer_id:
                return txn
        return None

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` is done (for its ``.txnindex`` entry; call before
        ``complete_txn``): the first offset of the oldest other open transaction, else the
        offset after the marker (Kafka's ``lastStableOffset(CompletedTxn)``)."""
        nxt = self._next_incomplete_txn(completed.producer_id)
        return nxt.first_offset if nxt is not None else completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        txn = self.ongoing_txns.get(completed.first_offset)
        if txn is None:
            raise ValueError(f"Attempted to complete transaction {completed} on partition "
                             f"{self.topic_partition} which was not started")
        txn.last_offset = completed.last_offset
        # into the second map before leaving the first: Log.last_stable_offset looks at both
        # without the lock, and must never see neither while the marker is unreplicated
        self.unreplicated_txns[completed.first_offset] = txn
        del self.ongoing_txns[completed.first_offset]

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Completed transactions whose marker is below the HW no longer hold the LSO back."""
        if not self.unreplicated_txns:   # the usual case; called for every partition read (the LSO)
            return
        for first in [f for f, t in self.unreplicated_txns.items()
                      if t.last_offset is not None and t.last_offset < high_watermark]:
            del self.unreplicated_txns[first]

    def first_unstable_offset(self) -> int | None:
        """The lowest first offset of a transaction not yet decided or not yet replicated."""
        a = next(iter(self.unreplicated_txns), None)
        b = next(iter(self.ongoing_txns), None)
        if a is None:
            return b
        return a if b is None else min(a, b)

    def _reset_txns_from_producers(self) -> None:
        self.unreplicated_txns.clear()
        self.ongoing_txns = {e.current_txn_first_offset: TxnMetadata(pid, e.current_txn_first_offset)
                             for pid, e in sorted(self.producers.items(),
                                                  key=lambda kv: kv[1].current_txn_first_offset or 0)
                             if e.current_txn_first_offset is not None}

    def update_map_end_offset(self, offset: int) -> None:
        self.last_map_offset = offset

    def load_batch(self, header: BatchHeader, marker: EndTxnMarker | None = None) -> CompletedTxn | None:
        """Replay one stored batch (recovery): no sequence validation, as REPLICATION.
        Returns what a marker completed: the caller indexes an abort (with
        ``last_stable_offset``) and then calls ``complete_txn``."""
        completed = None
        if header.has_producer_id:
            info = self.prepare_update(header.producer_id, AppendOrigin.REPLICATION)
            completed = info.append(header, marker)
            self.update(info)
        self.update_map_end_offset(header.next_offset)
        return completed

    def _is_producer_expired(self, now_ms: int, entry: ProducerStateEntry) -> bool:
        return entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= self.config.producer_id_expiration_ms

    def remove_expired_producers(self, now_ms: int) -> None:
        for pid in [p for p, e in self.producers.items() if self._is_producer_expired(now_ms, e)]:
            del self.producers[pid]

    # -- snapshots
    def take_snapshot(self, sync: bool = True) -> str | None:
        if self.last_map_offset > self.last_snap_offset:
            path = producer_snapshot_file(self.log_dir, self.last_map_offset)
            write_snapshot(path, self.producers, sync)
            self.snapshots[self.last_map_offset] = path
            self.snapshots = dict(sorted(self.snapshots.items()))
            self.last_snap_offset = self.last_map_offset
            return path
        return None

    def latest_snapshot_offset(self) -> int | None:
        return next(reversed(self.snapshots), None) if self.snapshots else None

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> None:
        while True:
            latest = self.latest_snapshot_offset()
            if latest is None:
                self.last_snap_offset = log_start_offset
                self.last_map_offset = log_start_offset
                return
            try:
                for entry in read_snapshot(self.snapshots[latest]):
                    if not self._is_producer_expired(now_ms, entry):
                        self.producers[entry.producer_id] = entry
                self._reset_txns_from_producers()
                self.last_snap_offset = latest
                self.last_map_offset = latest
                return
            except (CorruptSnapshotError, OSError):
                self._remove_and_delete_snapshot(latest)

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> None:
        """Drop snapshots outside (log start, log end], then reload from the latest one if the
        map is not already at ``log_end_offset``."""
        for off in list(self.snapshots):
            if off > log_end_offset or off <= log_start_offset:
                self._remove_and_delete_snapshot(off)
        if log_end_offset != self.map_end_offset():
            self.producers.clear()
            self.ongoing_txns.clear()
            self.unreplicated_txns.clear()
            self._load_from_snapshot(log_start_offset, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self.on_high_watermark_updated(log_start_offset)  # Kafka: removeUnreplicatedTransactions
        if self.last_map_offset < log_start_offset:
            self.last_map_offset = log_start_offset
        latest = self.latest_snapshot_offset()
        self.last_snap_offset = latest if latest is not None else log_start_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        for off in list(self.snapshots):
            self._remove_and_delete_snapshot(off)
        self.last_snap_offset = 0
        self.last_map_offset = offset

    def _remove_and_delete_snapshot(self, offset: int) -> None:
        path = self.snapshots.pop(offset, None)
        if path is not None:
            self._delete_file(path)

    def remove_and_mark_snapshot_for_deletion(self, offset: int) -> str | None:
        """Forget the snapshot at ``offset`` and rename it ``.deleted``; returns the new path."""
        path = self.snapshots.pop(offset, None)
        if path is None:
            return None
        try:
            os.replace(path, path + DELETED_FILE_SUFFIX)
            return path + DELETED_FILE_SUFFIX
        except FileNotFoundError:
            return None
