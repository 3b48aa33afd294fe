"""The console's group pages on a broker holding both group types: a classic group and a
consumer group of Kafka 4's consumer group protocol (KIP-848) with two confluent-kafka
members in ``group.protocol=consumer``.  The pages are read over HTTP from the broker's own
console (``kbroker.console.listener``), no browser needed: each group with its type, state,
group epoch and lag, each member with its member epoch and partitions."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.console.helpers import cells, get
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.consumer_members import describe
from tests.support.group_helpers import create_topic
from tests.tools.helpers import wait_until

pytestmark = [pytest.mark.compat, pytest.mark.timeout(300)]

TOPIC, CLASSIC, MODERN = "orders", "classic-readers", "modern-readers"
PER_PARTITION, COMMITTED = 5, 1
# members learn of a new target at their next heartbeat: 0.5 s instead of 5 s
FAST_HEARTBEATS = {"group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500"}


@dataclass
class Site:
    url: str
    bootstrap: str


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("console-groups") / "data", overrides={
        "kbroker.console.listener": f"http://127.0.0.1:{port}", **FAST_HEARTBEATS}).start()
    members: list[Consumer] = []
    try:
        bs = broker.bootstrap
        create_topic(bs, TOPIC, 3)
        p = Producer({"bootstrap.servers": bs, "linger.ms": 0})
        for i in range(3 * PER_PARTITION):
            p.produce(TOPIC, value=b"%d" % i, partition=i % 3)
        assert p.flush(30) == 0
        classic = Consumer({"bootstrap.servers": bs, "group.id": CLASSIC, "enable.auto.commit": False})
        classic.commit(offsets=[TopicPartition(TOPIC, 0, PER_PARTITION)], asynchronous=False)
        classic.close()
        for name in ("reader-a", "reader-b"):
            c = Consumer({"bootstrap.servers": bs, "group.id": MODERN, "group.protocol": "consumer",
                          "client.id": name, "enable.auto.commit": False})
            c.subscribe([TOPIC])
            members.append(c)
        deadline = time.monotonic() + 60
        while sum(len(c.assignment()) for c in members) < 3 or not all(c.assignment() for c in members):
            assert time.monotonic() < deadline
            for c in members:
                c.poll(0.1)
        a = members[0]
        a.commit(offsets=[TopicPartition(TOPIC, tp.partition, COMMITTED) for tp in a.assignment()],
                 asynchronous=False)

        def settled() -> bool:
            d = describe(bs, MODERN)
            return d.group_state == "Stable" and all(m.assignment == m.target_assignment for m in d.members)
        wait_until(settled, "the consumer group Stable, its members at their targets")
        yield Site(f"http://127.0.0.1:{port}", bs)
    finally:
        for c in members:
            c.close()
        broker.stop()
    assert "Traceback" not in broker.log_text(), broker.log_text()


def _owned(site: Site) -> tuple[object, dict[str, list[int]]]:
    d = describe(site.bootstrap, MODERN)
    return d, {m.client_id: sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions)
               for m in d.members}


def test_groups_page_lists_a_consumer_group_beside_a_classic_one_with_type_epoch_members_and_lag(site):
    page = get(site.url + "/groups")
    d, owned = _owned(site)
    lag = len(owned["reader-a"]) * (PER_PARTITION - COMMITTED)
    assert cells(page, "groups") == [
        [CLASSIC, "classic", "Empty", "-", "-", "0", "1", "0"],
        [MODERN, "consumer", "Stable", "consumer", str(d.group_epoch), "2", str(len(owned["reader-a"])), str(lag)]]
    ids = {m.client_id: m.member_id for m in d.members}
    assert sorted(cells(page, "group-members")) == sorted(
        [MODERN, ids[name], name, "/127.0.0.1", str(d.group_epoch), ", ".join(f"{TOPIC}-{p}" for p in parts)]
        for name, parts in owned.items())


def test_a_consumer_groups_page_shows_its_epochs_and_each_members_epoch_and_target(site):
    page = get(f"{site.url}/groups/{MODERN}")
    d, owned = _owned(site)
    summary = dict((r[0], r[1]) for r in cells(page, "group-summary"))
    assert summary == {"Type": "consumer", "State": "Stable", "Protocol": "consumer / uniform",
                       "Group epoch": str(d.group_epoch), "Target assignment epoch": str(d.assignment_epoch),
                       "Members": "2", "Total lag": str(len(owned["reader-a"]) * (PER_PARTITION - COMMITTED))}
    ids = {m.client_id: m.member_id for m in d.members}
    for row in cells(page, "members"):
        parts = ", ".join(f"{TOPIC}-{p}" for p in owned[row[2]])
        assert row == [ids[row[2]], "-", row[2], "/127.0.0.1", parts, str(d.group_epoch), parts]
    offsets = cells(page, "offsets")
    assert [r[:2] for r in offsets] == [[TOPIC, "0"], [TOPIC, "1"], [TOPIC, "2"]]
    for r in offsets:   # every partition named by its owner; a's committed with its lag
        owner = "reader-a" if int(r[1]) in owned["reader-a"] else "reader-b"
        committed = [str(COMMITTED), str(PER_PARTITION), str(PER_PARTITION - COMMITTED)] if owner == "reader-a" \
            else ["-", str(PER_PARTITION), "-"]
        assert r[2:] == committed + [ids[owner], "/127.0.0.1", owner]
    classic = get(f"{site.url}/groups/{CLASSIC}")
    assert dict((r[0], r[1]) for r in cells(classic, "group-summary"))["Type"] == "classic"
