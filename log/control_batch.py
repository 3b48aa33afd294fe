"""Transaction markers as the log sees them: reading a control batch's marker type and
building the marker a partition leader appends (Kafka's ``EndTransactionMarker``).

A marker is a control batch (attributes: transactional + control bits, uncompressed) of the
transaction's producer id and epoch, no sequence, holding one control record::

    key   = version int16 (0) | type int16 (0 ABORT, 1 COMMIT)
    value = version int16 (0) | coordinatorEpoch int32

(wire/record_batch.py's ``build_control_batch``/``decode_control_record`` encode it.)  The
marker type is not in the batch header, so whoever replays producer state from stored
batches (recovery, ``Log.rebuild_producer_state``) decodes that one record with
``control_record_type`` / ``read_control_record_type``.
"""

from __future__ import annotations

from dataclasses import dataclass

from log.errors import CorruptRecordError
from log.file_records import FileRecords
from wire.batch_header import LOG_OVERHEAD, BatchHeader
from wire.errors import CorruptRecordError as WireCorruptRecordError
from wire.errors import DecodeError
from wire.record_batch import (
    ControlRecordType,
    RecordBatch,
    build_control_batch,
    decode_control_record,
)

__all__ = ["ABORT", "COMMIT", "EndTxnMarker", "control_record_type", "marker_batch", "read_control_record_type"]

ABORT = int(ControlRecordType.ABORT)
COMMIT = int(ControlRecordType.COMMIT)


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    """A marker's contents: ``control_type`` ABORT/COMMIT (other ints: other control records,
    e.g. KRaft's, which end no transaction) and the coordinator epoch (-1 if absent)."""

    control_type: int
    coordinator_epoch: int

    @property
    def is_commit(self) -> bool:
        return self.control_type == COMMIT


def control_record_type(buf, pos: int, header: BatchHeader) -> EndTxnMarker:
    """The marker in the control batch at ``buf[pos:]`` (the whole batch must be there)."""
    try:
        for record in RecordBatch(buf, pos):
            ctype, epoch = decode_control_record(record)
            return EndTxnMarker(int(ctype), -1 if epoch is None else epoch)
    except (WireCorruptRecordError, DecodeError) as e:
        raise CorruptRecordError(f"Invalid control record at offset {header.base_offset}: {e}") from None
    raise CorruptRecordError(f"Control batch at offset {header.base_offset} holds no record")


def read_control_record_type(log: FileRecords, position: int, header: BatchHeader) -> EndTxnMarker:
    """``control_record_type`` of the batch stored at ``position`` of a segment file."""
    size = header.batch_length + LOG_OVERHEAD
    return control_record_type(log.read(position, size), 0, header)


def marker_batch(*, commit: bool, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                 timestamp_ms: int) -> bytearray:
    """A marker batch to append (offsets and leader epoch are assigned by the append)."""
    return bytearray(build_control_batch(commit=commit, producer_id=producer_id, producer_epoch=producer_epoch,
                                         coordinator_epoch=coordinator_epoch, timestamp=timestamp_ms))
