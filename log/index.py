"""Kafka's memory-mapped sparse indexes: ``AbstractIndex``, ``OffsetIndex``, ``TimeIndex``.

Byte layout (big-endian, no header, no checksum; rebuilt from the ``.log`` after a crash):

* ``.index``: 8-byte entries ``relativeOffset int32 | position int32``; relativeOffset =
  offset - segment base offset; position = byte position of a batch in the ``.log``.  The entry
  written by ``LogSegment.append`` holds the *last* offset of the batch(es) appended at that
  position (Kafka does the same), so ``lookup(o)`` returns the greatest entry <= o and the
  segment scans batch headers forward from its position.
* ``.timeindex``: 12-byte entries ``timestamp int64 | relativeOffset int32``: "the largest
  timestamp seen before this offset".  Timestamps and offsets are monotonic.

Lifecycle: a new index file is preallocated to ``segment.index.bytes`` (rounded down to a whole
entry) and memory-mapped; the entry count is the number of entries written.  On roll and close
it is trimmed to ``entries * entry_size``.  A pre-existing file is opened with
``entries = length / entry_size`` (valid after a trim; after a crash the segment is recovered,
which resets and rebuilds it).  Who may call: the owning ``LogSegment`` only; not thread-safe.

Writes: an entry that reaches a page of the file no earlier entry wrote goes in with
``pwrite``, the rest through the map.  The preallocated file is sparse, and the first store
through a shared map into a hole costs a write fault that allocates the page on the
filesystem's page_mkwrite path: ~2.9 ms each on this machine's ext4 virtual disk, against
~14 us for a ``pwrite`` of the same bytes and ~10 us for the map's later fault on the now
cached page (bench/results/profile.md, "cost curves").  A produce round-robin over 1,000
partitions takes two such faults per partition (.index and .timeindex), on the event loop.
Both ways write the same page cache (msync and fsync flush either).
"""

from __future__ import annotations

import mmap
import os
import struct

from log.errors import CorruptIndexError, IndexOffsetOverflowError
from log.types import NO_TIMESTAMP, OffsetPosition, TimestampOffset

__all__ = ["OFFSET_ENTRY", "TIME_ENTRY", "AbstractIndex", "OffsetIndex", "TimeIndex"]

_INT32_MAX = (1 << 31) - 1
# The entry formats of the two files (module docstring); also what ``kbroker dump-log`` reads.
OFFSET_ENTRY = struct.Struct(">ii")   # relativeOffset, position
TIME_ENTRY = struct.Struct(">qi")     # timestamp (ms), relativeOffset
_PAGE = mmap.PAGESIZE


