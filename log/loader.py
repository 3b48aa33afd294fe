"""LogLoader: open a partition directory and make its segments consistent (Kafka's ``LogLoader``).

Steps, in Kafka's order:

1. remove leftovers and finish or undo an interrupted compaction swap (Kafka's
   ``removeTempFilesAndCollectSwapFiles`` + swap completion): ``*.deleted`` files go; if any
   ``*.cleaned`` file is left, ``*.swap`` files at or above the lowest ``.cleaned`` offset are
   from a swap that had not finished renaming ``.cleaned`` -> ``.swap`` and go too, then every
   ``*.cleaned`` file goes.  The remaining ``.swap`` segments are checked (batches whole and
   CRC-valid, offset index pointing inside the data): if all pass, the old segments they
   replace (every non-swap segment file with a base offset in [lowest swap base, highest swap
   next offset)) are deleted and the ``.swap`` files renamed to their final names; if one
   fails while the old segments are still there, the swap is undone instead (``.swap`` files
   deleted), so the log reads back either its pre-clean or its post-clean content.  Last,
   index files whose ``.log`` is gone are removed;
2. open every ``.log`` as a segment, by name only.  A segment whose ``.index`` or ``.timeindex``
   is missing, or fails its sanity check (size not a multiple of the entry size, offsets below
   the base, last entry pointing past the data; a ``.txnindex`` not whole 34-byte entries or
   naming a marker below the base), is *recovered*: its indexes are rebuilt from the data
   (a WARNING).  After an unclean shutdown a segment at or past the recovery point is left
   to step 3, which recovers it anyway, without a warning: a kill -9 leaves every active
   segment's preallocated indexes failing the check, and Kafka logs that at INFO (it does
   not even check those indexes: ``LogSegment.sanityCheck``);
3. after an unclean shutdown (no ``.kafka_cleanshutdown`` marker), recover every segment from
   the one holding the recovery point on: validate each batch's length, magic and CRC, rebuild
   the indexes and truncate at the first invalid or partial batch; segments after a truncation
   are deleted.  Recovery replays the batches into producer state as of the segment's base
   offset (a ``ProducerStateManager`` of its own, loaded from the latest snapshot below and
   the batches after it, kept across consecutive segments) so that each ABORT marker found
   rewrites its ``.txnindex`` entry with the LSO of the time (Kafka's ``recoverSegment``).  After a clean shutdown nothing is read but the tail of the active segment
   (from its last index entry) to find the log end offset: O(segments) file opens;
4. if no segment is left, create an empty one at the log start offset; preallocate the active
   segment's indexes again (they were trimmed at close);
5. the leader epoch cache (``leader-epoch-checkpoint``): segments recovered in step 3 assign
   the epochs of their batches; then entries at or past the log end offset are dropped
   (``truncate_from_end``) and the first entry is moved up to the log start offset
   (``truncate_from_start``), as Kafka's ``LogLoader.load`` does;
6. rebuild producer state: load the latest snapshot <= log end offset and replay the batch
   headers after it (see ``Log.rebuild_producer_state``).

Who may call: ``Log.open`` only.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from log.clock import Clock
from log.config import LogConfig
from log.durable_files import fsync_path
from log.errors import CorruptIndexError, IndexOffsetOverflowError
from log.files import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    log_file,
    offset_from_file_name,
    parse_topic_partition_name,
)
from log.leader_epoch_cache import LeaderEpochFileCache
from log.producer_state import ProducerStateManager
from log.producer_state_rebuild import rebuild_producer_state
from log.scheduler import Scheduler
from log.segment import LogSegment
from log.segments import LogSegments

__all__ = ["LoadedLogOffsets", "LogLoader"]

_log = logging.getLogger(__name__)
_SEGMENT_FILE_SUFFIXES = (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)


def _offset_or_none(name: str) -> int | None:
    try:
        return offset_from_file_name(name)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class LoadedLogOffsets:
    log_start_offset: int
    recovery_point: int
    next_offset: int


class LogLoader:
    def __init__(self, dir_: str, config: LogConfig, clock: Clock, scheduler: Scheduler,
                 had_clean_shutdown: bool, segments: LogSegments, log_start_offset_checkpoint: int,
                 recovery_point_checkpoint: int, leader_epoch_cache: LeaderEpochFileCache | None = None) -> None:
        self.dir = dir_
        self.config = config
        self.clock = clock
        self.scheduler = scheduler
        self.had_clean_shutdown = had_clean_shutdown
        self.segments = segments
        self.log_start_offset_checkpoint = log_start_offset_checkpoint
        self.recovery_point_checkpoint = recovery_point_checkpoint
        self.leader_epoch_cache = leader_epoch_cache
        self.segments_recovered = 0  # visible for tests: how many segments were scanned
        # producer state for recovery, valid up to its map end offset (see _recover_segment)
        self._recovery_psm: ProducerStateManager | None = None
        self._recovered: dict[int, int] = {}  # base offset -> bytes truncated

    def load(self, new_dir: bool = False) -> LoadedLogOffsets:
        """``new_dir``: the directory was created just now (empty): steps 1-2 find nothing."""
        if not new_dir:
            self._remove_temp_files()
            self._load_segment_files()
        recovery_point, next_offset = self._recover_log()
        self.segments.active_segment().resize_indexes(self.config.max_index_size)
        first = self.segments.first_segment_base_offset()
        log_start_offset = max(self.log_start_offset_checkpoint, first if first is not None else 0)
        if self.leader_epoch_cache is not None:
            self.leader_epoch_cache.truncate_from_end(next_offset)
            self.leader_epoch_cache.truncate_from_start(log_start_offset)
        return LoadedLogOffsets(log_start_offset, recovery_point, next_offset)

    def _remove_temp_files(self) -> None:
        cleaned: list[str] = []
        swaps: list[str] = []
        for name in os.listdir(self.dir):
            path = os.path.join(self.dir, name)
            if not os.path.isfile(path):
                continue
            if name.endswith(DELETED_FILE_SUFFIX):
                _log.debug("Deleting stray temporary file %s", path)
                os.remove(path)
            elif name.endswith(CLEANED_FILE_SUFFIX):
                cleaned.append(name)
            elif name.endswith(SWAP_FILE_SUFFIX):
                swaps.append(name)
        min_cleaned = min((_offset_or_none(n) for n in cleaned if _offset_or_none(n) is not None), default=None)
        valid_swaps = []
        for name in swaps:
            offset = _offset_or_none(name)
            if offset is None or (min_cleaned is not None and offset >= min_cleaned):
                _log.info("Deleting invalid swap file %s (lowest .cleaned offset %s)", name, min_cleaned)
                os.remove(os.path.join(self.dir, name))
            else:
                valid_swaps.append(name)
        for name in cleaned:
            _log.info("Deleting stray .cleaned file %s", name)
            os.remove(os.path.join(self.dir, name))
        if valid_swaps:
            self._complete_swaps(valid_swaps)
        for name in os.listdir(self.dir):
            path = os.path.join(self.dir, name)
            if not os.path.isfile(path):
                continue
            if name.endswith((INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)):
                try:
                    base = offset_from_file_name(name)
                except ValueError:
                    continue
                if not os.path.exists(log_file(self.dir, base)):
                    _log.warning("Found an orphaned index file %s, with no corresponding log file.", path)
                    os.remove(path)

    def _complete_swaps(self, swaps: list[str]) -> None:
        """Finish (or undo, see the module docstring) an interrupted segment replacement."""
        bases = sorted({_offset_or_none(n) for n in swaps if n.endswith(LOG_FILE_SUFFIX + SWAP_FILE_SUFFIX)})
        intact = True
        min_swap, max_swap = None, None
        for base in bases:
            seg = LogSegment.open(self.dir, base, self.config, self.clock, file_already_exists=True, suffix=SWAP_FILE_SUFFIX)
            try:
                if os.path.exists(seg.offset_index_path):
                    try:
                        seg.offset_index.sanity_check(seg.size())
                    except CorruptIndexError as e:
                        _log.warning("Swap segment %d has a bad offset index: %s", base, e)
                        intact = False
                if seg.recover(None) > 0:
                    _log.warning("Swap segment %d holds invalid or partial batches", base)
                    intact = False
                next_offset = seg.read_next_offset()
            finally:
                seg.close()
            min_swap = base if min_swap is None else min(min_swap, base)
            max_swap = next_offset if max_swap is None else max(max_swap, next_offset)
        replaced = []
        if min_swap is not None:
            for name in os.listdir(self.dir):
                offset = _offset_or_none(name)
                if (offset is not None and not name.endswith(SWAP_FILE_SUFFIX) and min_swap <= offset < max_swap
                        and name.endswith(_SEGMENT_FILE_SUFFIXES)):
                    replaced.append(name)
        # (recover() may have re-created missing .swap index files: list them again)
        swaps = [n for n in os.listdir(self.dir) if n.endswith(SWAP_FILE_SUFFIX)]
        if not intact and any(n.endswith(LOG_FILE_SUFFIX) for n in replaced):
            _log.warning("Undoing an interrupted compaction swap of %s: the swap files are damaged, the old segments are intact", self.dir)
            for name in swaps:
                os.remove(os.path.join(self.dir, name))
            return
        for name in replaced:
            _log.info("Deleting segment file %s that was compacted but has not been deleted yet.", name)
            os.remove(os.path.join(self.dir, name))
        for name in swaps:
            _log.info("Recovering file %s by renaming from %s files.", name, SWAP_FILE_SUFFIX)
            os.replace(os.path.join(self.dir, name), os.path.join(self.dir, name[: -len(SWAP_FILE_SUFFIX)]))
        fsync_path(self.dir)

    def _load_segment_files(self) -> None:
        names = sorted(n for n in os.listdir(self.dir) if n.endswith(LOG_FILE_SUFFIX))
        failed: list[tuple[LogSegment, Exception]] = []
        for name in names:
            try:
                base = offset_from_file_name(name)
            except ValueError:
                continue
            segment = LogSegment.open(self.dir, base, self.config, self.clock, file_already_exists=True)
            try:
                segment.sanity_check()
            except (FileNotFoundError, CorruptIndexError) as e:
                failed.append((segment, e))
            self.segments.add(segment)
        # A segment that _recover_log recovers anyway (unclean shutdown, at or past the
        # recovery point) is not rebuilt here nor warned about: after a kill -9 the active
        # segment's preallocated indexes fail the check in every partition, and Kafka does
        # not check them at all (LogSegment.sanityCheck: "we will recover the segments
        # above the recovery point in recoverLog() in any case"); it logs nothing per
        # partition above INFO.  A failed check anywhere else is a real surprise: WARNING.
        unflushed = set() if self.had_clean_shutdown else {
            s.base_offset for s in self.segments.values(self.recovery_point_checkpoint, None)}
        for segment, e in failed:   # ascending: recovery replays producer state in order
            if segment.base_offset in unflushed:
                _log.debug("Indexes of unflushed segment %s unusable (%s); recovery rebuilds them", segment, e)
                continue
            _log.warning("Could not use the indexes of segment %s (%s); rebuilding them", segment, e)
            self._recover_segment(segment)

    def _recover_segment(self, segment: LogSegment) -> int:
        self.segments_recovered += 1
        # Producer state as of the segment's base offset, so that recovery rebuilds the
        # segment's .txnindex (Kafka's recoverSegment).  The log's own producer state is
        # rebuilt after loading (Log.rebuild_producer_state).
        psm = self._recovery_psm
        if psm is None or psm.map_end_offset() != segment.base_offset:
            try:
                tp = parse_topic_partition_name(self.dir)
            except ValueError:
                tp = (os.path.basename(self.dir), 0)
            psm = ProducerStateManager(tp, self.dir, self.clock)
            rebuild_producer_state(psm, self.segments, self.log_start_offset_checkpoint, segment.base_offset,
                                   self.clock.milliseconds())
        truncated = segment.recover(psm, self.leader_epoch_cache)
        self._recovery_psm = psm
        self._recovered[segment.base_offset] = truncated
        return truncated

    def _recover_log(self) -> tuple[int, int]:
        if not self.had_clean_shutdown and not self.segments.is_empty():
            unflushed = self.segments.values(self.recovery_point_checkpoint, None)
            for i, segment in enumerate(unflushed):
                try:
                    if segment.base_offset in self._recovered:  # rebuilt already: bad index
                        truncated = self._recovered[segment.base_offset]
                    else:
                        truncated = self._recover_segment(segment)
                except IndexOffsetOverflowError:
                    _log.warning("Found invalid offset during recovery. Deleting the corrupt segment and creating an empty one with starting offset %d", segment.base_offset)
                    truncated = segment.truncate_to(segment.base_offset)
                if truncated > 0:
                    rest = unflushed[i + 1 :]
                    if rest:
                        _log.warning("Corruption found in segment %d, deleting %d later segments", segment.base_offset, len(rest))
                        for seg in rest:
                            self.segments.remove(seg.base_offset)
                            seg.delete_if_exists()
                    break
        log_end_offset: int | None = None
        if not self.segments.is_empty():
            leo = self.segments.active_segment().read_next_offset()
            if leo >= self.log_start_offset_checkpoint:
                log_end_offset = leo
            else:
                _log.warning("Deleting all segments because logEndOffset (%d) is smaller than logStartOffset %d.", leo, self.log_start_offset_checkpoint)
                for seg in self.segments.values():
                    self.segments.remove(seg.base_offset)
                    seg.delete_if_exists()
        if self.segments.is_empty():
            self.segments.add(LogSegment.open(self.dir, self.log_start_offset_checkpoint, self.config, self.clock))
        if self.had_clean_shutdown and log_end_offset is not None:
            return log_end_offset, log_end_offset
        leo = log_end_offset if log_end_offset is not None else self.segments.active_segment().read_next_offset()
        return min(self.recovery_point_checkpoint, leo), leo
