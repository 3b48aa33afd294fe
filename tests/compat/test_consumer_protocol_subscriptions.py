"""The consumer group protocol (KIP-848) with confluent-kafka and Kafka's Java consumer: a regex
subscription picks up a topic created later; a static member comes back without a rebalance."""

from __future__ import annotations

import time

import pytest

from tests.support.consumer_members import FAST, describe, member, settled, wait_until
from tests.support.group_helpers import create_topic, produce_numbers


@pytest.fixture
def broker(fast_broker):
    """A broker with short group sessions (tests/compat/conftest.py)."""
    return fast_broker


def test_a_regex_subscription_picks_up_a_topic_created_later(broker, consumer_client, tmp_path):
    create_topic(broker.bootstrap, "orders-eu", 2)
    create_topic(broker.bootstrap, "payments", 2)
    m = member(broker, consumer_client, "g3", "^orders-.*", tmp_path / "m.out")
    try:
        wait_until(lambda: m.assignment() == {"orders-eu:0", "orders-eu:1"}, what="orders-eu")
        create_topic(broker.bootstrap, "orders-us", 2)
        wait_until(lambda: m.assignment() == {"orders-eu:0", "orders-eu:1", "orders-us:0", "orders-us:1"},
                   timeout_s=60, what="orders-us picked up")
        produce_numbers(broker.bootstrap, 10, topic="orders-us")
        produce_numbers(broker.bootstrap, 10, topic="payments", start=100)
        wait_until(lambda: len(m.records()) >= 10, what="orders-us records")
        time.sleep(0.5)
        assert sorted(v for v, _, _ in m.records()) == list(range(10))
        d = describe(broker.bootstrap, "g3")
        # librdkafka sends its regex subscriptions as one alternation in parentheses
        assert d.members[0].subscribed_topic_regex == ("(^orders-.*)" if consumer_client == "confluent" else "^orders-.*")
    finally:
        m.stop()


def test_a_static_member_that_restarts_gets_its_partitions_back_without_a_new_group_epoch(
        broker_factory, consumer_client, tmp_path):
    # a static member that left keeps its place for its session: 30 s here, time enough for a
    # JVM to start again on a busy machine (6 s was not always)
    broker = broker_factory(**{**FAST, "group.consumer.session.timeout.ms": "30000"})
    create_topic(broker.bootstrap, "clicks", 4)
    a = member(broker, consumer_client, "g4", "clicks", tmp_path / "a.out", instance_id="a")
    b = member(broker, consumer_client, "g4", "clicks", tmp_path / "b.out", instance_id="b")
    try:
        wait_until(lambda: settled([a, b], {f"clicks:{p}" for p in range(4)}), what="a split")
        before = describe(broker.bootstrap, "g4")
        b_share = b.assignment()
        b.stop()   # a static member leaves with epoch -2: it keeps its place
        assert "closed" in b.lines(), "b closed cleanly (it was not killed)"
        wait_until(lambda: [m.member_epoch for m in describe(broker.bootstrap, "g4").members
                            if m.instance_id == "b"] == [-2], what="b's static leave (epoch -2)")
        b2 = member(broker, consumer_client, "g4", "clicks", tmp_path / "b2.out", instance_id="b")
        try:
            wait_until(lambda: b2.assignment() == b_share, what="b's partitions back")
            after = describe(broker.bootstrap, "g4")
            assert after.group_epoch == before.group_epoch
            assert a.assignment() == {f"clicks:{p}" for p in range(4)} - b_share
            assert sorted(m.instance_id for m in after.members) == ["a", "b"]
        finally:
            b2.stop()
    finally:
        a.stop()
        b.stop()
