"""Java's ``String.hashCode`` and Kafka's key -> coordinator partition mapping.

Kafka places a group's state in partition ``Utils.abs(groupId.hashCode()) % numPartitions``
of ``__consumer_offsets`` (``GroupCoordinatorService.partitionFor``) and a transactional id's
in ``Utils.abs(transactionalId.hashCode) % transactionTopicPartitionCount`` of
``__transaction_state`` (``TransactionStateManager.partitionFor``).  A client never computes
this itself (it asks FindCoordinator), but the partition must match Kafka's so that an
existing internal topic's layout and tools reading it agree with us.  The same hash also
orders Java hash maps (cluster/jvm_order.py, the tools' output) and picks a replica fetcher
(kbroker/replica/replica_fetcher.py): one implementation here, in the lowest layer, for all of them.

``String.hashCode`` is ``s[0]*31^(n-1) + ... + s[n-1]`` in wrapping 32-bit arithmetic over the
string's UTF-16 code units (a character outside the BMP counts as its two surrogates).
``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0 instead of overflowing.
"""

from __future__ import annotations

__all__ = ["java_string_hash", "java_abs", "partition_for"]

_INT_MIN = -(2**31)


def java_string_hash(s: str) -> int:
    """``s.hashCode()`` as Java computes it: a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")   # a lone surrogate is one code unit in Java
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def java_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``abs`` except that ``Integer.MIN_VALUE`` becomes 0."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(key: str, num_partitions: int) -> int:
    """The internal topic's partition that holds ``key`` (a group id in ``__consumer_offsets``,
    a transactional id in ``__transaction_state``): Kafka's formula."""
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    return java_abs(java_string_hash(key)) % num_partitions
