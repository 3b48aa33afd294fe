"""Consumer groups with kafka-python 3 against a real broker process: queue semantics under
three assignors, broadcast to two groups, committed offsets with metadata and the resume
point they set, and the admin group calls (list, describe, list offsets, delete offsets,
delete group).

Every record is produced with key == value == its index, and the producer's acks say where
it landed; consumers must hand back exactly those (partition, offset, key, value)."""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.structs import OffsetAndMetadata

from tests.support.py_clients_workload import watchdog  # noqa: F401  (fixture, used via pytestmark)

pytestmark = pytest.mark.usefixtures("watchdog")

TOPIC = "kp-orders"
PARTITIONS = 6
ASSIGNORS = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
             "cooperative-sticky": CooperativeStickyAssignor}


class Hit(NamedTuple):
    member: str
    partition: int
    offset: int
    key: bytes
    value: bytes


def _admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15_000)


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = _admin(bootstrap)
    try:
        created = admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1}},
                                      wait_for_metadata=True)
        assert [(t["name"], t["error_code"]) for t in created["topics"]] == [(topic, 0)]
    finally:
        admin.close()


def _produce(bootstrap: str, n: int, topic: str = TOPIC, partitioner=None) -> dict[int, tuple[int, int]]:
    """Records 0..n-1 (key == value == str(i)); returns i -> (partition, offset) from the acks."""
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, request_timeout_ms=30_000)
    try:
        futures = [p.send(topic, key=str(i).encode(), value=str(i).encode(),
                          partition=None if partitioner is None else partitioner(i))
                   for i in range(n)]
        p.flush(30)
        acks = {}
        for i, f in enumerate(futures):
            md = f.get(timeout=30)
            acks[i] = (md.partition, md.offset)
        return acks
    finally:
        p.close(timeout=10)


