"""Cleaner: the compaction algorithm of one cleaning, on a snapshot of a log (Kafka's ``Cleaner``).

Input: a :class:`CleaningPlan`, taken on the log owner's thread (``log_cleaner.LogCleaner``):
the log's non-active segments below the first uncleanable offset as :class:`SourceSegment`
(each with its *own* duplicated file descriptor, size, mtime and index sizes), the first dirty
and first uncleanable offsets, the topic config, the time of the cleaning and the last batch
of each active producer.  Output: new segments written next to the log's files with the
``.cleaned`` suffix, one per group of source segments, flushed to disk, plus the offset up to
which the log is now clean (:class:`CleanerOutput`).  Nothing here touches the ``Log`` or its
``LogSegment`` objects, so :meth:`Cleaner.clean` may run in a worker thread while the owner
keeps appending, reading, rolling and deleting; the owner decides afterwards whether the
output still applies (``CleaningJob.commit``).  It may as well run in another process:
``CleaningPlan.portable()`` pickles (the clock becomes a ``FixedClock`` at the cleaning's
time), ``with_fds`` puts the worker's own descriptors of the same files in it,
``clean_to_summary`` returns what was written as plain data (``CleaningSummary``) and
``reopen_output`` makes the owner's ``CleanerOutput`` of it.

Steps, as Kafka's ``doClean``:

1. **offset map** over the dirty section ``[first dirty, first uncleanable)``: for every
   record with a key, key -> latest offset (``SkimpyOffsetMap``).  If the map fills up, the
   cleaning stops at the last offset mapped: ``end_offset = map.latest_offset + 1``;
2. **groups**: the segments below ``end_offset`` (clean and dirty ones), grouped so that each
   group's log, offset-index and time-index sizes stay within segment.bytes /
   segment.index.bytes and its offsets within an int32 of its first base offset
   (``groupSegmentsBySize``);
3. **rewrite** each group into one ``<first base>.log.cleaned`` (+ ``.index.cleaned``,
   ``.timeindex.cleaned``), batch by batch through ``batch_filter.filter_batch``.  A record
   is kept if it lies past the mapped range, or it is its key's latest record and it has a
   value or is a tombstone whose batch has no delete horizon yet or one still in the future.
   Keyless records are dropped (a compacted topic refuses them; older ones are invalid).
   Batches are kept empty when they hold an active producer's last sequence or end the
   cleaning round (Kafka's RETAIN_EMPTY cases) and, unlike Kafka, when they end a group: a
   cleaned segment then always ends at its group's last offset, which is how the loader tells
   which old segments a ``.swap`` replaces after a crash (from the swap's base to its next
   offset; a shorter swap would leave some of them in place beside it).  Such an empty batch
   costs 61 bytes and goes at a later cleaning where it no longer ends a group.
   Transactions (Kafka's ``CleanedTransactionMetadata``, log/cleaned_txn_metadata.py, fed
   the plan's aborted transactions from the ``.txnindex`` files): the batches of an aborted
   transaction are dropped (and kept out of the offset map); a marker is kept while any
   batch of its transaction was met in this cleaning (an ABORT kept so is re-indexed in the
   cleaned segment's ``.txnindex``), else it is recopied with a delete horizon of
   ``delete.retention.ms`` and dropped by the first cleaning after it.  Offsets are kept, so gaps appear.  The cleaned segment's indexes are built by ``LogSegment.append`` as Kafka's
   are (one entry per index.interval.bytes), plus one offset-index entry for the last batch:
   a ``.swap`` cut short later fails the loader's index check instead of passing as shorter
   data (see loader.py).  Each cleaned segment is fsynced and gets the mtime of its group's
   last segment.

I/O: source segments are read with ``pread`` in ``io_buffer_size`` chunks (a batch larger
than a chunk is read whole); reads and writes are paced by the shared ``Throttler``;
``check_done`` is called per chunk and raises :class:`LogCleaningAbortedError` to stop early.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

from log.batch_filter import BatchRetention, filter_batch
from log.cleaned_txn_metadata import CleanedTransactionMetadata
from log.clock import Clock
from log.config import LogConfig
from log.errors import CorruptRecordError
from log.files import (
    CLEANED_FILE_SUFFIX,
    log_file,
    offset_index_file,
    time_index_file,
    txn_index_file,
)
from log.offset_map import SkimpyOffsetMap
from log.raw_records import batch_records, scan
from log.segment import LogSegment
from log.throttler import Throttler
from log.txn_index import AbortedTxn
from wire.batch_header import (
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    parse_header,
)

__all__ = ["Cleaner", "CleanerOutput", "CleanerStats", "CleaningPlan", "CleaningSummary", "FixedClock", "LastRecord",
           "LogCleaningAbortedError", "SourceSegment", "clean_to_summary", "group_segments_by_size",
           "remove_cleaned_files", "reopen_output"]

_INT32_MAX = (1 << 31) - 1


class LogCleaningAbortedError(Exception):
    """The cleaning was cancelled (or its source changed under it); nothing is swapped in."""


@dataclass(frozen=True, slots=True)
class SourceSegment:
    """One segment as the cleaner sees it: captured on the owner's thread, used off it.
    ``fd`` is a ``dup`` of the segment's ``.log`` descriptor: it stays valid even if the
    segment is renamed ``.deleted`` and closed meanwhile.  Sizes are bytes."""

    base_offset: int
    fd: int
    size: int
    last_modified: int  # epoch ms
    offset_index_size: int
    time_index_size: int


@dataclass(frozen=True, slots=True)
class LastRecord:
    """An active producer's last batch (Kafka's ``LastRecord``): its last data offset, or
    None when the producer's last entry in the log is a transaction marker."""

    last_data_offset: int | None
    producer_epoch: int


