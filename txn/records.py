"""``__transaction_state`` records, encoded as Kafka writes them (``TransactionLog``).

Key: ``int16 record type (0)`` + TransactionLogKey{transactional_id} (its one layout, 0;
Kafka's schema calls the type the key's ``apiKey``, Kafka before 4.0 its version).
Value: ``int16 version`` + TransactionLogValue; Kafka writes version 0 (the non-flexible
layout) unless ``transaction.version`` >= 1 is finalized, which this broker does not
advertise, so version 0 here too.  ``transaction_partitions`` is null in the Empty state,
else the partitions grouped by topic.  A null value (tombstone) removes the id (Dead).
Readers accept value versions 0 and 1 (1 adds tagged previous/next producer ids and the
client's transaction version).  The state byte is :class:`txn.states.TxnState`.
"""

from __future__ import annotations

import struct

from txn.metadata import NO_PRODUCER_EPOCH, TxnTransit
from txn.states import TxnState
from wire import decode, encode
from wire.messages import TransactionLogKey, TransactionLogValue

__all__ = ["KEY_VERSION", "VALUE_VERSION", "key_bytes", "value_bytes", "decode_key",
           "decode_value"]

KEY_VERSION = 0
VALUE_VERSION = 0
_I16 = struct.Struct(">h")


def key_bytes(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + encode(TransactionLogKey(transactional_id=transactional_id), 0)


def value_bytes(t: TxnTransit, version: int = VALUE_VERSION) -> bytes:
    if t.state is TxnState.EMPTY and t.partitions:
        raise ValueError("an Empty transaction has no partitions")
    partitions = None
    if t.state is not TxnState.EMPTY:
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(t.partitions):
            by_topic.setdefault(topic, []).append(index)
        partitions = [TransactionLogValue.PartitionsSchema(topic=topic, partition_ids=ids)
                      for topic, ids in by_topic.items()]
    value = TransactionLogValue(
        producer_id=t.producer_id, previous_producer_id=t.previous_producer_id,
        next_producer_id=t.next_producer_id, producer_epoch=t.producer_epoch,
        transaction_timeout_ms=t.txn_timeout_ms, transaction_status=int(t.state),
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=t.txn_last_update_timestamp_ms,
        transaction_start_timestamp_ms=t.txn_start_timestamp_ms)
    return _I16.pack(version) + encode(value, version)


def decode_key(key: bytes | memoryview) -> str | None:
    """The transactional id, or None for a key version this coordinator does not know."""
    (version,) = _I16.unpack_from(key, 0)
    if version != KEY_VERSION:
        return None
    return decode(TransactionLogKey, memoryview(key)[2:], 0).transactional_id


def decode_value(value: bytes | memoryview | None) -> TxnTransit | None:
    """The logged state, or None for a tombstone.  The last epoch is not logged: a loaded
    transaction has none (Kafka's loader sets NO_PRODUCER_EPOCH)."""
    if value is None:
        return None
    (version,) = _I16.unpack_from(value, 0)
    v = decode(TransactionLogValue, memoryview(value)[2:], version)
    partitions = frozenset((p.topic, i) for p in (v.transaction_partitions or [])
                           for i in p.partition_ids)
    return TxnTransit(v.producer_id, v.previous_producer_id, v.next_producer_id,
                      v.producer_epoch, NO_PRODUCER_EPOCH, v.transaction_timeout_ms,
                      TxnState(v.transaction_status), partitions,
                      v.transaction_start_timestamp_ms, v.transaction_last_update_timestamp_ms)
