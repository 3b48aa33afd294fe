"""Exceptions raised by log/, each carrying the name of the Kafka error code a client expects.

log/ knows nothing of requests, so it does not pick numeric codes: the broker maps
``exc.error`` (a :class:`Errors` member, Kafka's ``Errors`` enum name) to the code of the API
and version it is answering.  Exceptions without ``error`` client meaning (a corrupt index, a
bad snapshot) are internal and handled inside log/.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "CorruptIndexError",
    "CorruptRecordError",
    "CorruptSnapshotError",
    "Errors",
    "IndexOffsetOverflowError",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "InvalidTxnStateError",
    "KafkaStorageError",
    "LogError",
    "LogSegmentOffsetOverflowError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "RecordBatchTooLargeError",
    "RecordTooLargeError",
    "UnexpectedAppendOffsetError",
    "UnknownProducerIdError",
    "UnsupportedForMessageFormatError",
]


class Errors(StrEnum):
    """Kafka error names (``org.apache.kafka.common.protocol.Errors``) that log/ can produce."""

    OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
    CORRUPT_MESSAGE = "CORRUPT_MESSAGE"
    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"
    RECORD_LIST_TOO_LARGE = "RECORD_LIST_TOO_LARGE"
    INVALID_RECORD = "INVALID_RECORD"
    INVALID_TIMESTAMP = "INVALID_TIMESTAMP"
    OUT_OF_ORDER_SEQUENCE_NUMBER = "OUT_OF_ORDER_SEQUENCE_NUMBER"
    INVALID_PRODUCER_EPOCH = "INVALID_PRODUCER_EPOCH"
    UNKNOWN_PRODUCER_ID = "UNKNOWN_PRODUCER_ID"
    INVALID_TXN_STATE = "INVALID_TXN_STATE"
    UNSUPPORTED_FOR_MESSAGE_FORMAT = "UNSUPPORTED_FOR_MESSAGE_FORMAT"
    KAFKA_STORAGE_ERROR = "KAFKA_STORAGE_ERROR"
    UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR"


class LogError(Exception):
    """Base class; ``error`` is the Kafka error a client should see."""

    error: Errors = Errors.UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(LogError):
    error = Errors.OFFSET_OUT_OF_RANGE


class CorruptRecordError(LogError):
    error = Errors.CORRUPT_MESSAGE


class RecordTooLargeError(LogError):
    """A batch is larger than max.message.bytes."""

    error = Errors.MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(LogError):
    """The appended bytes are larger than segment.bytes."""

    error = Errors.RECORD_LIST_TOO_LARGE


class InvalidRecordError(LogError):
    error = Errors.INVALID_RECORD


class InvalidTimestampError(LogError):
    error = Errors.INVALID_TIMESTAMP


class OutOfOrderSequenceError(LogError):
    error = Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(LogError):
    error = Errors.INVALID_PRODUCER_EPOCH


class UnknownProducerIdError(LogError):
    error = Errors.UNKNOWN_PRODUCER_ID


class InvalidTxnStateError(LogError):
    error = Errors.INVALID_TXN_STATE


class UnsupportedForMessageFormatError(LogError):
    error = Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT


class KafkaStorageError(LogError):
    """An I/O error on a log directory."""

    error = Errors.KAFKA_STORAGE_ERROR


class UnexpectedAppendOffsetError(LogError):
    """Follower-style append whose offsets are below the log end offset."""


# ---- internal: handled inside log/ (rebuild, truncate), never sent to a client


class CorruptIndexError(Exception):
    """An index file failed its sanity check; the segment is recovered (indexes rebuilt)."""


class CorruptSnapshotError(Exception):
    """A producer-state snapshot has a bad version or CRC; it is deleted and an older one used."""


class IndexOffsetOverflowError(Exception):
    """An offset does not fit in the int32 relative offset of a segment's indexes."""


class LogSegmentOffsetOverflowError(IndexOffsetOverflowError):
    """A batch's last offset is too far from its segment's base offset."""