class FixedClock:
    """A clock stopped at one cleaning's time: what a worker process gives the segments it
    writes (the owner's clock may be anything; this one pickles)."""

    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def milliseconds(self) -> int:
        return self.now_ms


@dataclass(frozen=True, slots=True)
class CleaningPlan:
    """Everything one cleaning reads, captured by the owner (see ``CleaningJob``).  Picklable
    once ``portable()``: plain data, the fds as numbers valid in the owner's process only."""

    dir: str
    topic_partition: tuple[str, int]
    config: LogConfig
    clock: Clock
    now_ms: int  # "current time" of this cleaning: delete horizons are set and compared with it
    first_dirty_offset: int
    first_uncleanable_offset: int  # a segment base offset, <= the active segment's
    sources: tuple[SourceSegment, ...]  # every segment with base < first_uncleanable_offset
    last_records_of_producers: dict[int, LastRecord] = field(default_factory=dict)
    # aborted transactions overlapping the sources (from their .txnindex files), in
    # .txnindex order: their batches are dropped and their markers kept while data remains
    aborted_transactions: tuple[AbortedTxn, ...] = ()

    def portable(self) -> CleaningPlan:
        """This plan with a ``FixedClock`` at ``now_ms``: safe to pickle to a worker process."""
        return replace(self, clock=FixedClock(self.now_ms))

    def with_fds(self, fds: list[int]) -> CleaningPlan:
        """This plan with each source's fd replaced (in the order of ``sources``): the worker
        process's own descriptors of the same open files."""
        if len(fds) != len(self.sources):
            raise ValueError(f"{len(fds)} descriptors for {len(self.sources)} source segments")
        return replace(self, sources=tuple(replace(s, fd=fd) for s, fd in zip(self.sources, fds, strict=True)))


@dataclass(slots=True)
class CleanerStats:
    """Kafka's ``CleanerStats``: what one cleaning read and wrote (bytes, messages)."""

    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages_read: int = 0
    buffer_utilization: float = 0.0
    start_s: float = field(default_factory=time.perf_counter)
    map_done_s: float = 0.0
    end_s: float = 0.0

    @property
    def elapsed_s(self) -> float:
        return (self.end_s or time.perf_counter()) - self.start_s


@dataclass(slots=True)
class CleanerOutput:
    end_offset: int  # the log is clean below this offset once the groups are swapped in
    groups: list[tuple[tuple[SourceSegment, ...], LogSegment]]  # sources -> their .cleaned segment
    stats: CleanerStats


