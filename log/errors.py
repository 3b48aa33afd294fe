"""Exceptions raised by log/, each carrying the name of the Kafka error code a client expects.

``exc.error`` is the ``wire.error_codes.ErrorCode`` a client expects; log/ knows nothing of
requests, and the broker answers with that code.  Exceptions without ``error`` client meaning (a corrupt index, a
bad snapshot) are internal and handled inside log/.
"""

from __future__ import annotations

from typing import NamedTuple

from wire.error_codes import ErrorCode

__all__ = [
    "CorruptIndexError",
    "CorruptRecordError",
    "CorruptSnapshotError",
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
    "RecordError",
    "RecordBatchTooLargeError",
    "RecordTooLargeError",
    "TransactionCoordinatorFencedError",
    "UnexpectedAppendOffsetError",
    "UnknownProducerIdError",
    "UnsupportedForMessageFormatError",
]


class RecordError(NamedTuple):
    """One rejected record of a produced batch (Kafka's ``ProduceResponse.RecordError``):
    ``batch_index`` is the record's position in its batch, from 0."""

    batch_index: int
    message: str | None

    def __str__(self) -> str:  # Kafka's RecordError.toString, used in the exception message
        message = "null" if self.message is None else f"'{self.message}'"
        return f"RecordError(batchIndex={self.batch_index}, message={message})"


class LogError(Exception):
    """Base class; ``error`` is the Kafka error a client should see.  ``record_errors`` names
    the offending records when validation rejects individual records (Kafka's
    ``RecordValidationException``); Produce v8+ returns them per partition."""

    error: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, *args: object, record_errors: tuple[RecordError, ...] = ()) -> None:
        super().__init__(*args)
        self.record_errors = record_errors


class OffsetOutOfRangeError(LogError):
    error = ErrorCode.OFFSET_OUT_OF_RANGE


class PolicyViolationError(LogError):
    """DeleteRecords on a log whose cleanup.policy has no ``delete``."""
    error = ErrorCode.POLICY_VIOLATION


class CorruptRecordError(LogError):
    error = ErrorCode.CORRUPT_MESSAGE


class RecordTooLargeError(LogError):
    """A batch is larger than max.message.bytes."""

    error = ErrorCode.MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(LogError):
    """The appended bytes are larger than segment.bytes."""

    error = ErrorCode.RECORD_LIST_TOO_LARGE


class InvalidRecordError(LogError):
    error = ErrorCode.INVALID_RECORD


class InvalidTimestampError(LogError):
    error = ErrorCode.INVALID_TIMESTAMP


class OutOfOrderSequenceError(LogError):
    error = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(LogError):
    error = ErrorCode.INVALID_PRODUCER_EPOCH


class UnknownProducerIdError(LogError):
    error = ErrorCode.UNKNOWN_PRODUCER_ID


class InvalidTxnStateError(LogError):
    error = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(LogError):
    """A transaction marker whose coordinator epoch is older than the producer's last one."""

    error = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class UnsupportedForMessageFormatError(LogError):
    error = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


class KafkaStorageError(LogError):
    """An I/O error on a log directory."""

    error = ErrorCode.KAFKA_STORAGE_ERROR


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
