"""What the log cleaner knows about transactions while it walks a log (Kafka's
``CleanedTransactionMetadata``).

Fed the aborted transactions of the segments it reads (from their ``.txnindex``, sorted by
first offset) and every batch in offset order, it answers:

* ``on_batch_read(header)`` -> True when the data batch belongs to an aborted transaction
  (the cleaner drops it, and keeps its keys out of the offset map).  A transactional batch
  of a producer with no aborted transaction open at that offset belongs to a committed (or
  still open: never cleaned, the cleanable range stops at the LSO) transaction;
* ``on_control_batch_read(buf, pos, header)`` -> True when the marker may be discarded: an
  ABORT none of whose batches was met in this walk, a COMMIT none of whose batches was met,
  an empty (already cleaned) control batch.  An ABORT whose batches were met is kept and
  its entry appended to ``cleaned_index`` (the new segment's ``.txnindex``), since a
  read_committed reader must still skip those batches until a later cleaning removes them.

Who may call: one ``Cleaner`` walk (a group of segments, or the offset-map pass); no I/O
other than ``cleaned_index.append``.
"""

from __future__ import annotations

import heapq

from log.control_batch import ABORT, COMMIT, control_record_type
from log.txn_index import AbortedTxn, TransactionIndex
from wire.batch_header import BatchHeader

__all__ = ["CleanedTransactionMetadata"]


class _AbortedTxnState:
    __slots__ = ("txn", "last_observed_batch_offset")

    def __init__(self, txn: AbortedTxn) -> None:
        self.txn = txn
        self.last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    def __init__(self, cleaned_index: TransactionIndex | None = None) -> None:
        self.cleaned_index = cleaned_index
        self._ongoing_committed: set[int] = set()   # producer ids with batches met, no marker yet
        self._ongoing_aborted: dict[int, _AbortedTxnState] = {}
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._seq = 0

    def add_aborted_transactions(self, txns: list[AbortedTxn]) -> None:
        for t in txns:
            heapq.heappush(self._pending, (t.first_offset, self._seq, t))
            self._seq += 1

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            _, _, txn = heapq.heappop(self._pending)
            if txn.producer_id not in self._ongoing_aborted:
                self._ongoing_aborted[txn.producer_id] = _AbortedTxnState(txn)

    def on_batch_read(self, h: BatchHeader) -> bool:
        """True if this data batch is part of an aborted transaction."""
        self._consume_aborted_up_to(h.base_offset + h.last_offset_delta)
        if not h.is_transactional:
            return False
        state = self._ongoing_aborted.get(h.producer_id)
        if state is not None:
            state.last_observed_batch_offset = h.base_offset + h.last_offset_delta
            return True
        self._ongoing_committed.add(h.producer_id)
        return False

    def on_control_batch_read(self, buf, pos: int, h: BatchHeader) -> bool:
        """True if this marker may be discarded (see the module docstring)."""
        self._consume_aborted_up_to(h.base_offset + h.last_offset_delta)
        if h.record_count == 0:
            return True   # an empty control batch was cleaned already
        control_type = control_record_type(buf, pos, h).control_type
        pid = h.producer_id
        if control_type == ABORT:
            state = self._ongoing_aborted.pop(pid, None)
            if state is not None and state.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(state.txn)
                return False
            return True
        if control_type == COMMIT:
            if pid in self._ongoing_committed:
                self._ongoing_committed.discard(pid)
                return False
            return True
        return False