@dataclass(frozen=True, slots=True)
class CleaningSummary:
    """A ``CleanerOutput`` as plain data, to cross a process boundary: the end offset, per
    group the base offsets of its source segments (its ``.cleaned`` segment is based at the
    first), and the stats."""

    end_offset: int
    groups: tuple[tuple[int, ...], ...]
    stats: CleanerStats


def clean_to_summary(cleaner: Cleaner, plan: CleaningPlan, check_done: Callable[[], None] = lambda: None) -> CleaningSummary:
    """``cleaner.clean(plan)`` for a worker process: the ``.cleaned`` files are written and
    flushed as by ``clean``, their handles closed (the owner reopens them by name,
    ``reopen_output``), and what was written is returned as a ``CleaningSummary``."""
    out = cleaner.clean(plan, check_done)
    for _, seg in out.groups:
        seg.close_handlers()
    return CleaningSummary(out.end_offset, tuple(tuple(s.base_offset for s in srcs) for srcs, _ in out.groups), out.stats)


def remove_cleaned_files(dir_: str, base_offsets: Iterable[int]) -> None:
    """Remove the ``.cleaned`` files (log and both indexes) a cleaning may have left at these
    base offsets: after a worker died, which of them it had written is unknown, and every
    group is based at a source segment's base offset."""
    for base in base_offsets:
        for path in (log_file(dir_, base, CLEANED_FILE_SUFFIX), offset_index_file(dir_, base, CLEANED_FILE_SUFFIX),
                     time_index_file(dir_, base, CLEANED_FILE_SUFFIX), txn_index_file(dir_, base, CLEANED_FILE_SUFFIX)):
            try:
                os.remove(path)
            except FileNotFoundError:
                pass


def reopen_output(plan: CleaningPlan, summary: CleaningSummary) -> CleanerOutput:
    """The owner's ``CleanerOutput`` for what a worker wrote: each group's ``.cleaned``
    segment opened by name (as the loader opens a segment: the indexes, trimmed by the worker,
    are read lazily) beside ``plan``'s own sources.  A missing file raises
    ``LogCleaningAbortedError`` after removing every ``.cleaned`` file of the plan."""
    by_base = {s.base_offset: s for s in plan.sources}
    groups: list[tuple[tuple[SourceSegment, ...], LogSegment]] = []
    try:
        for bases in summary.groups:
            if not os.path.exists(log_file(plan.dir, bases[0], CLEANED_FILE_SUFFIX)):
                raise LogCleaningAbortedError(f"cleaned segment {bases[0]} of {plan.topic_partition} is missing")
            seg = LogSegment.open(plan.dir, bases[0], plan.config, plan.clock, file_already_exists=True,
                                  suffix=CLEANED_FILE_SUFFIX)
            groups.append((tuple(by_base[b] for b in bases), seg))
    except BaseException:
        for _, seg in groups:
            seg.close_handlers()
        remove_cleaned_files(plan.dir, by_base)
        raise
    return CleanerOutput(summary.end_offset, groups, summary.stats)


def group_segments_by_size(segments: list[SourceSegment], max_size: int, max_index_size: int,
                           first_uncleanable_offset: int) -> list[list[SourceSegment]]:
    """Kafka's ``groupSegmentsBySize``: consecutive segments whose summed log, offset-index and
    time-index sizes stay within the limits and whose offsets fit an int32 from the group's
    first base offset (estimated by the next segment's base, or the first uncleanable offset
    for the last segment)."""
    grouped: list[list[SourceSegment]] = []
    i = 0
    while i < len(segments):
        first = segments[i]
        group = [first]
        log_size, index_size, time_index_size = first.size, first.offset_index_size, first.time_index_size
        i += 1
        while i < len(segments):
            seg = segments[i]
            last_offset = segments[i + 1].base_offset - 1 if i + 1 < len(segments) else first_uncleanable_offset - 1
            if not (log_size + seg.size <= max_size
                    and index_size + seg.offset_index_size <= max_index_size
                    and time_index_size + seg.time_index_size <= max_index_size
                    and (seg.size == 0 or last_offset - first.base_offset <= _INT32_MAX)):
                break
            group.append(seg)
            log_size += seg.size
            index_size += seg.offset_index_size
            time_index_size += seg.time_index_size
            i += 1
        grouped.append(group)
    return grouped


