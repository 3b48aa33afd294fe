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

from tests.support.group_helpers import create_topic, produce_numbers, wait_for_a_settled_split
from tests.support.group_member import MemberProcess

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
    # per partition, every offset a member's commit (auto or on revoke) stored, from on_commit
    committed: dict[int, set[int]] = {}
    all_read = threading.Event()
    m0_left = threading.Event()

    def on_commit(err, tps) -> None:
        with lock:
            for tp in tps:
                if err is None and tp.error is None and tp.offset >= 0:
                    committed.setdefault(tp.partition, set()).add(tp.offset)

    def member(name: str, stop: threading.Event) -> None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{assignor}",
                      "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                      "heartbeat.interval.ms": 500, "auto.commit.interval.ms": 200,
                      "partition.assignment.strategy": assignor, "on_commit": on_commit})
        c.subscribe([TOPIC])
        deadline = time.time() + 240  # a safety net only: members end on all_read or stop
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
    produce_errors: list[BaseException] = []

    def produce() -> None:
        # Paced (~0.1 s per 1000) so that reads interleave with the writes; the second half
        # waits until m0 has left, so m3's join and m0's leave land mid-stream however slowly
        # the machine runs.
        try:
            p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
            for start in range(0, n, 1000):
                if start == n // 2 and not m0_left.wait(120):
                    raise AssertionError("m0 never left")
                for i in range(start, start + 1000):
                    p.produce(TOPIC, key=str(i).encode(), value=str(i).encode())
                p.poll(0)
                time.sleep(0.1)  # pacing only: nothing waits on it
            assert p.flush(60) == 0
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            produce_errors.append(e)

    producer = threading.Thread(target=produce)

    def wait(cond, what: str, timeout_s: float = 60) -> None:
        deadline = time.time() + timeout_s
        while time.time() < deadline and not produce_errors:
            with lock:
                if cond():
                    return
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}: {len(values)} read, {assignments}, "
                             f"producer errors {produce_errors}")

    try:
        for name in ("m0", "m1", "m2"):
            threads[name].start()
        wait_for_a_settled_split(assignments, lock, 3, 6, 60)
        producer.start()
        wait(lambda: len(values) >= n // 5, "a fifth of the records")
        threads["m3"].start()
        wait(lambda: assignments.get("m3"), "the fourth member's first partitions")
        read_when_m0_left = len(values)
        stops["m0"].set()
        threads["m0"].join(60)
        m0_left.set()
        producer.join(120)
        assert not produce_errors, produce_errors
        wait(lambda: len(values) == n, "every record", 90)
    finally:  # members and producer end even when the test fails
        all_read.set()
        m0_left.set()
        for t in [*threads.values(), producer]:
            if t.is_alive():
                t.join(60)

    assert values == set(range(n))
    assert read_when_m0_left <= n // 2, "m0 left after the stream's first half had been read"
    readers = {name for rs in reads.values() for name, _, _ in rs}
    assert readers == {"m0", "m1", "m2", "m3"}
    restarts, reread, handovers = 0, 0, 0
    for part, rs in reads.items():
        # Within a partition, each read follows the previous one (offset + 1); anything
        # else must be a step back, after a rebalance, to an offset some member committed
        # for that partition (0: nothing committed yet, auto.offset.reset=earliest), never
        # a skip. A step back from prev to off reads prev + 1 - off records again.
        # A member taking a partition over starts at the offset the group had committed for it.
        assert rs[0][1] in committed.get(part, set()) | {0}, (part, rs[0])
        for (was, prev, _), (now, off, _) in pairwise(rs):
            if now != was:
                handovers += 1
                assert off in committed.get(part, set()) | {0}, \
                    f"partition {part} went from {was} to {now} at {off}, which no member committed"
            if off != prev + 1:
                assert off <= prev, f"partition {part} skipped from {prev} to {off}"
                assert off in committed.get(part, set()) | {0}, \
                    f"partition {part} stepped back from {prev} to {off}, which no member committed"
                restarts += 1
                reread += prev + 1 - off
    assert restarts <= rebalances[0], (restarts, rebalances[0])
    # Every record beyond the n distinct ones is one of those re-reads from a committed offset.
    duplicates = sum(len(rs) for rs in reads.values()) - n
    assert duplicates == reread, (duplicates, reread, restarts)


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
        survivor.wait_for(lambda m: len(m.assignment()) == 6, 60)
        took_over = survivor.assignments[-1][0]
        # Kafka expires the member session.timeout.ms after its last heartbeat (at most one
        # heartbeat interval before the freeze); the survivor then rejoins.
        assert took_over - stopped >= 6.0 - 0.5 - 0.3, took_over - stopped
        produce_numbers(b.bootstrap, 600, TOPIC)
        survivor.wait_for(lambda m: len({v for _, _, v in m.records}) == 600, 60)
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
        _read_a_marker_on_every_partition(b.bootstrap, 1_000_000, [a, other])
        mine, callbacks_before = a.assignment(), list(other.callbacks)
        a.close()  # a static member leaves no LeaveGroup behind (KIP-345)
        restarted = MemberProcess(b.bootstrap, "static", TOPIC, **{"group.instance.id": "a", **config})
        restarted.wait_for(lambda m: len(m.assignment()) == 3, 60)
        assert restarted.assignment() == mine
        # Had the rejoin started a rebalance, the broker would have held the restarted
        # member's JoinGroup until the other member rejoined, and the other member runs its
        # revoke callback before rejoining: so that callback would be printed before anything
        # it reads from now on. Its stdout is ordered, so once it has read a marker produced
        # now, every callback it ran before is in other.callbacks.
        _read_a_marker_on_every_partition(b.bootstrap, 1_000_001, [restarted, other])
        assert other.callbacks == callbacks_before
        assert len(other.assignment()) == 3
    finally:
        for m in (a, other, restarted):
            if m is not None:
                m.close()


def _read_a_marker_on_every_partition(bootstrap: str, marker: int, members: list[MemberProcess]) -> None:
    """Produce ``marker`` to each of the topic's 6 partitions and wait until every member has
    read it on each partition it holds: a barrier on the members' ordered output."""
    p = Producer({"bootstrap.servers": bootstrap})
    for part in range(6):
        p.produce(TOPIC, value=str(marker).encode(), partition=part)
    assert p.flush(60) == 0
    for m in members:
        m.wait_for(lambda m: set(m.assignment()) <= {part for part, _, v in m.records if v == marker}, 60)
