"""The consumer group protocol (KIP-848), online migration: a running classic group rolled to the
consumer protocol member by member and back (confluent-kafka and Kafka's Java consumer), every
record committed exactly once."""

from __future__ import annotations

import time

import pytest

from tests.support.consumer_members import Member, settled, wait_until
from tests.support.group_helpers import create_topic, produce_numbers


@pytest.fixture
def broker(fast_broker):
    """A broker with short group sessions (tests/compat/conftest.py)."""
    return fast_broker


def _group_type(bootstrap: str, group: str) -> str:
    from tests.support.wire_client import WireClient
    from wire.messages import ListGroupsRequest, ListGroupsResponse

    client = WireClient(bootstrap)
    try:
        resp = client.call(ListGroupsRequest(states_filter=[], types_filter=[]), 5, ListGroupsResponse)
    finally:
        client.close()
    return next(g.group_type for g in resp.groups if g.group_id == group)


def test_a_running_classic_group_is_rolled_to_the_consumer_protocol_and_back_without_losing_or_repeating_a_record(
        broker, consumer_client, tmp_path):
    """Kafka 4's rolling upgrade: members restarted one at a time with the other protocol.
    Every record is read and committed exactly once across all the members' lives."""
    create_topic(broker.bootstrap, "clicks", 4)
    everyone: list[Member] = []
    produced = 0

    def start(name: str, protocol: str) -> Member:
        m = Member(broker.bootstrap, "roll", "clicks", tmp_path / f"{name}.out",
                   java=consumer_client == "java", protocol=protocol)
        everyone.append(m)
        return m

    def phase(live: list[Member], expect_type: str) -> None:
        nonlocal produced
        wait_until(lambda: settled(live, {f"clicks:{p}" for p in range(4)}), what=f"a split ({expect_type})")
        assert _group_type(broker.bootstrap, "roll") == expect_type
        produce_numbers(broker.bootstrap, 200, start=produced)
        produced += 200
        wait_until(lambda: len({v for m in everyone for v, _, _ in m.records()}) >= produced,
                   what=f"{produced} records")

    try:
        a, b = start("a-classic", "classic"), start("b-classic", "classic")
        phase([a, b], "classic")
        a.stop()
        a = start("a-consumer", "consumer")      # the upgrade: the group becomes a consumer group
        phase([a, b], "consumer")
        b.stop()
        b = start("b-consumer", "consumer")
        phase([a, b], "consumer")
        a.stop()
        a = start("a-classic-again", "classic")  # and back
        phase([a, b], "consumer")
        b.stop()
        b = start("b-classic-again", "classic")  # the last consumer-protocol member left: classic
        phase([a, b], "classic")
        time.sleep(0.5)
        values = sorted(v for m in everyone for v, _, _ in m.records())
        assert values == list(range(produced))   # nothing lost, nothing committed twice
    finally:
        for m in everyone:
            m.stop()
