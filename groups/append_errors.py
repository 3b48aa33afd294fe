"""The answer a client gets when a coordinator record could not be appended.

Kafka maps the log's append error to an error the group APIs' clients know how to handle
(retry elsewhere, rediscover the coordinator, give up).  Two tables, as in Kafka:

* group metadata (SyncGroup's assignment, a static member's new id): Kafka's
  ``GroupMetadataManager.appendGroupMetadataErrorToResponseError`` (group-coordinator, 3.6+;
  the Scala ``storeGroup`` before it also mapped NOT_ENOUGH_REPLICAS_AFTER_APPEND the same
  way): UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT ->
  COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR -> NOT_COORDINATOR;
  MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE -> UNKNOWN_SERVER_ERROR;
  anything else is answered as it is.
* offsets (OffsetCommit): Scala ``GroupMetadataManager.storeOffsets`` (2.x-3.x): the same,
  except that a record over ``max.message.bytes`` is INVALID_COMMIT_OFFSET_SIZE, which the
  Java consumer raises to the application instead of retrying.  REQUEST_TIMED_OUT ->
  COORDINATOR_NOT_AVAILABLE as the Java coordinator's ``handleOperationException`` does (the
  Scala code passed it through).

The adapter turns exceptions into append errors: a ``log.errors.LogError`` carries its code,
an I/O error is KAFKA_STORAGE_ERROR (Kafka marks the dir offline), anything unexpected is
UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode

__all__ = ["group_metadata_error", "offset_commit_error"]

E = ErrorCode

_COMMON = {
    E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE,
    E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
    E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR,
}
_TOO_LARGE = (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE)

_GROUP = {**_COMMON, **{code: E.UNKNOWN_SERVER_ERROR for code in _TOO_LARGE}}
_OFFSETS = {**_COMMON, **{code: E.INVALID_COMMIT_OFFSET_SIZE for code in _TOO_LARGE}}


def group_metadata_error(append_error: ErrorCode) -> ErrorCode:
    """The SyncGroup/JoinGroup error for a group metadata record that was not appended."""
    return _GROUP.get(append_error, append_error)


def offset_commit_error(append_error: ErrorCode) -> ErrorCode:
    """The OffsetCommit partition error for offset records that were not appended."""
    return _OFFSETS.get(append_error, append_error)
