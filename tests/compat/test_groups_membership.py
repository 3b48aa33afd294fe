"""Group membership changes with confluent-kafka against a real broker process: members
joining and leaving mid-stream, a member that stops heartbeating, and a static member that
restarts within its session timeout."""

from __future__ import annotations

import os
import signal
import threading
import time
from itertools import pairwise

import pytest
from confluent_kafka import Consumer, Producer

from tests.compat.group_helpers import create_topic, produce_numbers, wait_for_a_settled_split
from tests.compat.group_member import MemberProcess

TOPIC = "clicks"


@pytest.fixture
def six_partitions(broker_factory):
    b = broker_factory(**{"num.partitions": "6"})
    create_topic(b.bootstrap, TOPIC, 6)
    return b


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_a_member_joining_and_another_leaving_mid_stream_lose_no_record(six_partitions, assignor):
    bootstrap, n = six_partitions.bootstrap, 60_000
    lock = threading.Lock()
    # per partition, the (member, offset, value) reads in the order they happened
    reads: dict[int, list[tuple[str, int, int]]] = {}
    values: set[int] = set()
    assignments: dict[str, frozenset[int]] = {}
    rebalances = [0]  # assignment changes seen by any member
    all_read = threading.Event()

    def member(name: str, stop: threading.Event) -> None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{assignor}",
                      "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                      "heartbeat.interval.ms": 500, "auto.commit.interval.ms": 200,
                      "partition.assignment.strategy": assignor})
        c.subscribe([TOPIC])
        deadline = time.time() + 90
        while not stop.is_set() and not all_read.is_set() and time.time() < deadline:
            m = c.poll(0.1)
            with lock:
                if m is not None and m.error() is None:
                    reads.setdefault(m.partition(), []).append((name, m.offset(), int(m.value())))
                    values.add(int(m.value()))
                    if len(values) == n:
                        all_read.set()
                share = frozenset(tp.partition for tp in c.assignment())
                if assignments.get(name) != share:
                    assignments[name] = share
                    rebalances[0] += 1
        c.close()
        with lock:
            assignments.pop(name, None)

    stops = {f"m{i}": threading.Event() for i in range(4)}
    threads = {name: threading.Thread(target=member, args=(name, ev)) for name, ev in stops.items()}
    for name in ("m0", "m1", "m2"):
        threads[name].start()
    wait_for_a_settled_split(assignments, lock, 3, 6, 60)

    def produce() -> None:  # paced over ~6 s so that joins and leaves land mid-stream
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for start in range(0, n, 1000):
            for i in range(start, start + 1000):
                p.produce(TOPIC, key=str(i).encode(), value=str(i).encode())
            p.poll(0)
            time.sleep(0.1)
        assert p.flush(30) == 0

    producer = threading.Thread(target=produce)
    producer.start()

    def wait(cond, what: str, timeout_s: float = 60) -> None:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            with lock:
                if cond():
                    return
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}: {len(values)} read, {assignments}")

    wait(lambda: len(values) >= n // 5, "a fifth of the records")
    threads["m3"].start()
    wait(lambda: assignments.get("m3"), "the fourth member's first partitions")
    read_when_m0_left = len(values)
    stops["m0"].set()
    threads["m0"].join(30)
    producer.join(60)
    wait(lambda: len(values) == n, "every record", 90)
    all_read.set()
    for t in threads.values():
        t.join(30)

    assert values == set(range(n))
    assert read_when_m0_left < n, "m0 left after the stream had ended"
    readers = {name for rs in reads.values() for name, _, _ in rs}
    assert readers == {"m0", "m1", "m2", "m3"}
    restarts = 0
    for part, rs in reads.items():
        # Within a partition, each read follows the previous one (offset + 1); anything
        # else must be a step back to a committed offset after a rebalance, never a skip.
        for (_, prev, _), (_, off, _) in pairwise(rs):
            if off != prev + 1:
                assert off <= prev, f"partition {part} skipped from {prev} to {off}"
                restarts += 1
    assert restarts <= rebalances[0], (restarts, rebalances[0])
    duplicates = sum(len(rs) for rs in reads.values()) - n
    assert duplicates >= 0


def test_a_member_that_stops_heartbeating_loses_its_partitions_after_the_session_timeout(six_partitions):
    b = six_partitions
    config = {"session.timeout.ms": "6000", "heartbeat.interval.ms": "500"}
    frozen = MemberProcess(b.bootstrap, "hb", TOPIC, **config)
    survivor = MemberProcess(b.bootstrap, "hb", TOPIC, **config)
    try:
        for m in (frozen, survivor):
            m.wait_for(lambda m: len(m.assignment()) == 3, 60)
        os.kill(frozen.proc.pid, signal.SIGSTOP)  # alive, connected, silent
        stopped = time.monotonic()
        survivor.wait_for(lambda m: len(m.assignment()) == 6, 40)
        took_over = survivor.assignments[-1][0]
        # Kafka expires the member session.timeout.ms after its last heartbeat (at most one
        # heartbeat interval before the freeze); the survivor then rejoins.
        assert took_over - stopped >= 6.0 - 0.5 - 0.3, took_over - stopped
        produce_numbers(b.bootstrap, 600, TOPIC)
        survivor.wait_for(lambda m: len({v for _, _, v in m.records}) == 600, 30)
        assert sorted({p for p, _, _ in survivor.records}) == list(range(6))
        assert frozen.records == []
    finally:
        frozen.kill()
        survivor.close()


def test_a_static_member_restarted_within_its_session_timeout_gets_its_partitions_back_without_a_rebalance(
        six_partitions):
    b = six_partitions
    config = {"session.timeout.ms": "15000", "heartbeat.interval.ms": "500"}
    a = MemberProcess(b.bootstrap, "static", TOPIC, **{"group.instance.id": "a", **config})
    other = MemberProcess(b.bootstrap, "static", TOPIC, **{"group.instance.id": "b", **config})
    restarted = None
    try:
        for m in (a, other):
            m.wait_for(lambda m: len(m.assignment()) == 3, 60)
        time.sleep(1.5)  # let any follow-up rebalance of the first join show itself
        mine, callbacks_before = a.assignment(), list(other.callbacks)
        a.close()  # a static member leaves no LeaveGroup behind (KIP-345)
        restarted = MemberProcess(b.bootstrap, "static", TOPIC, **{"group.instance.id": "a", **config})
        restarted.wait_for(lambda m: len(m.assignment()) == 3, 30)
        assert restarted.assignment() == mine
        time.sleep(2)  # several heartbeat intervals: a rebalance would reach the other member
        assert other.callbacks == callbacks_before
        assert len(other.assignment()) == 3
    finally:
        for m in (a, other, restarted):
            if m is not None:
                m.close()
