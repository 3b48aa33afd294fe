"""Rebuilding producer state from stored batches (Kafka's ``UnifiedLog.rebuildProducerState``
and ``loadProducersFromRecords``).

``rebuild_producer_state(psm, segments, log_start_offset, last_offset, now_ms)`` reloads the
latest snapshot <= ``last_offset`` and replays the batch headers after it up to
``last_offset``: producer fields live in the header, except a marker's type (COMMIT/ABORT)
and coordinator epoch, which are read from its one control record.  Markers complete their
transactions (so ``psm.ongoing_txns`` is right afterwards); the ``.txnindex`` is not
touched: it is only rebuilt by segment recovery (``LogSegment.recover`` with producer
state, see loader.py).

Who may call: ``Log`` under its lock, and ``LogLoader`` before the log exists.
"""

from __future__ import annotations

from log.control_batch import read_control_record_type
from log.producer_state import ProducerStateManager
from log.segments import LogSegments

__all__ = ["rebuild_producer_state"]


def rebuild_producer_state(psm: ProducerStateManager, segments: LogSegments, log_start_offset: int,
                           last_offset: int, now_ms: int) -> None:
    psm.truncate_and_reload(log_start_offset, last_offset, now_ms)
    if last_offset > psm.map_end_offset():
        segment_of_last = segments.floor_segment(last_offset)
        for seg in segments.values(psm.map_end_offset(), last_offset):
            start = max(seg.base_offset, psm.map_end_offset(), log_start_offset)
            psm.update_map_end_offset(start)
            if seg is segment_of_last:
                pos = seg.translate_offset(last_offset)
                max_position = pos.position if pos is not None else seg.size()
            else:
                max_position = seg.size()
            begin = seg.translate_offset(start)
            if begin is None:
                continue
            completed = []
            for position, h in seg.log.batch_headers_from(begin.position, max_position):
                marker = read_control_record_type(seg.log, position, h) \
                    if h.is_control and h.has_producer_id and h.record_count else None
                txn = psm.load_batch(h, marker)
                if txn is not None:
                    completed.append(txn)
            for txn in completed:
                if txn.first_offset in psm.ongoing_txns:
                    psm.complete_txn(txn)
    psm.update_map_end_offset(last_offset)
    psm.take_snapshot(sync=False)
