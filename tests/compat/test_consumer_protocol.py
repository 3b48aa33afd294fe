"""Kafka 4's consumer group protocol (KIP-848) with stock clients in ``group.protocol=consumer``
(confluent-kafka, and Kafka's own Java consumer from kafka-clients 4.x) against a real broker
process: the coordinator assigns and members reconcile, every record read once; a member
killed with -9 is fenced after its session and its partitions resume from its commits.
(The other behaviours: test_consumer_protocol_subscriptions.py, _migration.py, _records.py.)"""

from __future__ import annotations

import time

import pytest

from tests.support.consumer_members import describe, member, settled, wait_until
from tests.support.group_helpers import create_topic, produce_numbers


@pytest.fixture
def broker(fast_broker):
    """A broker with short group sessions (tests/compat/conftest.py)."""
    return fast_broker


def test_three_consumer_protocol_members_split_six_partitions_and_read_every_record_once(broker, consumer_client, tmp_path):
    create_topic(broker.bootstrap, "clicks", 6)
    members = [member(broker, consumer_client, "g1", "clicks", tmp_path / f"m{i}.out") for i in range(3)]
    try:
        wanted = {f"clicks:{p}" for p in range(6)}
        wait_until(lambda: settled(members, wanted) and all(len(m.assignment()) == 2 for m in members),
                   what="three members with two partitions each")
        produce_numbers(broker.bootstrap, 3000)
        wait_until(lambda: sum(len(m.records()) for m in members) >= 3000, what="3000 records")
        time.sleep(0.5)
        values = sorted(v for m in members for v, _, _ in m.records())
        assert values == list(range(3000))
        for m in members:  # each member read only its own partitions
            own = {int(tp.split(":")[1]) for tp in m.assignment()}
            assert {p for _, p, _ in m.records()} <= own
        d = describe(broker.bootstrap, "g1")
        assert (d.error_code, d.group_state, d.assignor_name) == (0, "Stable", "uniform")
        assert d.group_epoch == d.assignment_epoch
        assert len(d.members) == 3
        assert all(m.member_epoch == d.group_epoch and m.member_type == 1 for m in d.members)
        assert sorted(p for m in d.members for tp in m.assignment.topic_partitions
                      for p in tp.partitions) == list(range(6))
        assert all(m.assignment == m.target_assignment for m in d.members)
    finally:
        for m in members:
            m.stop()


def test_a_member_killed_with_minus_9_is_fenced_and_its_partitions_resume_from_its_commits(broker, consumer_client, tmp_path):
    create_topic(broker.bootstrap, "clicks", 4)
    a = member(broker, consumer_client, "g2", "clicks", tmp_path / "a.out")
    b = member(broker, consumer_client, "g2", "clicks", tmp_path / "b.out")
    try:
        wait_until(lambda: settled([a, b], {f"clicks:{p}" for p in range(4)}), what="a split")
        produce_numbers(broker.bootstrap, 400)
        wait_until(lambda: len(a.records()) + len(b.records()) >= 400, what="the first 400")
        b_partitions = {int(tp.split(":")[1]) for tp in b.assignment()}
        b.kill()
        produce_numbers(broker.bootstrap, 400, start=400)
        wait_until(lambda: len(a.records()) + len(b.records()) >= 800, timeout_s=60,
                   what="the survivor to take over and read the next 400")
        time.sleep(0.5)
        values = sorted(v for m in (a, b) for v, _, _ in m.records())
        assert values == list(range(800))   # nothing lost, nothing read twice
        later = [(p, o) for v, p, o in a.records() if v >= 400 and p in b_partitions]
        assert later, "the survivor read the killed member's partitions"
        d = describe(broker.bootstrap, "g2")
        assert [m.member_id for m in d.members] and len(d.members) == 1
        assert d.group_state == "Stable"
    finally:
        a.stop()
        b.stop()
