"""Log: one partition's log as the broker sees it (Kafka's ``UnifiedLog``, local part only).

On top of ``LocalLog`` (segments, LEO, recovery point) it keeps the **log start offset**
(first offset a client may read; moved by retention and DeleteRecords, never above the high
watermark), the **high watermark** (single node: follows the LEO when
``high_watermark_follows_log_end`` is set; replicated logs have it moved by the partition
layer: the leader from its followers' progress, a follower from the leader's fetch answers), the
**producer state** (duplicate detection and sequence checks for idempotent producers) and the
**policies**: when to roll, what retention deletes, when to flush.

Append path (``append_as_leader``): validate and assign offsets (``log.validator``, pure), roll
if the batch does not fit / segment.ms passed / an index is full, check producer sequences and
detect a duplicate (then nothing is written and the original offsets are returned), write the
bytes to the active segment, move LEO and HW, update producer state, maybe flush
(flush.messages).  Records are never decoded on this path.

Read path (``read``): OFFSET_OUT_OF_RANGE below the log start offset or above the LEO; else a
``FetchDataInfo`` whose ``records`` is a zero-copy ``RecordsSlice`` of whole stored batches,
starting with the batch that contains the offset, bounded by the HW (or LEO) and by
``max_bytes`` except that the first batch is always whole (KIP-74).

Transactions: producer state (producer_state.py) tracks each producer's open transaction;
a marker (``append_control_batch``, origin COORDINATOR; or a follower's copy) completes it,
and an ABORT is written to the active segment's ``.txnindex`` with the LSO of that moment.
``last_stable_offset`` = min(first unstable offset, HW); a ``TXN_COMMITTED`` read stops
there and carries ``aborted_transactions`` for the range read (``collect_aborted_transactions``).

Leader epochs: ``leader_epoch_cache`` (leader_epoch_cache.py, the partition's
``leader-epoch-checkpoint``) maps each leader epoch to its first offset.  The partition layer
assigns its epoch when it leads (``maybe_assign_epoch_start_offset``, Kafka's makeLeader);
appends assign the ``partitionLeaderEpoch`` of their batches when it is new; truncation and
log start offset moves trim it; ``end_offset_for_epoch`` answers OffsetForLeaderEpoch.

Compaction: the log cleaner rewrites non-active segments elsewhere and swaps them in with
``replace_segments``; ``truncations`` counts truncations so it can tell that the log changed
under a cleaning (log_cleaner.py).

Thread safety: mutations take ``self.lock`` (an RLock); reads take it only to snapshot the
bounds.  Nothing that can take milliseconds runs under the lock while an append may wait for
it: a flush (the roll-time ``flush-log`` task on the background thread, flush.ms, shutdown)
picks its segments under the lock, fsyncs them *outside* it, then takes the lock again only
to move the recovery point (Kafka's ``UnifiedLog.flush`` does the same); segment files are
deleted by scheduled tasks, not under the lock; a compaction swap fsyncs the directory
outside the lock too (``replace_lock``, taken before ``lock``, keeps truncation, retention
deletion and close from interleaving with it).  Who may call: the broker (partition layer), ``LogManager`` and the log cleaner's
commit, all on the log owner's thread.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from enum import Enum

from log.clock import Clock
from log.config import LogConfig, ProducerStateManagerConfig
from log.control_batch import control_record_type, marker_batch
from log.durable_batch import durable_write_batch
from log.errors import (
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    UnexpectedAppendOffsetError,
)
from log.file_records import FetchDataInfo
from log.files import DELETED_FILE_SUFFIX, parse_topic_partition_name
from log.leader_epoch_cache import UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache
from log.loader import LogLoader
from log.local_log import LocalLog
from log.partition_metadata_file import InconsistentTopicIdError, PartitionMetadataFile
from log.producer_state import AppendOrigin, ProducerStateManager
from log.producer_state_rebuild import rebuild_producer_state
from log.retention import SegmentRetention
from log.scheduler import Scheduler
from log.segment import LogSegment
from log.segments import LogSegments
from log.txn_index import AbortedTxn
from log.types import (
    LogAppendInfo,
    LogOffsetMetadata,
    OffsetPosition,
    TimestampAndOffset,
)
from log.validator import ValidationResult, validate_and_assign_offsets
from wire.batch_header import LOG_OVERHEAD
from wire.uuids import uuid_to_string

__all__ = ["EARLIEST_LOCAL_TIMESTAMP", "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP",
           "FetchIsolation", "Log", "UnifiedLog"]

_log = logging.getLogger(__name__)

# ListOffsets special timestamps (ListOffsetsRequest)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5


class FetchIsolation(Enum):
    LOG_END = "log_end"  # followers
    HIGH_WATERMARK = "high_watermark"  # consumers (read_uncommitted)
    TXN_COMMITTED = "txn_committed"  # read_committed: up to the last stable offset


class Log(SegmentRetention):
    def __init__(self, log_start_offset: int, local_log: LocalLog,
                 producer_state_manager: ProducerStateManager, high_watermark_follows_log_end: bool = True,
                 leader_epoch_cache: LeaderEpochFileCache | None = None) -> None:
        self.lock = threading.RLock()
        # Held (before ``lock``: lock order replace_lock, then lock) by a segment replacement
        # for its whole length, directory fsyncs included, and by everything else that removes
        # or truncates segments or closes the log (truncation, retention deletion, close,
        # delete): so a replacement need not hold ``lock`` across its fsyncs (appends, reads,
        # rolls and flushes go on), and what it checked under ``lock`` (log open, not
        # truncated, its old segments still in the map with their sizes) stays true until
        # its swap is durable: its ``.swap`` files never outlive a change that makes them stale.
        self.replace_lock = threading.RLock()
        self.leader_epoch_cache = leader_epoch_cache or LeaderEpochFileCache(
            local_log.dir, local_log.topic_partition, local_log.scheduler)
        self.local_log = local_log
        self.producer_state_manager = producer_state_manager
        self.high_watermark_follows_log_end = high_watermark_follows_log_end
        self.log_start_offset = log_start_offset
        self.truncations = 0  # bumped by every truncation; a cleaning that saw another value aborts
        self.high_watermark_metadata = LogOffsetMetadata(log_start_offset)
        # The topic id (KIP-516) in ``partition.metadata``: read by ``open``, else None until
        # ``assign_topic_id``; written off the appending path (see assign_topic_id).
        self.partition_metadata = PartitionMetadataFile(local_log.dir)
        self.topic_id: uuid.UUID | None = None
        first = local_log.segments.first_segment_base_offset()
        self.log_start_offset = max(log_start_offset, first if first is not None else 0)
        if high_watermark_follows_log_end:
            self.high_watermark_metadata = local_log.log_end_offset_metadata()

    # ------------------------------------------------------------------ open
    @classmethod
    def open(cls, dir_: str, config: LogConfig, clock: Clock, scheduler: Scheduler,
             log_start_offset: int = 0, recovery_point: int = 0, had_clean_shutdown: bool = False,
             producer_state_config: ProducerStateManagerConfig | None = None,
             high_watermark_follows_log_end: bool = True) -> Log:
        """Open (creating the directory if needed) and recover the log in ``dir_``.  A
        directory created here is empty, so nothing is looked for in it (no scans for
        leftovers, segments, snapshots, a stored leader epoch checkpoint or
        partition.metadata): a new partition costs its directory, its first segment's
        ``.log``/``.index``/``.timeindex`` and an empty ``leader-epoch-checkpoint``, which is
        what Kafka creates (kbroker/replica/topic_creation.py opens thousands at a time)."""
        new_dir = _create_dir(dir_)
        tp = parse_topic_partition_name(dir_)
        segments = LogSegments()
        epoch_cache = LeaderEpochFileCache(dir_, tp, scheduler, stored=not new_dir)
        loader = LogLoader(dir_, config, clock, scheduler, had_clean_shutdown, segments, log_start_offset, recovery_point,
                           epoch_cache)
        offsets = loader.load(new_dir=new_dir)
        active = segments.active_segment()
        local = LocalLog(dir_, config, segments, offsets.recovery_point,
                         LogOffsetMetadata(offsets.next_offset, active.base_offset, active.size()),
                         scheduler, clock, tp)
        psm = ProducerStateManager(tp, dir_, clock, producer_state_config)
        if not new_dir:
            psm.remove_stray_snapshots(segments.base_offsets())
        log = cls(offsets.log_start_offset, local, psm, high_watermark_follows_log_end, epoch_cache)
        if not new_dir and log.partition_metadata.exists():
            log.topic_id = log.partition_metadata.read()
        log.loader = loader
        log.rebuild_producer_state(offsets.next_offset)
        return log

    def assign_topic_id(self, topic_id: uuid.UUID) -> None:
        """Give this log its topic id (UnifiedLog.assignTopicId / initializeTopicId): a log
        that already has another one raises ``InconsistentTopicIdError`` (Kafka's
        INCONSISTENT_TOPIC_ID); a new one is recorded and ``partition.metadata`` is written by
        the scheduler's ``flush-state-files`` task (one for every log given an id meanwhile), or by the first append (no
        fsync there; the task syncs it) or the close if they come first (Kafka: before any
        data reaches the disk)."""
        if self.topic_id is not None:
            if self.topic_id != topic_id:
                raise InconsistentTopicIdError(
                    f"Tried to assign topic ID {uuid_to_string(topic_id)} to log for topic partition "
                    f"{self.topic_partition[0]}-{self.topic_partition[1]}, but log already contained topic ID "
                    f"{uuid_to_string(self.topic_id)}")
            return
        self.partition_metadata.record(topic_id)
        self.topic_id = topic_id
        durable_write_batch(self.scheduler).add(self.dir, self._flush_partition_metadata,
                                                self.partition_metadata.synced)   # one task per batch

    def _flush_partition_metadata(self, durable: bool = True) -> None:
        # Not under ``lock`` (an fsync).  close() flushes and delete() forgets the pending id
        # under the file's own lock before the directory is renamed or removed, so a late
        # call finds nothing to write.  Appends write without the fsync (durable=False): they
        # may run on the event loop; the scheduled task syncs the file.
        if not self.local_log.closed:
            self.partition_metadata.maybe_flush(durable)

    # ------------------------------------------------------------------ accessors
    @property
    def dir(self) -> str:
        return self.local_log.dir

    @property
    def config(self) -> LogConfig:
        return self.local_log.config

    @property
    def clock(self) -> Clock:
        return self.local_log.clock

    @property
    def scheduler(self) -> Scheduler:
        return self.local_log.scheduler

    @property
    def topic_partition(self) -> tuple[str, int]:
        return self.local_log.topic_partition

    @property
    def segments(self) -> LogSegments:
        return self.local_log.segments

    @property
    def log_end_offset(self) -> int:
        return self.local_log.log_end_offset()

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return self.local_log.log_end_offset_metadata()

    @property
    def high_watermark(self) -> int:
        return self.high_watermark_metadata.message_offset

    @property
    def recovery_point(self) -> int:
        return self.local_log.recovery_point

    @property
    def last_flush_time(self) -> int:
        return self.local_log.last_flushed_time

    def unflushed_messages(self) -> int:
        return self.local_log.unflushed_messages()

    def size(self) -> int:
        return self.segments.size_in_bytes()

    def number_of_segments(self) -> int:
        return self.segments.number_of_segments()

    def active_segment(self) -> LogSegment:
        return self.segments.active_segment()

    def log_segments(self) -> list[LogSegment]:
        with self.lock:
            return self.segments.values()

    def is_empty(self) -> bool:
        return self.log_start_offset == self.log_end_offset

    def update_config(self, config: LogConfig) -> None:
        self.local_log.update_config(config)

    # ------------------------------------------------------------------ leader epochs
    @property
    def latest_epoch(self) -> int | None:
        """The newest leader epoch in the cache (None before any)."""
        return self.leader_epoch_cache.latest_epoch()

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """A leader at ``leader_epoch`` starts writing at ``start_offset`` (Kafka: makeLeader
        passes the LEO); a no-op unless the epoch is new."""
        with self.lock:
            self.leader_epoch_cache.assign(leader_epoch, start_offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int] | None:
        """(epoch, end offset) of the largest epoch <= ``leader_epoch``: the LEO for the
        latest epoch, else the next epoch's start offset; None if unknown (Kafka's
        ``UnifiedLog.endOffsetForEpoch``)."""
        epoch, offset = self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)
        return None if offset == UNDEFINED_EPOCH_OFFSET else (epoch, offset)

    # ------------------------------------------------------------------ high watermark
    def update_high_watermark(self, hw: int) -> int:
        """Set the HW, clamped to [log start offset, LEO]; returns the new value."""
        with self.lock:
            hw = min(max(hw, self.log_start_offset), self.log_end_offset)
            if hw == self.log_end_offset:
                self.high_watermark_metadata = self.log_end_offset_metadata
            else:
                self.high_watermark_metadata = self.local_log.convert_to_offset_metadata_or_throw(hw) \
                    if hw >= self.log_start_offset else LogOffsetMetadata(hw)
            return hw

    # ------------------------------------------------------------------ transactions
    @property
    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest transaction not yet decided or whose marker is not yet
        below the HW (Kafka's ``firstUnstableOffset``); None if there is none."""
        with self.lock:
            psm = self.producer_state_manager
            psm.on_high_watermark_updated(self.high_watermark)
            return psm.first_unstable_offset()

    @property
    def last_stable_offset(self) -> int:
        """LSO: min(first unstable offset, HW).  read_committed consumers read below it."""
        psm = self.producer_state_manager
        if not psm.ongoing_txns and not psm.unreplicated_txns:
            return self.high_watermark  # no transaction in flight (the usual case): no lock
        with self.lock:
            fuo = self.first_unstable_offset
            hw = self.high_watermark
            return fuo if fuo is not None and fuo < hw else hw

    def _last_stable_offset_metadata(self) -> LogOffsetMetadata:
        psm = self.producer_state_manager
        if not psm.ongoing_txns and not psm.unreplicated_txns:
            # no transaction in flight (the usual case): the LSO is the HW, as
            # ``last_stable_offset`` finds without the lock
            return self.high_watermark_metadata
        with self.lock:
            fuo = self.first_unstable_offset
            if fuo is not None and fuo < self.high_watermark:
                return LogOffsetMetadata(fuo)  # offset only: the read translates it
            return self.high_watermark_metadata

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start_offset, upper_bound_offset), from the
        ``.txnindex`` of the segment holding ``start_offset`` onwards (Kafka's
        ``collectAbortedTransactions``)."""
        with self.lock:
            first = self.segments.floor_segment(start_offset)
            if first is None:
                return []
            segs = [first, *self.segments.higher_segments(first.base_offset)]
        out: list[AbortedTxn] = []
        for seg in segs:
            result = seg.collect_aborted_txns(start_offset, upper_bound_offset)
            out.extend(result.aborted_transactions)
            if result.is_complete:
                break
        return out

    def _aborted_transactions_for(self, start_offset: int, info: FetchDataInfo) -> list[AbortedTxn]:
        """Kafka's ``LocalLog.addAbortedTransactions``: the bound is the first offset-index
        entry past the fetched bytes, else the next segment's base offset, else the LEO."""
        size = len(info.records)
        if size == 0:
            return []
        meta = info.fetch_offset_metadata
        with self.lock:
            segments = self.segments
            segment = segments.get(meta.segment_base_offset)
            if segment is None:
                return []
            # no aborted transaction indexed from this segment on (the usual case): nothing
            # to collect, and the upper bound's index search would be the read's dearest part
            # (the active segment, where a small partition's reads are, has no later ones)
            if segment.txn_index.is_empty() and (segment is segments.active_segment() or all(
                    s.txn_index.is_empty() for s in segments.higher_segments(segment.base_offset))):
                return []
            upper = segment.fetch_upper_bound_offset(OffsetPosition(meta.message_offset, meta.relative_position_in_segment), size)
            if upper is None:
                nxt = self.segments.higher_segment(segment.base_offset)
                upper = nxt.base_offset if nxt is not None else self.log_end_offset
        return self.collect_aborted_transactions(start_offset, upper)

    def append_control_batch(self, *, commit: bool, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                             leader_epoch: int = -1) -> LogAppendInfo:
        """Append a COMMIT/ABORT marker for ``producer_id`` (origin COORDINATOR: the marker
        of a WriteTxnMarkers request); completes its transaction here."""
        batch = marker_batch(commit=commit, producer_id=producer_id, producer_epoch=producer_epoch,
                             coordinator_epoch=coordinator_epoch, timestamp_ms=self.clock.milliseconds())
        return self.append_as_leader(batch, leader_epoch, origin=AppendOrigin.COORDINATOR)

    def _after_log_end_change(self) -> None:
        if self.high_watermark_follows_log_end or self.log_end_offset < self.high_watermark:
            self.high_watermark_metadata = self.log_end_offset_metadata

    # ------------------------------------------------------------------ append
    def append_as_leader(self, records, leader_epoch: int = -1,
                         origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo:
        """Validate ``records`` (bytes-like; patched in place when writable), assign offsets
        from the LEO and append.  Raises ``log.errors.LogError`` subclasses."""
        if self.partition_metadata.dirty:
            self._flush_partition_metadata(durable=False)
        with self.lock:
            local = self.local_log
            local.check_if_memory_mapped_buffer_closed()
            now = local.clock.milliseconds()   # one clock read: validation's and the roll check's
            result = validate_and_assign_offsets(records, local.next_offset_metadata.message_offset, now,
                                                 local.config, leader_epoch, origin, topic_partition=local.topic_partition)
            info = self._append_validated(result, origin, now)
        self._maybe_flush_after_append()
        return info

    def append_as_follower(self, records) -> LogAppendInfo:
        """Append batches whose offsets are already assigned (replication, tests)."""
        if self.partition_metadata.dirty:
            self._flush_partition_metadata(durable=False)
        with self.lock:
            self.local_log.check_if_memory_mapped_buffer_closed()
            result = validate_and_assign_offsets(records, self.log_end_offset, self.clock.milliseconds(),
                                                 self.config, -1, AppendOrigin.REPLICATION, assign_offsets=False)
            if result.first_offset < self.log_end_offset:
                raise UnexpectedAppendOffsetError(
                    f"Unexpected offset in append to {self.topic_partition}. First offset {result.first_offset} is less than the next offset {self.log_end_offset}.")
            info = self._append_validated(result, AppendOrigin.REPLICATION, self.clock.milliseconds())
        self._maybe_flush_after_append()
        return info

    def _maybe_flush_after_append(self) -> None:
        # flush.messages (Kafka flushes in append too); after the lock is released
        local = self.local_log   # unflushed_messages(), inline: this runs per append
        if local.next_offset_metadata.message_offset - local.recovery_point >= self.config.flush_messages:
            self.flush()

    def _append_validated(self, result: ValidationResult, origin: AppendOrigin, now: int) -> LogAppendInfo:
        """The append after validation, under the lock; ``now``: the clock (ms) for the roll check."""
        size = len(result.records)
        config = self.local_log.config
        if size > config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"Message batch size is {size} bytes in append to partition {self.topic_partition}, which exceeds the maximum configured segment size of {config.segment_bytes}.")
        segment = self._maybe_roll(size, result, now)
        # producer state: duplicates and sequence checks (Kafka's analyzeAndValidateProducerState)
        updated = {}
        completed_txns = []
        psm = self.producer_state_manager
        position = 0
        for h in result.headers:
            batch_position = position
            position += h.batch_length + LOG_OVERHEAD
            if not h.has_producer_id:
                continue
            if origin is AppendOrigin.CLIENT:
                dup = psm.find_duplicate_batch(h)
                if dup is not None:
                    return LogAppendInfo(dup.first_offset, dup.last_offset, result.max_timestamp, dup.timestamp
                                         if result.log_append_time >= 0 else -1, self.log_start_offset,
                                         0, 0, result.last_leader_epoch, result.source_compression, duplicate=True)
            info = updated.get(h.producer_id)
            if info is None:
                info = updated[h.producer_id] = psm.prepare_update(h.producer_id, origin)
            marker = control_record_type(result.records, batch_position, h) if h.is_control and h.record_count else None
            txn = info.append(h, marker)
            if txn is not None:
                completed_txns.append(txn)
        del segment
        cache = self.leader_epoch_cache
        for h in result.headers:
            epoch = h.partition_leader_epoch
            if epoch >= 0 and cache.is_update_needed(epoch, h.base_offset):
                cache.assign(epoch, h.base_offset)
        self.local_log.append(result.last_offset, result.max_timestamp, result.shallow_offset_of_max_timestamp, result.records)
        self._after_log_end_change()
        for info in updated.values():
            psm.update(info)
        if completed_txns:
            # the .txnindex entry carries the LSO as it is once this marker is written
            active = self.segments.active_segment()
            for txn in completed_txns:
                active.update_txn_index(txn, psm.last_stable_offset(txn))
                psm.complete_txn(txn)
        psm.update_map_end_offset(result.last_offset + 1)
        return LogAppendInfo(result.first_offset, result.last_offset, result.max_timestamp, result.log_append_time,
                             self.log_start_offset, result.record_count, size, result.last_leader_epoch,
                             result.source_compression)

    def _maybe_roll(self, messages_size: int, result: ValidationResult, now: int) -> LogSegment:
        local = self.local_log
        segment = local.segments.active_segment()
        config = local.config
        if segment.should_roll(config.segment_ms, config.segment_bytes, result.max_timestamp,
                               result.last_offset, messages_size, now):
            return self.roll(result.first_offset)
        return segment

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """New active segment; snapshot producer state at its base offset (Kafka does both)."""
        with self.lock:
            new_segment = self.local_log.roll(expected_next_offset)
            self.producer_state_manager.update_map_end_offset(new_segment.base_offset)
            self.producer_state_manager.take_snapshot(sync=False)
            self._after_log_end_change()
            # Kafka schedules an async flush of the old segment here ("flush-log"); the
            # recovery point only moves when data is fsynced, so we do the same.
            base = new_segment.base_offset
            self.scheduler.schedule_once("flush-log", lambda: self.flush_upto_offset_exclusive(base))
            return new_segment

    # ------------------------------------------------------------------ flush
    def flush(self, force_flush_active_segment: bool = False) -> None:
        self._flush(self.log_end_offset, force_flush_active_segment)

    def flush_upto_offset_exclusive(self, offset: int) -> None:
        self._flush(offset, False)

    def _flush(self, offset: int, including_offset: bool) -> None:
        """fsync everything below ``offset`` (inclusive if ``including_offset``) and move the
        recovery point there.  The fsyncs run without the lock (appends go on meanwhile);
        a segment deleted or truncated meanwhile is skipped, and a truncation meanwhile
        leaves the recovery point alone (the next flush moves it)."""
        flush_offset = offset + 1 if including_offset else offset
        with self.lock:
            if self.local_log.closed or flush_offset <= self.local_log.recovery_point:
                return
            truncations = self.truncations
            plan = self.local_log.segments_to_flush(flush_offset)
        self.local_log.flush_segments(plan)
        with self.lock:
            if self.local_log.closed or self.truncations != truncations:
                return
            self.local_log.mark_flushed(min(offset, self.log_end_offset))

    # ------------------------------------------------------------------ read
    def read(self, start_offset: int, max_length: int,
             isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK,
             min_one_message: bool = True) -> FetchDataInfo:
        if start_offset < self.log_start_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start_offset} for partition {self.topic_partition}, but we only have log segments starting from offset: {self.log_start_offset}.")
        with self.lock:
            if isolation is FetchIsolation.LOG_END:
                bound = self.log_end_offset_metadata
            elif isolation is FetchIsolation.TXN_COMMITTED:
                bound = self._last_stable_offset_metadata()
            else:
                bound = self.high_watermark_metadata
        info = self.local_log.read(start_offset, max_length, min_one_message, bound)
        if isolation is FetchIsolation.TXN_COMMITTED:
            # built directly: dataclasses.replace costs more than the rest of a small read
            info = FetchDataInfo(info.fetch_offset_metadata, info.records, info.first_entry_incomplete,
                                 self._aborted_transactions_for(start_offset, info), info.next_batch)
        return info

    def fetch_offset_by_timestamp(self, target_timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: EARLIEST (-2) / EARLIEST_LOCAL (-4) -> log start offset; LATEST (-1) ->
        LEO; MAX_TIMESTAMP (-3) -> the record with the largest timestamp; otherwise the first
        offset whose timestamp >= target (None if there is none)."""
        if target_timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return TimestampAndOffset(-1, self.log_start_offset)
        if target_timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(-1, self.log_end_offset)
        if target_timestamp == LATEST_TIERED_TIMESTAMP:
            return TimestampAndOffset(-1, -1, -1)
        segments = self.log_segments()
        if target_timestamp == MAX_TIMESTAMP:
            latest = None
            for seg in segments:
                if latest is None or seg.max_timestamp_so_far() > latest.max_timestamp_so_far():
                    latest = seg
            if latest is None:
                return None
            mts = latest.read_max_timestamp_and_offset_so_far()
            position = latest.offset_index.lookup(mts.offset).position
            for pos, h in latest.log.batch_headers_from(position):
                if h.max_timestamp == mts.timestamp:
                    # the offset of the record with the max timestamp (KIP-734), found by
                    # decoding that one batch; LogAppendTime: the batch's first record
                    if h.is_log_append_time:
                        return TimestampAndOffset(h.max_timestamp, h.base_offset, h.partition_leader_epoch if h.partition_leader_epoch >= 0 else None)
                    found = latest.log.search_for_timestamp(h.max_timestamp, pos, h.base_offset)
                    return found
            return None
        for seg in segments:
            if seg.largest_timestamp() >= target_timestamp:
                return seg.find_offset_by_timestamp(target_timestamp, self.log_start_offset)
        return None

    # ------------------------------------------------------------------ log start offset
    def maybe_increment_log_start_offset(self, new_log_start_offset: int, reason: str = "ClientRecordDeletion") -> bool:
        """DeleteRecords / retention: move the log start offset up (never above the HW:
        OFFSET_OUT_OF_RANGE).  Whole segments below it are deleted by ``delete_old_segments``."""
        with self.lock:
            if new_log_start_offset > self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {new_log_start_offset} of partition {self.topic_partition} since it is larger than the high watermark {self.high_watermark}")
            self.local_log.check_if_memory_mapped_buffer_closed()
            if new_log_start_offset > self.log_start_offset:
                self.log_start_offset = new_log_start_offset
                _log.info("Incremented log start offset of %s to %d due to %s", self.topic_partition, new_log_start_offset, reason)
                self.leader_epoch_cache.truncate_from_start(new_log_start_offset)
                self.producer_state_manager.on_log_start_offset_incremented(new_log_start_offset)
                return True
            return False

    def _delete_producer_snapshots(self, segments: list[LogSegment], async_delete: bool) -> None:
        paths = []
        for seg in segments:
            p = self.producer_state_manager.remove_and_mark_snapshot_for_deletion(seg.base_offset)
            if p is not None:
                paths.append(p)

        def delete() -> None:
            for p in paths:
                try:
                    os.remove(p)
                except FileNotFoundError:
                    pass

        if async_delete:
            self.scheduler.schedule_once("delete-producer-snapshot", delete, self.config.file_delete_delay_ms)
        else:
            delete()

    # ------------------------------------------------------------------ truncation
    def truncate_to(self, target_offset: int) -> bool:
        """Remove everything at and above ``target_offset`` (whole batches).  True if anything
        was removed."""
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.topic_partition} to a negative offset ({target_offset}).")
        with self.replace_lock, self.lock:
            if target_offset >= self.log_end_offset:
                # Kafka's UnifiedLog.truncateTo: the epoch cache is truncated anyway, since a
                # broker that led without appending has an entry (epoch, LEO) its new leader
                # never had; kept, it would name that epoch as last fetched over and over.
                self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
                return False
            self.local_log.check_if_memory_mapped_buffer_closed()
            self.truncations += 1
            first = self.segments.first_segment_base_offset()
            if first is not None and first > target_offset:
                self.truncate_fully_and_start_at(target_offset)
            else:
                self.leader_epoch_cache.truncate_from_end(target_offset)
                deleted = self.local_log.truncate_to(target_offset)
                self._delete_producer_snapshots(deleted, async_delete=True)
                self.log_start_offset = min(target_offset, self.log_start_offset)
                self.rebuild_producer_state(self.log_end_offset)
                if self.high_watermark >= self.log_end_offset or self.high_watermark_follows_log_end:
                    self.high_watermark_metadata = self.log_end_offset_metadata
            return True

    def truncate_fully_and_start_at(self, new_offset: int, log_start_offset: int | None = None) -> None:
        with self.replace_lock, self.lock:
            self.truncations += 1
            self.leader_epoch_cache.clear()
            self.local_log.truncate_fully_and_start_at(new_offset)
            self.producer_state_manager.truncate_fully_and_start_at(new_offset)
            self.log_start_offset = new_offset if log_start_offset is None else log_start_offset
            self.rebuild_producer_state(new_offset)
            self.high_watermark_metadata = self.log_end_offset_metadata

    # ------------------------------------------------------------------ compaction
    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> None:
        """Kafka's ``UnifiedLog.replaceSegments``: swap cleaned segments in (crash-safe, see
        ``LocalLog.replace_segments``) and drop the producer snapshots of the old segments
        that were not replaced.  Unlike Kafka, ``lock`` is held only for the map swap and its
        renames, not across the two directory fsyncs: ``replace_lock`` (held throughout)
        keeps truncation, retention and close out instead, so appends never wait for an
        fsync.  The caller checks the old segments under ``lock`` while holding
        ``replace_lock`` (log_cleaner.py's commit)."""
        with self.replace_lock:
            with self.lock:
                self.local_log.check_if_memory_mapped_buffer_closed()
            self.local_log.rename_cleaned_to_swap(new_segments)
            with self.lock:
                self.local_log.check_if_memory_mapped_buffer_closed()
                deleted = self.local_log.swap_in(new_segments, old_segments)
                self._delete_producer_snapshots(deleted, async_delete=True)
            self.local_log.fsync_dir()

    def last_records_of_active_producers(self) -> dict[int, tuple[int | None, int]]:
        """producer id -> (offset of its last data batch, or None if its last entry is a
        transaction marker; its epoch): batches the cleaner must keep, even empty."""
        with self.lock:
            return {pid: (e.last_data_offset if e.last_data_offset >= 0 else None, e.producer_epoch)
                    for pid, e in self.producer_state_manager.active_producers().items()}

    # ------------------------------------------------------------------ producer state
    def rebuild_producer_state(self, last_offset: int) -> None:
        """Kafka's ``rebuildProducerState``: reload the latest snapshot <= ``last_offset`` and
        replay the batches after it (log/producer_state_rebuild.py)."""
        rebuild_producer_state(self.producer_state_manager, self.segments, self.log_start_offset, last_offset,
                               self.clock.milliseconds())

    def remove_expired_producers(self, now_ms: int) -> None:
        with self.lock:
            self.producer_state_manager.remove_expired_producers(now_ms)

    # ------------------------------------------------------------------ lifecycle
    def close(self, sync: bool = True) -> None:
        """Clean close: snapshot producer state at the LEO, trim indexes, close files.
        ``sync=False``: the state files written here (producer snapshot, leader epoch file,
        a pending partition.metadata) are not fsynced; the caller makes them durable (one
        syncfs for thousands of logs: ``LogManager.finish_shutdown``) before anything
        vouches for them."""
        with self.replace_lock, self.lock:
            if self.local_log.closed:
                return
            self.partition_metadata.maybe_flush(durable=sync)
            self.producer_state_manager.take_snapshot(sync)
            self.leader_epoch_cache.close(sync=sync)
            self.local_log.close()

    def close_handlers(self) -> None:
        with self.replace_lock, self.lock:
            self.leader_epoch_cache.close(flush=False)
            self.local_log.close_handlers()

    def delete(self) -> None:
        """Delete every file of this log and its directory, now."""
        with self.replace_lock, self.lock:
            self.local_log.check_if_memory_mapped_buffer_closed()
            self.leader_epoch_cache.close(flush=False)
            deleted = self.local_log.delete_all_segments()
            self._delete_producer_snapshots(deleted, async_delete=False)
            self.producer_state_manager.truncate_fully_and_start_at(0)
            self.partition_metadata.delete()
            for name in os.listdir(self.dir):
                if name.endswith(DELETED_FILE_SUFFIX) or name.endswith(".snapshot"):
                    os.remove(os.path.join(self.dir, name))
            self.local_log.delete_empty_dir()
            self.local_log.closed = True

    def __repr__(self) -> str:
        return (f"Log({self.topic_partition}, dir={self.dir}, logStartOffset={self.log_start_offset}, "
                f"logEndOffset={self.log_end_offset}, highWatermark={self.high_watermark})")


UnifiedLog = Log


def _create_dir(dir_: str) -> bool:
    """Create ``dir_`` (and missing parents); True when it did not exist before."""
    try:
        os.mkdir(dir_)
    except FileExistsError:
        return False
    except FileNotFoundError:   # a parent is missing too
        os.makedirs(dir_, exist_ok=True)
    return True
