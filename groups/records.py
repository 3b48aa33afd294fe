"""The ``__consumer_offsets`` records, encoded as Kafka writes them.

A record's key is ``int16 record type`` + key struct and its value ``int16 version`` + value
struct; a tombstone's value is null.  Kafka's schemas call the record type the key's
``apiKey`` (``"type": "coordinator-key"``); the key struct itself has one layout, version 0.
Kafka before 4.0 called the type the key's version, so the bytes are the same:

=========  ======================  ==========================================================
type       key / value             written by Kafka today
=========  ======================  ==========================================================
0, 1       OffsetCommitKey/Value   type 1; value v1 if an expire timestamp is set (OffsetCommit
                                   v2-v4 with retention_time_ms != -1), else v3
2          GroupMetadataKey/Value  type 2; value v3
3-8, 16   ConsumerGroup*Key/Value KIP-848 consumer groups (groups/consumer/records.py);
                                   type 4 (partition metadata) is only tombstoned, as Kafka 4
9-15, 17+  share/streams groups    unknown here
=========  ======================  ==========================================================

Readers accept every version of the value schemas (0-4), as Kafka's loader does.
``decode_key`` / ``decode_value`` read what the classic coordinator replays (types 0-2);
``decode_any_key`` / ``decode_any_value`` read every type of :data:`RECORD_TYPES`, for tools
(``kbroker dump-log --offsets-decoder``, as Kafka's DumpLogSegments prints them).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from wire import decode, decode_at, encode
from wire.messages import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)

__all__ = [
    "OFFSET_COMMIT_KEY_VERSION", "GROUP_METADATA_KEY_VERSION", "GROUP_METADATA_VALUE_VERSION",
    "RECORD_TYPES", "Record", "offset_commit_record", "offset_commit_tombstone",
    "group_metadata_record", "group_metadata_tombstone", "decode_key", "decode_value",
    "decode_any_key", "decode_any_value", "offset_commit_value_version", "coordinator_record",
    "CONSUMER_GROUP_RECORD_TYPES",
]

OFFSET_COMMIT_KEY_VERSION = 1    # the record type (the key schema's apiKey)
GROUP_METADATA_KEY_VERSION = 2   # the record type (the key schema's apiKey)
_KEY_LAYOUT = 0                  # every coordinator key struct has one layout
GROUP_METADATA_VALUE_VERSION = 3

_I16 = struct.Struct(">h")

# record type (the int16 before a key) -> (key struct, value struct) of every type above;
# type 0 is the OffsetCommit key of Kafka before 0.10 (LegacyOffsetCommitKey in Kafka 4's
# schemas), the same layout as type 1
RECORD_TYPES: dict[int, tuple[type, type]] = {
    0: (OffsetCommitKey, OffsetCommitValue),
    1: (OffsetCommitKey, OffsetCommitValue),
    2: (GroupMetadataKey, GroupMetadataValue),
    3: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    4: (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    5: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    6: (ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    7: (ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    8: (ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
    16: (ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue),
}
CONSUMER_GROUP_RECORD_TYPES = frozenset((3, 4, 5, 6, 7, 8, 16))
_CLASSIC_RECORD_TYPES = (0, 1, 2)


@dataclass(frozen=True, slots=True)
class Record:
    """One record for ``__consumer_offsets``: key bytes and value bytes (None = tombstone)."""

    key: bytes
    value: bytes | None

    def as_tuple(self) -> tuple[bytes, bytes | None]:
        return (self.key, self.value)


def _versioned(msg, version: int) -> bytes:
    return _I16.pack(version) + encode(msg, version)


def _keyed(key, record_type: int) -> bytes:
    return _I16.pack(record_type) + encode(key, _KEY_LAYOUT)


def coordinator_record(record_type: int, key: Any, value: Any | None, value_version: int = 0) -> Record:
    """A record of any type: ``record_type`` + key struct, ``value_version`` + value struct
    (None: a tombstone)."""
    return Record(_keyed(key, record_type), None if value is None else _versioned(value, value_version))


def offset_commit_value_version(has_expire_timestamp: bool) -> int:
    """Kafka's ``offsetCommitValueVersion``: v1 carries expireTimestamp, else v3."""
    return 1 if has_expire_timestamp else 3


def offset_commit_record(
    group_id: str, topic: str, partition: int, *, offset: int, leader_epoch: int,
    metadata: str, commit_timestamp_ms: int, expire_timestamp_ms: int | None,
) -> Record:
    key = OffsetCommitKey(group=group_id, topic=topic, partition=partition)
    value = OffsetCommitValue(
        offset=offset, leader_epoch=leader_epoch, metadata=metadata,
        commit_timestamp=commit_timestamp_ms,
        expire_timestamp=-1 if expire_timestamp_ms is None else expire_timestamp_ms,
    )
    version = offset_commit_value_version(expire_timestamp_ms is not None)
    return Record(_keyed(key, OFFSET_COMMIT_KEY_VERSION), _versioned(value, version))


def offset_commit_tombstone(group_id: str, topic: str, partition: int) -> Record:
    key = OffsetCommitKey(group=group_id, topic=topic, partition=partition)
    return Record(_keyed(key, OFFSET_COMMIT_KEY_VERSION), None)


def group_metadata_record(value: GroupMetadataValue, group_id: str) -> Record:
    key = GroupMetadataKey(group=group_id)
    return Record(
        _keyed(key, GROUP_METADATA_KEY_VERSION),
        _versioned(value, GROUP_METADATA_VALUE_VERSION),
    )


def group_metadata_tombstone(group_id: str) -> Record:
    return Record(_keyed(GroupMetadataKey(group=group_id), GROUP_METADATA_KEY_VERSION), None)


def _record_type(key: bytes | memoryview) -> int:
    if len(key) < 2:
        raise ValueError("coordinator record key shorter than its record type")
    return _I16.unpack_from(key, 0)[0]


def decode_key(key: bytes | memoryview) -> OffsetCommitKey | GroupMetadataKey | None:
    """The key struct, or None for record types the classic coordinator does not own."""
    record_type = _record_type(key)
    if record_type not in _CLASSIC_RECORD_TYPES:
        return None
    return decode(RECORD_TYPES[record_type][0], memoryview(key)[2:], _KEY_LAYOUT)


def decode_any_key(key: bytes | memoryview) -> tuple[int, Any | None]:
    """(record type, key struct) for any type of :data:`RECORD_TYPES`; the struct is None
    for a type not there.  Raises what the decoder raises for a malformed key."""
    record_type = _record_type(key)
    if record_type not in RECORD_TYPES:
        return record_type, None
    return record_type, decode_at(RECORD_TYPES[record_type][0], key, _KEY_LAYOUT, 2)[0]


def decode_any_value(record_type: int, value: bytes | memoryview) -> tuple[int, Any]:
    """(version, value struct) of a non-null value of ``record_type`` (a key of
    :data:`RECORD_TYPES`, as ``decode_any_key`` answered it)."""
    if len(value) < 2:
        raise ValueError("coordinator record value shorter than its version")
    (version,) = _I16.unpack_from(value, 0)
    return version, decode_at(RECORD_TYPES[record_type][1], value, version, 2)[0]


def decode_value(key_struct, value: bytes | memoryview | None):
    """The value struct for ``key_struct``'s type, or None for a tombstone."""
    if value is None:
        return None
    (version,) = _I16.unpack_from(value, 0)
    body = memoryview(value)[2:]
    if isinstance(key_struct, OffsetCommitKey):
        return decode(OffsetCommitValue, body, version)
    return decode(GroupMetadataValue, body, version)
