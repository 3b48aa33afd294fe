"""What the server-side assignors share: the error, Java's orders, the normalized input.

The assignor modules (``uniform_assignor``, ``range_assignor``) port Kafka's Java classes
nearly line by line; this module holds what they need besides, so that neither imports the
public front (``assignors.py``), which imports both.

Orders.  Kafka iterates hash maps and hash sets in several places, whose order is an accident
of hashing; here those iterations are replaced by sorted orders, so that the same input gives
the same output.  Where Kafka compares explicitly, the comparison is Java's:

* :func:`java_string_key` orders strings as ``String.compareTo`` does (by UTF-16 code unit,
  which differs from Python's code point order only above U+FFFF).
* :func:`kafka_uuid_key` orders topic ids as Kafka's ``Uuid.compareTo`` does: the most and
  then the least significant 64 bits, each compared as a *signed* ``long``.  A topic id whose
  first bit is set sorts before one whose first bit is clear, unlike ``uuid.UUID``'s order.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["PartitionAssignorError", "AssignmentInput", "java_string_key", "kafka_uuid_key"]

_2_63 = 1 << 63
_2_64 = 1 << 64


class PartitionAssignorError(Exception):
    """Kafka's PartitionAssignorException (the heartbeat then fails with that message)."""


def java_string_key(s: str) -> bytes:
    """A sort key giving Java's ``String.compareTo`` order (UTF-16 code units, unsigned)."""
    return s.encode("utf-16-be", "surrogatepass")


def kafka_uuid_key(topic_id: uuid.UUID) -> tuple[int, int]:
    """A sort key giving Kafka's ``Uuid.compareTo`` order (two signed 64-bit halves)."""
    msb, lsb = divmod(topic_id.int, _2_64)
    return (msb - _2_64 if msb >= _2_63 else msb, lsb - _2_64 if lsb >= _2_63 else lsb)


@dataclass(frozen=True, slots=True)
class AssignmentInput:
    """The group as the ported builders see it (Kafka's ``GroupSpec`` and
    ``SubscribedTopicDescriber``), already cleaned by ``assignors.assign``.

    * ``member_ids``: every member, in the order Kafka would iterate ``GroupSpec.memberIds()``
      (here: sorted by member id, Java's string order).
    * ``subscriptions``: member id -> subscribed topic ids that exist (Kafka resolves names
      against the metadata image, so a missing topic is never in a subscription).
    * ``assigned``: member id -> the current target assignment, keeping only topics that the
      member subscribes to and that exist, partitions below the partition count, and each
      partition once (the first member in ``member_ids`` order keeps a partition claimed twice).
      Topics are in :func:`kafka_uuid_key` order, partitions ascending, no empty topic.
    * ``instance_ids``: member id -> ``group.instance.id`` or None.
    * ``partition_counts``: topic id -> partition count, for every subscribed topic.
    """

    member_ids: tuple[str, ...]
    subscriptions: Mapping[str, frozenset[uuid.UUID]]
    assigned: Mapping[str, Mapping[uuid.UUID, tuple[int, ...]]]
    instance_ids: Mapping[str, str | None]
    partition_counts: Mapping[uuid.UUID, int]
