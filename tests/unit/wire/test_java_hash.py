"""Group ids and transactional ids land in Kafka's internal-topic partitions:
``Utils.abs(key.hashCode) % partitions`` (wire/java_hash.py)."""

from __future__ import annotations

from wire.java_hash import java_string_hash, partition_for


def test_known_java_hash_codes_place_keys_as_kafka_does():
    # "Aa".hashCode() == "BB".hashCode() == 2112; "polygenelubricants".hashCode() is
    # Integer.MIN_VALUE, which Utils.abs maps to 0
    assert partition_for("Aa", 50) == partition_for("BB", 50) == 2112 % 50
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("", 50) == 0


def test_a_lone_surrogate_hashes_as_one_utf16_code_unit_as_in_java():
    assert java_string_hash("\ud800") == 0xD800
    assert java_string_hash("a\udc00") == 97 * 31 + 0xDC00