def _aborted_in(plan: CleaningPlan, start: int, upper: int) -> list[AbortedTxn]:
    """The plan's aborted transactions overlapping [start, upper) (Kafka collects them per
    segment, from its base to the next one's)."""
    return [t for t in plan.aborted_transactions if t.last_offset >= start and t.first_offset < upper]


def create_new_cleaned_segment(dir_: str, config: LogConfig, base_offset: int, clock: Clock) -> LogSegment:
    """A fresh ``<base>.log.cleaned`` segment; leftovers of an earlier attempt are removed first."""
    for path in (log_file(dir_, base_offset, CLEANED_FILE_SUFFIX), offset_index_file(dir_, base_offset, CLEANED_FILE_SUFFIX),
                 time_index_file(dir_, base_offset, CLEANED_FILE_SUFFIX), txn_index_file(dir_, base_offset, CLEANED_FILE_SUFFIX)):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    return LogSegment.open(dir_, base_offset, config, clock, suffix=CLEANED_FILE_SUFFIX)


class Cleaner:
    """One cleaner (Kafka's ``Cleaner``; one per cleaner "thread"): owns an offset map, so
    only one cleaning at a time may use it."""

    def __init__(self, cleaner_id: int, offset_map: SkimpyOffsetMap, io_buffer_size: int,
                 dedupe_buffer_load_factor: float, throttler: Throttler | None = None) -> None:
        if offset_map.slots * dedupe_buffer_load_factor <= 1:
            raise ValueError("offset map is too small to fit in even a single message, so log cleaning will never "
                             "make progress. You can increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads")
        self.id = cleaner_id
        self.offset_map = offset_map
        self.io_buffer_size = io_buffer_size
        self.dedupe_buffer_load_factor = dedupe_buffer_load_factor
        self.throttler = throttler

    # ------------------------------------------------------------------ entry point
    def clean(self, plan: CleaningPlan, check_done: Callable[[], None] = lambda: None) -> CleanerOutput:
        """Build the offset map and write the ``.cleaned`` segments; see the module docstring.
        On any exception the ``.cleaned`` files written so far are removed."""
        stats = CleanerStats()
        self.build_offset_map(plan, stats, check_done)
        end_offset = max(self.offset_map.latest_offset + 1, plan.first_dirty_offset)
        stats.map_done_s = time.perf_counter()
        segments = [s for s in plan.sources if s.base_offset < end_offset]
        groups = group_segments_by_size(segments, plan.config.segment_bytes, plan.config.max_index_size,
                                        plan.first_uncleanable_offset)
        out: list[tuple[tuple[SourceSegment, ...], LogSegment]] = []
        try:
            for group in groups:
                out.append((tuple(group), self.clean_segments(plan, group, stats, check_done)))
        except BaseException:
            for _, cleaned in out:
                cleaned.delete_if_exists()
            raise
        stats.buffer_utilization = self.offset_map.utilization()
        stats.end_s = time.perf_counter()
        return CleanerOutput(end_offset, out, stats)

    # ------------------------------------------------------------------ reading
    def _batches(self, src: SourceSegment, check_done: Callable[[], None]) -> Iterator[tuple[bytes, int, BatchHeader, int]]:
        """(buffer, position in it, header, position in the file) of every whole batch of
        ``src``, chunk by chunk."""
        pos = 0
        while pos < src.size:
            check_done()
            n = min(self.io_buffer_size, src.size - pos)
            buf = os.pread(src.fd, n, pos)
            if len(buf) < n:
                raise LogCleaningAbortedError(f"segment {src.base_offset} shrank under the cleaner")
            off = 0
            while len(buf) - off >= HEADER_SIZE:
                h = parse_header(buf, off)
                if h.batch_length < HEADER_SIZE - LOG_OVERHEAD:
                    raise CorruptRecordError(f"Record batch size {h.batch_length + LOG_OVERHEAD} is smaller than the "
                                             f"minimum allowed overhead at position {pos + off} of segment {src.base_offset}")
                size = h.batch_length + LOG_OVERHEAD
                if off + size > len(buf):
                    break
                yield buf, off, h, pos + off
                off += size
            if off == 0:
                if src.size - pos < HEADER_SIZE:
                    return  # a partial header at the very end: not a batch
                # the next batch is larger than a chunk: read it whole (Kafka grows its buffers)
                h = parse_header(os.pread(src.fd, HEADER_SIZE, pos))
                size = h.batch_length + LOG_OVERHEAD
                if size > src.size - pos:
                    raise CorruptRecordError(f"Log segment may be corrupt, batch size {size} > {src.size - pos} bytes "
                                             f"left in segment {src.base_offset} at position {pos}")
                buf = os.pread(src.fd, size, pos)
                if len(buf) < size:
                    raise LogCleaningAbortedError(f"segment {src.base_offset} shrank under the cleaner")
                yield buf, 0, h, pos
                off = size
            if self.throttler is not None:
                self.throttler.maybe_throttle(off)
            pos += off

    # ------------------------------------------------------------------ step 1: offset map
    def build_offset_map(self, plan: CleaningPlan, stats: CleanerStats, check_done: Callable[[], None]) -> None:
        """Kafka's ``buildOffsetMap`` over the segments overlapping [first dirty, first uncleanable)."""
        start, end = plan.first_dirty_offset, plan.first_uncleanable_offset
        self.offset_map.clear()
        sources = plan.sources
        dirty = [(s, sources[i + 1].base_offset if i + 1 < len(sources) else end)
                 for i, s in enumerate(sources)
                 if s.base_offset < end and (i + 1 == len(sources) or sources[i + 1].base_offset > start)]
        txns = CleanedTransactionMetadata()
        for i, (seg, _) in enumerate(dirty):
            next_start = dirty[i + 1][0].base_offset if i + 1 < len(dirty) else end
            txns.add_aborted_transactions(_aborted_in(plan, seg.base_offset, next_start))
            if self._build_offset_map_for_segment(seg, start, next_start, stats, check_done, txns):
                break

    def _build_offset_map_for_segment(self, seg: SourceSegment, start: int, next_segment_start: int,
                                      stats: CleanerStats, check_done: Callable[[], None],
                                      txns: CleanedTransactionMetadata) -> bool:
        """Add the keys of ``seg`` at offsets >= ``start``; True when the map filled up.
        Aborted batches add nothing: their records are removed, so they must not hide the
        committed ones they would supersede (Kafka's buildOffsetMapForSegment)."""
        m = self.offset_map
        max_desired = int(m.slots * self.dedupe_buffer_load_factor)
        for buf, off, h, _ in self._batches(seg, check_done):
            last_offset = h.base_offset + h.last_offset_delta
            stats.map_bytes_read += h.batch_length + LOG_OVERHEAD
            if last_offset < start:
                continue
            if h.attributes & CONTROL_BIT:  # control batch: markers carry no key to compact
                txns.on_control_batch_read(buf, off, h)
                stats.map_messages_read += 1
            elif txns.on_batch_read(h):
                stats.map_messages_read += h.record_count
            else:
                base = h.base_offset
                data, start_pos, end_pos = batch_records(buf, off, h)
                for r in scan(data, h.record_count, start_pos, end_pos):
                    offset = base + r.offset_delta
                    if r.key is not None and offset >= start:
                        if m.size < max_desired:
                            m.put(r.key, offset)
                        else:
                            return True
                    stats.map_messages_read += 1
            m.update_latest_offset(last_offset)
        # offsets may have gaps: the map covers everything up to the next segment
        m.update_latest_offset(next_segment_start - 1)
        return False

    # ------------------------------------------------------------------ step 3: rewrite
    def clean_segments(self, plan: CleaningPlan, group: list[SourceSegment], stats: CleanerStats,
                       check_done: Callable[[], None]) -> LogSegment:
        """One group -> one flushed ``.cleaned`` segment based at the group's first offset."""
        cleaned = create_new_cleaned_segment(plan.dir, plan.config, group[0].base_offset, plan.clock)
        txns = CleanedTransactionMetadata(cleaned.txn_index)
        sources = plan.sources
        try:
            last_batch: tuple[int, int] | None = None  # (last offset, position) of the last batch written
            for i, src in enumerate(group):
                k = sources.index(src)
                upper = sources[k + 1].base_offset if k + 1 < len(sources) else plan.first_uncleanable_offset
                txns.add_aborted_transactions(_aborted_in(plan, src.base_offset, upper))
                written = self._clean_into(plan, src, cleaned, stats, check_done, i == len(group) - 1, txns)
                if written is not None:
                    last_batch = written
            if last_batch is not None:
                index = cleaned.offset_index
                if (index.entries == 0 or index.last_offset < last_batch[0]) and not index.is_full():
                    index.append(*last_batch)
            cleaned.on_become_inactive_segment()
            cleaned.flush()
            cleaned.set_last_modified(group[-1].last_modified)
        except BaseException:
            cleaned.delete_if_exists()
            raise
        return cleaned

    def _clean_into(self, plan: CleaningPlan, src: SourceSegment, dest: LogSegment, stats: CleanerStats,
                    check_done: Callable[[], None], last_of_group: bool,
                    txns: CleanedTransactionMetadata | None = None) -> tuple[int, int] | None:
        """Copy what ``src`` keeps into ``dest``; returns (last offset, position) of the last
        batch written, if any.  ``last_of_group``: ``src``'s last batch is kept (empty if need
        be), see the module docstring."""
        m = self.offset_map
        latest = m.latest_offset
        get = m.get
        now = plan.now_ms
        new_horizon = now + plan.config.delete_retention_ms
        upper_bound = plan.first_uncleanable_offset
        producers = plan.last_records_of_producers
        last_written = None

        if txns is None:
            txns = CleanedTransactionMetadata()

        def keep_control(offset: int, key: bytes | None, has_value: bool) -> bool:
            return True

        def drop(offset: int, key: bytes | None, has_value: bool) -> bool:
            return False

        for buf, off, h, file_pos in self._batches(src, check_done):
            size = h.batch_length + LOG_OVERHEAD
            stats.bytes_read += size
            is_control = bool(h.attributes & CONTROL_BIT)
            last_offset = h.base_offset + h.last_offset_delta
            # Kafka's checkBatchRetention: an aborted batch is discarded; a marker may be
            # discarded once no batch of its transaction is left (``can_discard``), and then
            # only after its delete horizon (set the first time it is recopied so) has passed
            if is_control:
                can_discard = txns.on_control_batch_read(buf, off, h)
                has_horizon = bool(h.attributes & DELETE_HORIZON_BIT)
                discard_records = can_discard and has_horizon and h.base_timestamp <= now
            else:
                can_discard = txns.on_batch_read(h)
                discard_records = can_discard
            last = producers.get(h.producer_id) if h.producer_id >= 0 else None
            if last is not None and (last_offset == last.last_data_offset if last.last_data_offset is not None
                                     else is_control and h.producer_epoch == last.producer_epoch):
                retention = BatchRetention.RETAIN_EMPTY  # holds the producer's last sequence/epoch
            elif last_offset + 1 == upper_bound:
                retention = BatchRetention.RETAIN_EMPTY  # keeps the round's last offset known
            elif last_of_group and file_pos + size == src.size:
                retention = BatchRetention.RETAIN_EMPTY  # the cleaned segment ends where its group did
            elif discard_records:
                retention = BatchRetention.DELETE
            else:
                retention = BatchRetention.DELETE_EMPTY
            if discard_records:
                retain = drop  # kept (empty) only for its producer's sequence or the offsets
            elif is_control:
                retain = keep_control
            else:
                retain_deletes = not (h.attributes & DELETE_HORIZON_BIT) or now < h.base_timestamp

                def retain(offset: int, key: bytes | None, has_value: bool, _retain_deletes=retain_deletes) -> bool:
                    if offset > latest:
                        return True  # past the mapped range: not cleaned this round
                    if key is None:
                        stats.invalid_messages_read += 1
                        return False
                    return offset >= get(key) and (has_value or _retain_deletes)

            result = filter_batch(buf, off, h, retention, retain, new_horizon,
                                  set_horizon=is_control and can_discard)
            stats.messages_read += result.records_read
            if result.data is not None:
                position = dest.size()
                dest.append(result.last_offset, result.max_timestamp, result.last_offset, result.data)
                last_written = (result.last_offset, position)
                stats.messages_written += result.records_retained
                stats.bytes_written += len(result.data)
                if self.throttler is not None:
                    self.throttler.maybe_throttle(len(result.data))
        return last_written