class AbstractIndex:
    """Entry-format-agnostic part: file, mmap, entry count, resize/trim, binary search."""

    entry_size = 0

    def __init__(self, path: str, base_offset: int, max_index_size: int = -1, writable: bool = True) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        newly_created = not os.path.exists(path)
        fd = os.open(path, (os.O_RDWR if writable else os.O_RDONLY) | os.O_CREAT, 0o644)
        try:
            if newly_created:
                if max_index_size < self.entry_size:
                    raise ValueError(f"Invalid max index size: {max_index_size}")
                os.ftruncate(fd, self._round_down(max_index_size))
            self.length = os.fstat(fd).st_size
            # An index is mapped at its first search or its second append (Kafka's LazyIndex
            # also opens index files on first use): Python's mmap keeps a dup of the
            # descriptor for the map's life, so a partition whose active segment has at most
            # one index entry (less than 2 x index.interval.bytes of data; a closed segment's
            # time index holds the entry written at close) holds one descriptor, its .log,
            # instead of three, also after a restart.  Start-up's checks read the one or two
            # entries they need with pread (``_entry_bytes``).
            self._mmap = None
        finally:
            os.close(fd)
        self.max_entries = self.length // self.entry_size
        self.entries = 0 if newly_created else self.length // self.entry_size

    # -- helpers
    def _round_down(self, n: int) -> int:
        return self.entry_size * (n // self.entry_size)

    def _mapped(self) -> mmap.mmap:
        """The map, made now if the index has not been mapped yet (see ``__init__``)."""
        m = self._mmap
        if m is None:
            fd = os.open(self.path, os.O_RDWR if self.writable else os.O_RDONLY)
            try:
                m = self._map(fd, self.length)
            finally:
                os.close(fd)
            if m is None:
                raise CorruptIndexError(f"Cannot map the empty index {self.path}")
            self._mmap = m
        return m

    def _entry_bytes(self, n: int) -> bytes:
        """Entry ``n``'s bytes without making a map: start-up reads the last (and the time
        index's first) entry of every segment's indexes, and mapping them all would hold two
        descriptors per partition (see ``__init__``)."""
        position = n * self.entry_size
        m = self._mmap
        if m is not None:
            return m[position:position + self.entry_size]
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return os.pread(fd, self.entry_size, position)
        finally:
            os.close(fd)

    def _write_entry(self, entry: struct.Struct, position: int, *values: int) -> None:
        """Write one entry at byte ``position`` (the entries before it are written): through
        the map while it stays in pages earlier entries touched, else with ``pwrite`` (see the
        module docstring); an index not mapped yet is mapped from its second entry on."""
        m = self._mmap
        end = position + entry.size
        if m is not None and position and (end - 1) // _PAGE == (position - 1) // _PAGE:
            entry.pack_into(m, position, *values)
            return
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.pwrite(fd, entry.pack(*values), position)
            if m is None and position:
                m = self._map(fd, self.length)
                if m is None:
                    raise CorruptIndexError(f"Cannot append to the full (empty) index {self.path}")
                self._mmap = m
        finally:
            os.close(fd)

    def _map(self, fd: int, length: int) -> mmap.mmap | None:
        if length == 0:
            return None  # Python cannot map an empty file; an empty index needs no map
        access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
        return mmap.mmap(fd, length, access=access)

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def size_in_bytes(self) -> int:
        return self.entry_size * self.entries

    def relative_offset(self, offset: int) -> int:
        rel = offset - self.base_offset
        if rel < 0 or rel > _INT32_MAX:
            raise IndexOffsetOverflowError(f"Integer overflow for offset: {offset} ({self.path})")
        return rel

    def can_append_offset(self, offset: int) -> bool:
        rel = offset - self.base_offset
        return 0 <= rel <= _INT32_MAX

    def resize(self, new_size: int) -> bool:
        """Set the file and map size (rounded down to whole entries); keeps the entries."""
        rounded = self._round_down(new_size)
        if rounded == self.length:
            return False
        was_mapped = self._mmap is not None
        if was_mapped:
            self._mmap.close()  # type: ignore[union-attr]
            self._mmap = None
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.ftruncate(fd, rounded)
            self.length = rounded
            if was_mapped:   # an index not mapped yet stays so until it is appended to
                self._mmap = self._map(fd, rounded)
        finally:
            os.close(fd)
        self.max_entries = rounded // self.entry_size
        self.entries = min(self.entries, self.max_entries)
        return True

    def trim_to_valid_size(self) -> None:
        self.resize(self.entry_size * self.entries)

    def reset(self) -> None:
        """Remove all entries and grow back to the max index size (recovery, truncation)."""
        self.truncate()
        self.resize(self.max_index_size)

    def flush(self) -> None:
        if self._mmap is not None:
            self._mmap.flush()

    def close_handler(self) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None

    def close(self) -> None:
        self.trim_to_valid_size()
        self.close_handler()

    def delete_if_exists(self) -> bool:
        self.close_handler()
        try:
            os.remove(self.path)
            return True
        except FileNotFoundError:
            return False

    def rename_to(self, new_path: str) -> None:
        try:
            os.replace(self.path, new_path)
        finally:
            self.path = new_path

    def _truncate_to_entries(self, entries: int) -> None:
        self.entries = entries

    def truncate(self) -> None:
        self._truncate_to_entries(0)

    # -- search (Kafka's indexSlotRangeFor, without the warm-section page-cache heuristic:
    #    the result is identical, only which pages are touched differs)
    def _key(self, n: int) -> int:
        raise NotImplementedError

    def _value(self, n: int) -> int:
        raise NotImplementedError

    def _largest_lower_bound_slot(self, target: int, by_value: bool = False) -> int:
        get = self._value if by_value else self._key
        if self.entries == 0 or get(0) > target:
            return -1
        lo, hi = 0, self.entries - 1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = get(mid)
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        return lo

    def _smallest_upper_bound_slot(self, target: int, by_value: bool = False) -> int:
        get = self._value if by_value else self._key
        if self.entries == 0:
            return -1
        if get(0) >= target:
            return 0
        lo = self._largest_lower_bound_slot(target, by_value)
        if get(lo) == target:
            return lo
        return -1 if lo == self.entries - 1 else lo + 1


class OffsetIndex(AbstractIndex):
    """Offset -> file position for one segment.  Entries strictly increase in offset."""

    entry_size = 8

    def __init__(self, path: str, base_offset: int, max_index_size: int = -1, writable: bool = True) -> None:
        super().__init__(path, base_offset, max_index_size, writable)
        self.last_offset = self._last_entry().offset

    def _key(self, n: int) -> int:
        return self.base_offset + OFFSET_ENTRY.unpack_from(self._mmap or self._mapped(), n * 8)[0]

    def _value(self, n: int) -> int:
        return OFFSET_ENTRY.unpack_from(self._mmap or self._mapped(), n * 8)[1]

    def _parse(self, n: int) -> OffsetPosition:
        rel, pos = OFFSET_ENTRY.unpack_from(self._mmap or self._mapped(), n * 8)
        return OffsetPosition(self.base_offset + rel, pos)

    def _last_entry(self) -> OffsetPosition:
        if self.entries == 0:
            return OffsetPosition(self.base_offset, 0)
        rel, pos = OFFSET_ENTRY.unpack(self._entry_bytes(self.entries - 1))
        return OffsetPosition(self.base_offset + rel, pos)

    def sanity_check(self, log_size: int | None = None) -> None:
        """Kafka's checks, plus (cheap, ours) the last entry must point inside the log file."""
        if self.length % self.entry_size != 0:
            raise CorruptIndexError(
                f"Index file {self.path} is corrupt, found {self.length} bytes which is neither "
                f"positive nor a multiple of {self.entry_size}"
            )
        if self.entries != 0 and self.last_offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file {self.path} has non-zero size but the last "
                f"offset is {self.last_offset} which is less than the base offset {self.base_offset}"
            )
        if self.entries != 0 and log_size is not None:
            last = self._last_entry()
            if last.position < 0 or last.position >= log_size:
                raise CorruptIndexError(
                    f"Index file {self.path}: last entry points at position {last.position} "
                    f"outside the log ({log_size} bytes)"
                )
            if self.entries > 1 and OFFSET_ENTRY.unpack(self._entry_bytes(0))[0] + self.base_offset >= last.offset:
                raise CorruptIndexError(f"Index file {self.path}: offsets are not increasing")

    def lookup(self, target_offset: int) -> OffsetPosition:
        """Largest entry with offset <= target, or (base_offset, 0) if none."""
        slot = self._largest_lower_bound_slot(target_offset)
        if slot == -1:
            return OffsetPosition(self.base_offset, 0)
        return self._parse(slot)

    def entry(self, n: int) -> OffsetPosition:
        if n >= self.entries:
            raise IndexError(f"Attempt to fetch the {n}th entry from index {self.path}, which has size {self.entries}")
        return self._parse(n)

    def fetch_upper_bound_offset(self, fetch_offset: OffsetPosition, fetch_size: int) -> OffsetPosition | None:
        slot = self._smallest_upper_bound_slot(fetch_offset.position + fetch_size, by_value=True)
        return None if slot == -1 else self._parse(slot)

    def append(self, offset: int, position: int) -> None:
        if self.is_full():
            raise IndexError(f"Attempt to append to a full index (size = {self.entries}).")
        if self.entries == 0 or offset > self.last_offset:
            self._write_entry(OFFSET_ENTRY, self.entries * 8, self.relative_offset(offset), position)
            self.entries += 1
            self.last_offset = offset
        else:
            raise ValueError(
                f"Attempt to append an offset {offset} to position {self.entries} no larger than "
                f"the last offset appended ({self.last_offset}) to {self.path}"
            )

    def truncate_to(self, offset: int) -> None:
        """Remove entries with offset >= ``offset``."""
        slot = self._largest_lower_bound_slot(offset)
        if slot < 0:
            new_entries = 0
        elif self._key(slot) == offset:
            new_entries = slot
        else:
            new_entries = slot + 1
        self._truncate_to_entries(new_entries)

    def _truncate_to_entries(self, entries: int) -> None:
        self.entries = entries
        self.last_offset = self._last_entry().offset

    def all_entries(self) -> list[OffsetPosition]:
        return [self._parse(n) for n in range(self.entries)]


