"""The consumer-group records of ``__consumer_offsets`` (types 3-8, 16): Kafka's bytes, and a
replay that rebuilds what was applied."""

from __future__ import annotations

import uuid

from groups.consumer import records as R
from groups.consumer.member import ClassicProtocol, ConsumerGroupMember, MemberState
from groups.records import decode_any_key, decode_any_value

T = uuid.UUID(int=5)


def test_a_consumer_protocol_members_subscription_writes_its_classic_metadata_as_kafkas_explicit_null():
    m = ConsumerGroupMember("m1", client_id="c", client_host="/h", subscribed_topic_names=("t",),
                            rebalance_timeout_ms=300_000)
    record = R.encode(R.subscription("g", m))
    # ... rebalanceTimeoutMs, serverAssignor null, then one tagged field: tag 0, size 1, varint 0
    assert record.value.endswith(bytes.fromhex("000493e0" "00" "01" "00" "01" "00"))
    version, value = decode_any_value(5, record.value)
    assert (version, value.classic_member_metadata) == (0, None)


def test_a_classic_members_protocols_round_trip_through_the_tagged_struct():
    m = ConsumerGroupMember("m1", classic_session_timeout_ms=10_000,
                            classic_protocols=(ClassicProtocol("range", b"\x00\x01"),))
    groups: dict = {}
    R.apply(groups, R.subscription("g", m))
    assert groups["g"].members["m1"].classic_protocols == (ClassicProtocol("range", b"\x00\x01"),)
    record = R.encode(R.subscription("g", m))
    _, key = decode_any_key(record.key)
    groups2: dict = {}
    R.apply(groups2, (5, key, decode_any_value(5, record.value)[1]))
    assert groups2["g"].members["m1"] == groups["g"].members["m1"]


def test_every_record_type_replays_from_its_bytes_to_the_same_group():
    m = ConsumerGroupMember("m1", member_epoch=3, previous_member_epoch=2,
                            state=MemberState.UNREVOKED_PARTITIONS, subscribed_topic_names=("t",),
                            assigned={T: {0: 1, 1: 3}}, pending_revocation={T: {2: 1}})
    changes = [R.subscription("g", m), R.epoch("g", 3, 99), R.target_member("g", "m1", {T: frozenset({0, 1})}),
               R.target_metadata("g", 3, 1234), R.current_assignment("g", m)]
    live: dict = {}
    replayed: dict = {}
    for change in changes:
        R.apply(live, change)
        record = R.encode(change)
        record_type, key = decode_any_key(record.key)
        R.apply(replayed, (record_type, key, decode_any_value(record_type, record.value)[1]))
    a, b = live["g"], replayed["g"]
    assert a.members == b.members and a.target == b.target
    assert (b.group_epoch, b.metadata_hash, b.assignment_epoch, b.assignment_timestamp_ms) == (3, 99, 3, 1234)
    assert b.partition_owner == {(T, 0): 3, (T, 1): 3, (T, 2): 3}
