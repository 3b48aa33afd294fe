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
3+         consumer/share/streams  (KIP-848 and later groups) skipped on replay
=========  ======================  ==========================================================

Readers accept every version of the value schemas (0-4), as Kafka's loader does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from wire import decode, encode
from wire.messages import GroupMetadataKey, GroupMetadataValue, OffsetCommitKey, OffsetCommitValue

__all__ = [
    "OFFSET_COMMIT_KEY_VERSION", "GROUP_METADATA_KEY_VERSION", "GROUP_METADATA_VALUE_VERSION",
    "Record", "offset_commit_record", "offset_commit_tombstone", "group_metadata_record",
    "group_metadata_tombstone", "decode_key", "decode_value", "offset_commit_value_version",
]

OFFSET_COMMIT_KEY_VERSION = 1    # the record type (the key schema's apiKey)
GROUP_METADATA_KEY_VERSION = 2   # the record type (the key schema's apiKey)
_KEY_LAYOUT = 0                  # every coordinator key struct has one layout
GROUP_METADATA_VALUE_VERSION = 3

_I16 = struct.Struct(">h")


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


def decode_key(key: bytes | memoryview) -> OffsetCommitKey | GroupMetadataKey | None:
    """The key struct, or None for record types the classic coordinator does not own."""
    if len(key) < 2:
        raise ValueError("coordinator record key shorter than its record type")
    (record_type,) = _I16.unpack_from(key, 0)
    body = memoryview(key)[2:]
    if record_type in (0, 1):
        return decode(OffsetCommitKey, body, _KEY_LAYOUT)
    if record_type == 2:
        return decode(GroupMetadataKey, body, _KEY_LAYOUT)
    return None


def decode_value(key_struct, value: bytes | memoryview | None):
    """The value struct for ``key_struct``'s type, or None for a tombstone."""
    if value is None:
        return None
    (version,) = _I16.unpack_from(value, 0)
    body = memoryview(value)[2:]
    if isinstance(key_struct, OffsetCommitKey):
        return decode(OffsetCommitValue, body, version)
    return decode(GroupMetadataValue, body, version)