class TimeIndex(AbstractIndex):
    """Timestamp -> offset for one segment.  The last slot is reserved for the entry written
    when the segment becomes inactive, so ``is_full`` is ``entries >= max_entries - 1``."""

    entry_size = 12

    def __init__(self, path: str, base_offset: int, max_index_size: int = -1, writable: bool = True) -> None:
        super().__init__(path, base_offset, max_index_size, writable)
        self._last = self._last_entry_from_file()

    def _key(self, n: int) -> int:
        return TIME_ENTRY.unpack_from(self._mmap or self._mapped(), n * 12)[0]

    def _value(self, n: int) -> int:
        return self.base_offset + TIME_ENTRY.unpack_from(self._mmap or self._mapped(), n * 12)[1]

    def _parse(self, n: int) -> TimestampOffset:
        ts, rel = TIME_ENTRY.unpack_from(self._mmap or self._mapped(), n * 12)
        return TimestampOffset(ts, self.base_offset + rel)

    def _last_entry_from_file(self) -> TimestampOffset:
        if self.entries == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        ts, rel = TIME_ENTRY.unpack(self._entry_bytes(self.entries - 1))
        return TimestampOffset(ts, self.base_offset + rel)

    def is_full(self) -> bool:
        return self.entries >= self.max_entries - 1

    def last_entry(self) -> TimestampOffset:
        return self._last

    def sanity_check(self, log_size: int | None = None) -> None:
        first = TIME_ENTRY.unpack(self._entry_bytes(0))[0] if self.entries != 0 else NO_TIMESTAMP
        if self.entries != 0 and self._last.timestamp < first:
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size but the "
                f"last timestamp is {self._last.timestamp} which is less than the first timestamp {first}"
            )
        if self.entries != 0 and self._last.offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size but the "
                f"last offset is {self._last.offset} which is less than the first offset {self.base_offset}"
            )
        if self.length % self.entry_size != 0:
            raise CorruptIndexError(
                f"Time index file {self.path} is corrupt, found {self.length} bytes which is neither "
                f"positive nor a multiple of {self.entry_size}"
            )

    def entry(self, n: int) -> TimestampOffset:
        if n >= self.entries:
            raise IndexError(f"Attempt to fetch the {n}th entry from time index {self.path} which has size {self.entries}")
        return self._parse(n)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Entry with the largest timestamp <= target, or (NO_TIMESTAMP, base_offset)."""
        slot = self._largest_lower_bound_slot(target_timestamp)
        if slot == -1:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self._parse(slot)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append iff ``timestamp`` is larger than the last entry's (Kafka's rule)."""
        if not skip_full_check and self.is_full():
            raise IndexError(f"Attempt to append to a full time index (size = {self.entries}).")
        if self.entries != 0 and offset < self._last.offset:
            raise ValueError(
                f"Attempt to append an offset ({offset}) to slot {self.entries} no larger than the "
                f"last offset appended ({self._last.offset}) to {self.path}"
            )
        if self.entries != 0 and timestamp < self._last.timestamp:
            raise ValueError(
                f"Attempt to append a timestamp ({timestamp}) to slot {self.entries} no larger than "
                f"the last timestamp appended ({self._last.timestamp}) to {self.path}"
            )
        if timestamp > self._last.timestamp:
            if self.entries >= self.max_entries:
                raise IndexError(f"time index {self.path} has no free slot")
            self._write_entry(TIME_ENTRY, self.entries * 12, timestamp, self.relative_offset(offset))
            self.entries += 1
            self._last = TimestampOffset(timestamp, offset)

    def truncate_to(self, offset: int) -> None:
        """Remove entries with offset >= ``offset``."""
        slot = self._largest_lower_bound_slot(offset, by_value=True)
        if slot < 0:
            new_entries = 0
        elif self._value(slot) == offset:
            new_entries = slot
        else:
            new_entries = slot + 1
        self._truncate_to_entries(new_entries)

    def _truncate_to_entries(self, entries: int) -> None:
        self.entries = entries
        self._last = self._last_entry_from_file()

    def resize(self, new_size: int) -> bool:
        changed = super().resize(new_size)
        if changed:
            self._last = self._last_entry_from_file()
        return changed

    def all_entries(self) -> list[TimestampOffset]:
        return [self._parse(n) for n in range(self.entries)]
