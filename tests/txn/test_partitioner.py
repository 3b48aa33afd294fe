"""Transactional ids land in Kafka's ``__transaction_state`` partition:
``Utils.abs(transactionalId.hashCode) % partitions``."""

from __future__ import annotations

from groups.java_hash import partition_for as group_partition_for
from txn.partitioner import partition_for


def test_known_java_hash_codes_place_ids_as_kafka_does():
    # "Aa".hashCode() == "BB".hashCode() == 2112; "polygenelubricants".hashCode() is
    # Integer.MIN_VALUE, which Utils.abs maps to 0
    assert partition_for("Aa", 50) == partition_for("BB", 50) == 2112 % 50
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("", 50) == 0


def test_the_formula_is_the_group_coordinators_one():
    for tid in ["tx-1", "my-transactional-id", "é😀x", "a" * 300]:
        for n in (1, 6, 50):
            assert partition_for(tid, n) == group_partition_for(tid, n)
