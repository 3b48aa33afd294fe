"""The ``__transaction_state`` partition of a transactional id: Kafka's
``Utils.abs(transactionalId.hashCode) % transactionTopicPartitionCount``.

``String.hashCode`` over UTF-16 code units in wrapping 32-bit arithmetic; ``Utils.abs``
maps ``Integer.MIN_VALUE`` to 0.  (The same formula as groups/java_hash.py: txn/ and
groups/ are sibling layers and may not import each other.)
"""

from __future__ import annotations

__all__ = ["partition_for"]


def _java_string_hash(s: str) -> int:
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def partition_for(transactional_id: str, num_partitions: int) -> int:
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    h = _java_string_hash(transactional_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions
