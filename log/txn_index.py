"""TransactionIndex: a segment's ``.txnindex``, the aborted transactions whose markers lie
in the segment (Kafka's ``TransactionIndex`` / ``AbortedTxn``).

File ``<base:020d>.txnindex``: a sequence of fixed 34-byte entries, big-endian::

    version int16 (=0) | producerId int64 | firstOffset int64 | lastOffset int64 |
    lastStableOffset int64

``firstOffset`` is the first offset the aborted transaction wrote in this partition,
``lastOffset`` the offset of its ABORT marker, ``lastStableOffset`` the partition's LSO
right after the marker was appended (the first offset of the next transaction still open,
else ``lastOffset + 1``).  A read_committed fetch of [fetch offset, upper bound) collects
the entries with ``lastOffset >= fetch offset`` and ``firstOffset < upper bound``, segment
after segment, and may stop at the first entry with ``lastStableOffset >= upper bound``:
every later entry's transaction started after the bound (Kafka's ``collectAbortedTxns``).

Entries are in ``lastOffset`` order (markers are appended in offset order).  The file is
created only when the first entry is written (most segments have none); a missing file
is an empty index.  Invariant: every entry's ``lastOffset`` >= the segment's base offset
(``sanity_check``).  Who may call: ``LogSegment`` under the log's lock; reads
(``collect_aborted_txns``) from readers, which see whole entries only.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from log.durable_files import fsync_path
from log.errors import CorruptIndexError

__all__ = ["ABORTED_TXN_SIZE", "AbortedTxn", "TransactionIndex", "TxnIndexSearchResult"]

_ENTRY = struct.Struct(">hqqqq")
ABORTED_TXN_SIZE = _ENTRY.size  # 34
_CURRENT_VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(_CURRENT_VERSION, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)

    @classmethod
    def from_bytes(cls, buf, pos: int = 0) -> AbortedTxn:
        version, pid, first, last, lso = _ENTRY.unpack_from(buf, pos)
        if version != _CURRENT_VERSION:
            raise CorruptIndexError(f"Unexpected aborted transaction version {version}")
        return cls(pid, first, last, lso)


@dataclass(frozen=True, slots=True)
class TxnIndexSearchResult:
    aborted_transactions: list[AbortedTxn]
    is_complete: bool


class TransactionIndex:
    def __init__(self, start_offset: int, path: str) -> None:
        self.start_offset = start_offset
        self.path = path
        # loaded on first use; a file that does not exist now is known empty (most segments
        # never had a transaction aborted in them): Kafka's TransactionIndex likewise opens
        # its file in the constructor only if it exists and reads nothing otherwise, so the
        # first read_committed fetch of each partition makes no file-system call
        self._entries: list[AbortedTxn] | None = None if os.path.exists(path) else []
        self._last_offset: int | None = None

    # -- contents
    def _load(self) -> list[AbortedTxn]:
        if self._entries is None:
            buf = b""
            # (the file may be gone since: a stat costs a third of a failed open() and its
            # exception)
            if os.path.exists(self.path):
                try:
                    with open(self.path, "rb") as f:
                        buf = f.read()
                except FileNotFoundError:
                    pass
            whole = len(buf) - len(buf) % ABORTED_TXN_SIZE
            self._entries = [AbortedTxn.from_bytes(buf, p) for p in range(0, whole, ABORTED_TXN_SIZE)]
            self._last_offset = self._entries[-1].last_offset if self._entries else None
        return self._entries

    def all_aborted_txns(self) -> list[AbortedTxn]:
        return list(self._load())

    def is_empty(self) -> bool:
        return not self._load()

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry (its last offset must be above the previous one's, as Kafka checks)."""
        entries = self._load()
        if self._last_offset is not None and self._last_offset >= txn.last_offset:
            raise ValueError(f"The last offset of appended transactions must increase sequentially, but "
                             f"{txn.last_offset} is not greater than current last offset {self._last_offset} "
                             f"of index {self.path}")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, txn.to_bytes())
        finally:
            os.close(fd)
        entries.append(txn)
        self._last_offset = txn.last_offset

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        out = []
        for txn in self._load():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(out, True)
        return TxnIndexSearchResult(out, False)

    # -- maintenance
    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset``."""
        entries = self._load()
        keep = [t for t in entries if t.last_offset < offset]
        if len(keep) == len(entries):
            return
        self._truncate_file(len(keep) * ABORTED_TXN_SIZE)
        self._entries = keep
        self._last_offset = keep[-1].last_offset if keep else None

    def reset(self) -> None:
        """Empty the index (recovery rebuilds it)."""
        self._truncate_file(0)
        self._entries = []
        self._last_offset = None

    def _truncate_file(self, size: int) -> None:
        try:
            os.truncate(self.path, size)
        except FileNotFoundError:
            pass

    def sanity_check(self) -> None:
        """CorruptIndexError if the file is not whole entries or names a marker below the
        segment's base offset."""
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            return
        if size % ABORTED_TXN_SIZE:
            raise CorruptIndexError(f"Transaction index file {self.path} has size {size}, "
                                    f"not a multiple of {ABORTED_TXN_SIZE}")
        self._entries = None
        for txn in self._load():
            if txn.last_offset < self.start_offset:
                raise CorruptIndexError(f"Last offset of aborted transaction {txn} in index {self.path} is "
                                        f"less than start offset {self.start_offset}")

    def flush(self) -> None:
        try:
            fsync_path(self.path)
        except FileNotFoundError:  # nothing was ever written to it
            return

    def rename_to(self, path: str) -> None:
        if os.path.exists(self.path):
            os.replace(self.path, path)
        self.path = path

    def delete_if_exists(self) -> bool:
        try:
            os.remove(self.path)
            return True
        except FileNotFoundError:
            return False

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path})"
