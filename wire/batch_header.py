"""The fixed 61-byte header of a v2 record batch, decoded in one ``struct`` call.

The one definition of the header layout (Kafka's ``DefaultRecordBatch``, on the wire and on
disk).  ``wire.record_batch`` builds and patches batches with it; log/ scans *files* with it
(recovery, offset translation, time lookups), reading just each header with a small ``pread``:
one ``unpack_from`` per header is the cheapest way to do that in Python::

    offset  size  field
      0      8    baseOffset             int64
      8      4    batchLength            int32   bytes after this field
     12      4    partitionLeaderEpoch   int32
     16      1    magic                  int8    (2)
     17      4    crc                    uint32  CRC-32C of bytes [21, 12 + batchLength)
     21      2    attributes             int16   bits 0-2 compression, 3 timestamp type,
                                                 4 transactional, 5 control
     23      4    lastOffsetDelta        int32
     27      8    baseTimestamp          int64
     35      8    maxTimestamp           int64
     43      8    producerId             int64
     51      2    producerEpoch          int16
     53      4    baseSequence           int32
     57      4    recordsCount           int32
     61           records ...

Everything that looks inside records (decompression, record iteration) and every rewrite of a
batch (offsets, epoch, LogAppendTime + CRC) goes through ``wire.record_batch``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = [
    "HEADER_SIZE",
    "HEADER_STRUCT",
    "LOG_OVERHEAD",
    "BatchHeader",
    "parse_header",
]

LOG_OVERHEAD = 12  # baseOffset + batchLength
HEADER_SIZE = 61  # RECORD_BATCH_OVERHEAD
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
assert HEADER_STRUCT.size == HEADER_SIZE

# Attribute bits (int16 at byte 21): the one definition, wire.record_batch uses these too.
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08     # 1 = LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40     # baseTimestamp is the delete horizon (KIP-534)
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
INT32_MAX = (1 << 31) - 1


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        """Kafka's ``incrementSequence(baseSequence, lastOffsetDelta)``: wraps at Int.MAX."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        if self.base_sequence > INT32_MAX - self.last_offset_delta:
            return self.last_offset_delta - (INT32_MAX - self.base_sequence) - 1
        return self.base_sequence + self.last_offset_delta


_unpack_header = HEADER_STRUCT.unpack_from
_tuple_new = tuple.__new__


def parse_header(buf, pos: int = 0) -> BatchHeader:
    """Decode the header at ``buf[pos:pos+61]`` (``buf`` must hold at least that much).
    Built with ``tuple.__new__`` rather than ``namedtuple._make`` (its classmethod call and
    length check; the struct always yields every field): ~0.2 us less, and appends parse
    each batch's header twice."""
    return _tuple_new(BatchHeader, _unpack_header(buf, pos))
