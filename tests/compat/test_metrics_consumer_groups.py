"""/metrics (kbroker.metrics.port) on a real broker process counts groups of both types as
Kafka's GroupCoordinatorMetrics does: group-count per protocol, consumer groups (KIP-848) per
state, and the consumer groups' rebalances (group epoch bumps), while confluent-kafka members
in ``group.protocol=consumer`` join and leave."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.support.broker_process import free_port
from tests.support.consumer_members import describe
from tests.support.group_helpers import create_topic
from tests.support.metrics_scrape import scrape_labelled

pytestmark = [pytest.mark.compat, pytest.mark.timeout(300)]

PREFIX = "kafka_server_group_coordinator_metrics_"
GROUP = "metered"
# members learn of a new target at their next heartbeat: 0.5 s instead of 5 s
FAST_HEARTBEATS = {"group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500"}


def counts(port: int) -> dict[str, float]:
    """group-count per protocol, consumer-group-count per state, the rebalance count."""
    samples = scrape_labelled(port)
    out = {}
    for (name, labels), v in samples.items():
        if name.startswith(PREFIX):
            out[name[len(PREFIX):] + "".join(f"{{{k}={lv}}}" for k, lv in labels)] = v
    return out


def wait_for(port: int, wanted: dict[str, float], timeout_s: float = 60) -> dict[str, float]:
    deadline = time.monotonic() + timeout_s
    while True:
        got = counts(port)
        if {k: got.get(k) for k in wanted} == wanted:
            return got
        assert time.monotonic() < deadline, (wanted, got)
        time.sleep(0.2)


def member(bootstrap: str, name: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "group.protocol": "consumer",
                  "client.id": name, "enable.auto.commit": False})
    c.subscribe(["clicks"])
    return c


def poll_until(consumers: list[Consumer], done, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline
        for c in consumers:
            c.poll(0.1)


def test_group_counts_by_protocol_and_state_and_the_rebalance_count_follow_consumer_group_members(broker_factory):
    port = free_port()
    b = broker_factory(**{"kbroker.metrics.port": str(port), **FAST_HEARTBEATS})
    create_topic(b.bootstrap, "clicks", 2)
    before = counts(port)
    assert before == {"group_count{protocol=classic}": 0, "group_count{protocol=consumer}": 0,
                      "consumer_group_count{state=Empty}": 0, "consumer_group_count{state=Assigning}": 0,
                      "consumer_group_count{state=Reconciling}": 0, "consumer_group_count{state=Stable}": 0,
                      "consumer_group_count{state=Dead}": 0, "consumer_group_rebalance_count": 0}
    classic = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "classic-committer"})
    classic.commit(offsets=[TopicPartition("clicks", 0, 1)], asynchronous=False)
    classic.close()
    a = member(b.bootstrap, "a")
    poll_until([a], lambda: len(a.assignment()) == 2)
    wait_for(port, {"group_count{protocol=classic}": 1, "group_count{protocol=consumer}": 1,
                    "consumer_group_count{state=Stable}": 1, "consumer_group_rebalance_count": 1})
    second = member(b.bootstrap, "b")
    poll_until([a, second], lambda: len(a.assignment()) == 1 and len(second.assignment()) == 1)
    # the second member's join bumped the group epoch once: one rebalance more
    wait_for(port, {"consumer_group_count{state=Stable}": 1, "consumer_group_rebalance_count": 2})
    d = describe(b.bootstrap, GROUP)
    assert (d.group_state, len(d.members)) == ("Stable", 2)
    a.close()
    second.close()
    # each leaving member bumps the epoch too; the group is Empty, still a consumer group
    wait_for(port, {"group_count{protocol=consumer}": 1, "consumer_group_count{state=Empty}": 1,
                    "consumer_group_count{state=Stable}": 0, "consumer_group_rebalance_count": 4})