def _new_consumer(bootstrap: str, group: str, name: str, *topics: str, **extra) -> KafkaConsumer:
    """A group consumer subscribed to ``topics`` once it knows their partitions.

    kafka-python 3.0.12 can strand a member when it joins before it has the topic's
    metadata: as leader it assigns nothing, the metadata then arrives and starts a second
    join; if poll()'s timeout interrupts that join, its own assignment makes need_rejoin()
    false again and the finished join is never collected (state stays REBALANCING, no
    heartbeats, no fetches, every request answered).  Learning the partitions first
    keeps the first assignment complete."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=name,
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      session_timeout_ms=10_000, heartbeat_interval_ms=500,
                      request_timeout_ms=30_000, **extra)
    deadline = time.monotonic() + 15
    for t in topics:
        while not c.partitions_for_topic(t) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.partitions_for_topic(t), f"no metadata for {t}"
    if topics:
        c.subscribe(list(topics))
    return c


def _consume_in_group(bootstrap: str, group: str, members: int, expect: int, *, topic: str = TOPIC,
                      produce=None, partitions: int = PARTITIONS, extra=None, timeout_s: float = 45,
                      ) -> tuple[list[Hit], dict[str, frozenset[int]]]:
    """Run ``members`` subscribed consumers of ``group`` until ``expect`` distinct values arrived.

    Returns every record seen (duplicates included) and the members' shares of the
    partitions as they stood when the records were produced.  With ``produce``, the records
    are written only once every member holds a non-empty, disjoint share of all
    ``partitions`` and the shares have been still for a second, so the first generation (one
    member, everything assigned) cannot drain the topic before the others join.  Records
    arriving after the last expected value are not recorded: once the first member closes,
    the others legitimately re-read its partitions (nothing is committed)."""
    hits: list[Hit] = []
    values: set[bytes] = set()
    lock = threading.Lock()
    done = threading.Event()
    assignments: dict[str, frozenset[int]] = {}
    errors: list[BaseException] = []
    deadline = time.monotonic() + timeout_s

    def run(name: str) -> None:
        try:
            c = _new_consumer(bootstrap, group, name, topic, **(extra or {}))
        except BaseException as e:  # surfaced by the caller
            errors.append(e)
            return
        try:
            while not done.is_set() and time.monotonic() < deadline:
                batch = c.poll(timeout_ms=200)
                with lock:
                    if done.is_set():
                        break
                    for tp, recs in batch.items():
                        for r in recs:
                            hits.append(Hit(name, tp.partition, r.offset, r.key, r.value))
                            values.add(r.value)
                    assignments[name] = frozenset(tp.partition for tp in c.assignment())
                    if len(values) >= expect:
                        done.set()
        except BaseException as e:
            errors.append(e)
        finally:
            c.close(autocommit=False, timeout_ms=10_000)

    threads = [threading.Thread(target=run, args=(f"m{i}",)) for i in range(members)]
    for t in threads:
        t.start()
    try:
        settled: dict[str, frozenset[int]] = {}
        if produce is not None:
            settled = _wait_for_a_settled_split(assignments, lock, members, partitions, deadline)
            produce()
    finally:
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()) + 20)
        done.set()
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a consumer did not stop"
    return hits, settled


def _wait_for_a_settled_split(assignments: dict[str, frozenset[int]], lock: threading.Lock,
                              members: int, partitions: int, deadline: float) -> dict[str, frozenset[int]]:
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        with lock:
            shares = dict(assignments)
        if shares != last:
            last, since = shares, time.monotonic()
        split = (len(shares) == members and all(shares.values())
                 and sum(len(s) for s in shares.values()) == partitions
                 and frozenset().union(*shares.values()) == frozenset(range(partitions)))
        if split and time.monotonic() - since >= 1.0:
            return shares
        time.sleep(0.05)
    raise AssertionError(f"the group never settled on a split of {partitions} partitions: {last}")


def _assert_exactly_once(hits: list[Hit], acks: dict[int, tuple[int, int]]) -> None:
    """Each produced record arrived once, at the partition and offset its ack named."""
    got = sorted((int(h.value), h.partition, h.offset) for h in hits)
    assert got == sorted((i, p, o) for i, (p, o) in acks.items())
    assert all(h.key == h.value for h in hits)


# the shares of 6 partitions each assignor must produce for 3 fresh members, whoever gets which
EXPECTED_SHARES = {
    "range": {frozenset({0, 1}), frozenset({2, 3}), frozenset({4, 5})},
    "roundrobin": {frozenset({0, 3}), frozenset({1, 4}), frozenset({2, 5})},
}


@pytest.mark.parametrize("assignor", list(ASSIGNORS))
def test_three_members_of_one_group_split_every_record_between_them(broker, assignor):
    _create_topic(broker.bootstrap, TOPIC, PARTITIONS)
    acks: dict[int, tuple[int, int]] = {}
    hits, settled = _consume_in_group(
        broker.bootstrap, f"kp-queue-{assignor}", 3, 3000,
        produce=lambda: acks.update(_produce(broker.bootstrap, 3000)),
        extra={"partition_assignment_strategy": [ASSIGNORS[assignor]]})
    _assert_exactly_once(hits, acks)
    shares = set(settled.values())
    assert all(len(s) == 2 for s in shares), settled
    if assignor in EXPECTED_SHARES:
        assert shares == EXPECTED_SHARES[assignor]
    # every member read, and each partition was read only by the member it was assigned to
    owners: dict[int, set[str]] = {}
    for h in hits:
        owners.setdefault(h.partition, set()).add(h.member)
    assert owners == {p: {m} for m, share in settled.items() for p in share}
    assert {m for o in owners.values() for m in o} == {"m0", "m1", "m2"}


def test_two_groups_consuming_at_once_each_receive_every_record(broker):
    _create_topic(broker.bootstrap, TOPIC, PARTITIONS)
    acks = _produce(broker.bootstrap, 2000)
    assert {p for p, _ in acks.values()} == set(range(PARTITIONS))
    results: dict[str, list[Hit]] = {}
    errors: list[BaseException] = []

    def group(name: str) -> None:
        try:
            results[name], _ = _consume_in_group(broker.bootstrap, name, 1, 2000)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=group, args=(g,)) for g in ("kp-bc-a", "kp-bc-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not errors, errors
    assert sorted(results) == ["kp-bc-a", "kp-bc-b"]
    for hits in results.values():
        _assert_exactly_once(hits, acks)


def _wait_for_assignment(c: KafkaConsumer, want: set[TopicPartition], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while c.assignment() != want and time.monotonic() < deadline:
        c.poll(timeout_ms=200, max_records=1)  # joins the group; records, if any, are not kept
    assert c.assignment() == want


def test_committed_offsets_and_metadata_read_back_exactly_and_a_new_member_resumes_there(broker):
    topic = "kp-ledger"
    _create_topic(broker.bootstrap, topic, 2)
    acks = _produce(broker.bootstrap, 100, topic, partitioner=lambda i: i % 2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    assert sorted(o for p, o in acks.values() if p == 0) == list(range(50))

    first = _new_consumer(broker.bootstrap, "kp-resume", "first", topic, max_poll_records=1)
    try:
        _wait_for_assignment(first, {tp0, tp1})
        first.commit({tp0: OffsetAndMetadata(17, "checkpoint-17", -1),
                      tp1: OffsetAndMetadata(23, "", -1)}, timeout_ms=15_000)
    finally:
        first.close(autocommit=False)

    second = _new_consumer(broker.bootstrap, "kp-resume", "second", topic)
    try:
        assert second.committed(tp0, metadata=True, timeout_ms=15_000) == \
            OffsetAndMetadata(17, "checkpoint-17", -1)
        assert second.committed(tp1, metadata=True, timeout_ms=15_000) == OffsetAndMetadata(23, "", -1)
        got: dict[int, list[tuple[int, bytes]]] = {0: [], 1: []}
        deadline = time.monotonic() + 30
        while sum(map(len, got.values())) < (50 - 17) + (50 - 23) and time.monotonic() < deadline:
            for tp, recs in second.poll(timeout_ms=200).items():
                got[tp.partition].extend((r.offset, r.value) for r in recs)
    finally:
        second.close(autocommit=False)
    # the first record of each partition is the committed offset, and nothing is missing after it
    assert got[0] == [(o, str(2 * o).encode()) for o in range(17, 50)]
    assert got[1] == [(o, str(2 * o + 1).encode()) for o in range(23, 50)]

    other = _new_consumer(broker.bootstrap, "kp-never-committed", "other")
    try:
        assert other.committed(tp0, timeout_ms=15_000) is None
    finally:
        other.close(autocommit=False)


def test_the_admin_client_lists_describes_and_deletes_a_group_and_its_offsets(broker):
    topic = "kp-admin"
    _create_topic(broker.bootstrap, topic, 2)
    _produce(broker.bootstrap, 10, topic, partitioner=lambda i: 0 if i < 6 else 1)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    admin = _admin(broker.bootstrap)
    try:
        c = _new_consumer(broker.bootstrap, "kp-admin-g", "admin-member", topic)
        try:
            seen = 0
            deadline = time.monotonic() + 30
            while seen < 10 and time.monotonic() < deadline:
                seen += sum(len(r) for r in c.poll(timeout_ms=200).values())
            assert seen == 10 and c.assignment() == {tp0, tp1}
            c.commit()  # the consumed positions: 6 and 4

            # while the member is active
            assert admin.list_groups() == [
                {"group_id": "kp-admin-g", "protocol_type": "consumer", "group_state": "Stable",
                 "group_type": "classic"}]   # ListGroups v5 (Kafka 4) names the type
            desc = admin.describe_groups(["kp-admin-g"])["kp-admin-g"]
            assert (desc["error"], desc["group_state"], desc["protocol_type"], desc["protocol_data"]) == \
                (None, "Stable", "consumer", "range")
            [member] = desc["members"]
            assert (member["client_id"], member["client_host"]) == ("admin-member", "/127.0.0.1")
            assert member["member_assignment"]["assigned_partitions"] == [{"topic": topic, "partitions": [0, 1]}]
            assert member["member_metadata"]["topics"] == [topic]
            # a group with a member can lose neither itself nor the offsets of a topic it reads
            assert admin.delete_groups(["kp-admin-g"]) == {"kp-admin-g": "NonEmptyGroupError"}
            deleted = admin.delete_group_offsets("kp-admin-g", [tp1])
            assert {tp: e.__name__ for tp, e in deleted.items()} == {tp1: "GroupSubscribedToTopicError"}
        finally:
            c.close(autocommit=False)

        # after the only member left
        desc = admin.describe_groups(["kp-admin-g"])["kp-admin-g"]
        assert (desc["error"], desc["group_state"], desc["protocol_type"], desc["protocol_data"],
                desc["members"]) == (None, "Empty", "consumer", "", [])
        assert admin.list_groups() == [
            {"group_id": "kp-admin-g", "protocol_type": "consumer", "group_state": "Empty", "group_type": "classic"}]
        offsets = admin.list_group_offsets("kp-admin-g")
        assert {tp: (o.offset, o.metadata) for tp, o in offsets["kp-admin-g"].items()} == \
            {tp0: (6, ""), tp1: (4, "")}
        deleted = admin.delete_group_offsets("kp-admin-g", [tp1])
        assert {tp: e.__name__ for tp, e in deleted.items()} == {tp1: "NoError"}
        offsets = admin.list_group_offsets("kp-admin-g")
        assert {tp: o.offset for tp, o in offsets["kp-admin-g"].items()} == {tp0: 6}

        assert admin.delete_groups(["kp-admin-g"]) == {"kp-admin-g": "OK"}
        assert admin.list_groups() == []
        assert admin.list_group_offsets("kp-admin-g") == {"kp-admin-g": {}}
        desc = admin.describe_groups(["kp-admin-g"])["kp-admin-g"]
        assert (desc["error"], desc["group_state"], desc["members"]) == (None, "Dead", [])
        assert admin.delete_groups(["kp-admin-g"]) == {"kp-admin-g": "GroupIdNotFoundError"}
    finally:
        admin.close()


# Kafka without an authorizer answers every operation a GROUP supports (AuthHelper.
# authorizedOperations -> AclEntry.supportedOperations(GROUP)); older brokers had no
# DESCRIBE_CONFIGS/ALTER_CONFIGS on groups.
GROUP_OPERATIONS = ({"READ", "DESCRIBE", "DELETE"},
                    {"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"})


def test_describing_a_group_with_authorized_operations_lists_what_may_be_done_to_it(broker):
    _create_topic(broker.bootstrap, "kp-ops", 1)
    c = _new_consumer(broker.bootstrap, "kp-ops-g", "ops-member", "kp-ops")
    admin = _admin(broker.bootstrap)
    try:
        _wait_for_assignment(c, {TopicPartition("kp-ops", 0)})
        desc = admin.describe_groups(["kp-ops-g"])["kp-ops-g"]  # kafka-python always asks for them
        assert desc["group_state"] == "Stable"
        assert set(desc["authorized_operations"] or ()) in GROUP_OPERATIONS, desc
    finally:
        admin.close()
        c.close(autocommit=False)
