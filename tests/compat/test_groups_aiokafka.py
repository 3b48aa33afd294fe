"""Consumer groups with aiokafka 0.14 against a real broker process: queue semantics under
its three assignors, broadcast to two groups, committed offsets with metadata and the
resume point they set, and the group calls of AIOKafkaAdminClient (list, describe, list
offsets; it has no delete, so DeleteGroups goes through aiokafka's own request class).

Every record is produced with key == value == its index, and the producer's acks say where
it landed; consumers must hand back exactly those (partition, offset, key, value).  Each
test drives one event loop with asyncio.run; every member is a task of that loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import NamedTuple

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.client import AIOKafkaClient
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka.protocol.admin import DeleteGroupsRequest
from aiokafka.structs import OffsetAndMetadata

from tests.support.py_clients_workload import watchdog  # noqa: F401  (fixture, used via pytestmark)

pytestmark = pytest.mark.usefixtures("watchdog")

TOPIC = "aio-orders"
PARTITIONS = 6
ASSIGNORS = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
             "sticky": StickyPartitionAssignor}
GROUP_ID_NOT_FOUND = 69


class Hit(NamedTuple):
    member: str
    partition: int
    offset: int
    key: bytes
    value: bytes


def run(coro, timeout_s: float = 100.0):
    return asyncio.run(asyncio.wait_for(coro, timeout_s))


async def _admin(bootstrap: str) -> AIOKafkaAdminClient:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15_000)
    await admin.start()
    return admin


async def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = await _admin(bootstrap)
    try:
        resp = await admin.create_topics([NewTopic(topic, partitions, 1)])
        assert [(t[0], t[1]) for t in resp.topic_errors] == [(topic, 0)]
    finally:
        await admin.close()


async def _produce(bootstrap: str, n: int, topic: str = TOPIC,
                   partitioner: Callable[[int], int] | None = None) -> dict[int, tuple[int, int]]:
    """Records 0..n-1 (key == value == str(i)); returns i -> (partition, offset) from the acks."""
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, request_timeout_ms=30_000)
    await p.start()
    try:
        futures = [await p.send(topic, key=str(i).encode(), value=str(i).encode(),
                                partition=None if partitioner is None else partitioner(i))
                   for i in range(n)]
        acks = await asyncio.gather(*futures)
        return {i: (md.partition, md.offset) for i, md in enumerate(acks)}
    finally:
        await p.stop()


async def _new_consumer(bootstrap: str, group: str, name: str, *topics: str, **extra) -> AIOKafkaConsumer:
    c = AIOKafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=group, client_id=name,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=10_000, heartbeat_interval_ms=500,
                         request_timeout_ms=30_000, **extra)
    await c.start()
    return c


async def _consume_in_group(bootstrap: str, group: str, members: int, expect: int, *,
                            topic: str = TOPIC, produce: Callable[[], Awaitable[None]] | None = None,
                            partitions: int = PARTITIONS, extra=None, timeout_s: float = 45,
                            ) -> tuple[list[Hit], dict[str, frozenset[int]]]:
    """Run ``members`` subscribed consumers of ``group`` until ``expect`` distinct values arrived.

    Returns every record seen (duplicates included) and the members' shares of the
    partitions as they stood when the records were produced.  With ``produce``, the records
    are written only once every member holds a non-empty, disjoint share of all
    ``partitions`` and the shares have been still for a second, so the first generation (one
    member, everything assigned) cannot drain the topic before the others join.  Records
    arriving after the last expected value are not recorded: once the first member stops,
    the others legitimately re-read its partitions (nothing is committed)."""
    hits: list[Hit] = []
    values: set[bytes] = set()
    done = asyncio.Event()
    assignments: dict[str, frozenset[int]] = {}
    deadline = time.monotonic() + timeout_s

    async def member(name: str) -> None:
        c = await _new_consumer(bootstrap, group, name, topic, **(extra or {}))
        try:
            while not done.is_set() and time.monotonic() < deadline:
                batch = await c.getmany(timeout_ms=200)
                if done.is_set():
                    break
                for tp, recs in batch.items():
                    for r in recs:
                        hits.append(Hit(name, tp.partition, r.offset, r.key, r.value))
                        values.add(r.value)
                assignments[name] = frozenset(tp.partition for tp in c.assignment())
                if len(values) >= expect:
                    done.set()
        finally:
            await c.stop()

    settled: dict[str, frozenset[int]] = {}
    async with asyncio.TaskGroup() as tg:
        for i in range(members):
            tg.create_task(member(f"m{i}"))
        if produce is not None:
            settled = await _wait_for_a_settled_split(assignments, members, partitions, deadline)
            await produce()
    return hits, settled


async def _wait_for_a_settled_split(assignments: dict[str, frozenset[int]], members: int,
                                    partitions: int, deadline: float) -> dict[str, frozenset[int]]:
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        shares = dict(assignments)
        if shares != last:
            last, since = shares, time.monotonic()
        split = (len(shares) == members and all(shares.values())
                 and sum(len(s) for s in shares.values()) == partitions
                 and frozenset().union(*shares.values()) == frozenset(range(partitions)))
        if split and time.monotonic() - since >= 1.0:
            return shares
        await asyncio.sleep(0.05)
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
    acks: dict[int, tuple[int, int]] = {}

    async def produce() -> None:
        acks.update(await _produce(broker.bootstrap, 3000))

    async def scenario():
        await _create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        return await _consume_in_group(
            broker.bootstrap, f"aio-queue-{assignor}", 3, 3000, produce=produce,
            extra={"partition_assignment_strategy": (ASSIGNORS[assignor],)})

    hits, settled = run(scenario())
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
    async def scenario():
        await _create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        acks = await _produce(broker.bootstrap, 2000)
        (a, _), (b, _) = await asyncio.gather(
            _consume_in_group(broker.bootstrap, "aio-bc-a", 1, 2000),
            _consume_in_group(broker.bootstrap, "aio-bc-b", 1, 2000))
        return acks, a, b

    acks, a, b = run(scenario())
    assert {p for p, _ in acks.values()} == set(range(PARTITIONS))
    _assert_exactly_once(a, acks)
    _assert_exactly_once(b, acks)


async def _wait_for_assignment(c: AIOKafkaConsumer, want: set[TopicPartition], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while c.assignment() != want and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert c.assignment() == want


def test_committed_offsets_and_metadata_read_back_exactly_and_a_new_member_resumes_there(broker):
    topic = "aio-ledger"
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)

    async def scenario():
        await _create_topic(broker.bootstrap, topic, 2)
        acks = await _produce(broker.bootstrap, 100, topic, partitioner=lambda i: i % 2)
        assert sorted(o for p, o in acks.values() if p == 0) == list(range(50))

        first = await _new_consumer(broker.bootstrap, "aio-resume", "first", topic)
        try:
            await _wait_for_assignment(first, {tp0, tp1})
            await first.commit({tp0: OffsetAndMetadata(17, "checkpoint-17"), tp1: (23, "")})
        finally:
            await first.stop()

        admin = await _admin(broker.bootstrap)
        try:
            stored = await admin.list_consumer_group_offsets("aio-resume")
        finally:
            await admin.close()

        second = await _new_consumer(broker.bootstrap, "aio-resume", "second", topic)
        got: dict[int, list[tuple[int, bytes]]] = {0: [], 1: []}
        try:
            committed = (await second.committed(tp0), await second.committed(tp1))
            deadline = time.monotonic() + 30
            while sum(map(len, got.values())) < (50 - 17) + (50 - 23) and time.monotonic() < deadline:
                for tp, recs in (await second.getmany(timeout_ms=200)).items():
                    got[tp.partition].extend((r.offset, r.value) for r in recs)
        finally:
            await second.stop()

        other = await _new_consumer(broker.bootstrap, "aio-never-committed", "other")
        try:
            never = await other.committed(tp0)
        finally:
            await other.stop()
        return stored, committed, got, never

    stored, committed, got, never = run(scenario())
    assert stored == {tp0: OffsetAndMetadata(17, "checkpoint-17"), tp1: OffsetAndMetadata(23, "")}
    assert committed == (17, 23)
    # the first record of each partition is the committed offset, and nothing is missing after it
    assert got[0] == [(o, str(2 * o).encode()) for o in range(17, 50)]
    assert got[1] == [(o, str(2 * o + 1).encode()) for o in range(23, 50)]
    assert never is None


def _describe(responses) -> tuple:
    """One group out of ``describe_consumer_groups``' raw DescribeGroups responses.

    aiokafka 0.14 sends DescribeGroups v3 but parses the answer with the v2 schema
    (DescribeGroupsRequest_v3.RESPONSE_TYPE), which drops each group's trailing
    authorized_operations; with one group per call that only loses the last field."""
    [resp] = responses
    [group] = resp.groups
    return group


def test_the_admin_client_lists_and_describes_a_group_and_lists_its_offsets_and_it_can_be_deleted(broker):
    topic = "aio-admin"
    group = "aio-admin-g"
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)

    async def delete_group() -> int:
        client = AIOKafkaClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15_000)
        await client.bootstrap()
        try:
            node = client.get_random_node()
            resp = await client.send(node, DeleteGroupsRequest([group]))
        finally:
            await client.close()
        [(name, code)] = resp.results
        assert name == group
        return code

    async def scenario():
        await _create_topic(broker.bootstrap, topic, 2)
        await _produce(broker.bootstrap, 10, topic, partitioner=lambda i: 0 if i < 6 else 1)
        admin = await _admin(broker.bootstrap)
        out = {}
        try:
            c = await _new_consumer(broker.bootstrap, group, "admin-member", topic)
            try:
                seen = 0
                deadline = time.monotonic() + 30
                while seen < 10 and time.monotonic() < deadline:
                    seen += sum(len(r) for r in (await c.getmany(timeout_ms=200)).values())
                assert seen == 10 and c.assignment() == {tp0, tp1}
                await c.commit()  # the consumed positions: 6 and 4
                out["listed_active"] = await admin.list_consumer_groups()
                out["active"] = _describe(await admin.describe_consumer_groups([group]))
                out["delete_active"] = await delete_group()
            finally:
                await c.stop()
            out["listed_empty"] = await admin.list_consumer_groups()
            out["empty"] = _describe(await admin.describe_consumer_groups([group]))
            out["offsets"] = await admin.list_consumer_group_offsets(group)
            out["offsets_p1"] = await admin.list_consumer_group_offsets(group, partitions=[tp1])
            out["delete_empty"] = await delete_group()
            out["listed_deleted"] = await admin.list_consumer_groups()
            out["offsets_deleted"] = await admin.list_consumer_group_offsets(group)
            out["deleted"] = _describe(await admin.describe_consumer_groups([group]))
            out["delete_again"] = await delete_group()
        finally:
            await admin.close()
        return out

    out = run(scenario())
    # while the member is active
    assert out["listed_active"] == [(group, "consumer")]
    error, name, state, protocol_type, protocol, members = out["active"]
    assert (error, name, state, protocol_type, protocol) == (0, group, "Stable", "consumer", "roundrobin")
    [(member_id, client_id, client_host, metadata, assignment)] = members
    assert (client_id, client_host) == ("admin-member", "/127.0.0.1")
    assert member_id.startswith("admin-member-")
    assert ConsumerProtocolMemberMetadata.decode(metadata).subscription == [topic]
    assert ConsumerProtocolMemberAssignment.decode(assignment).assignment == [(topic, [0, 1])]
    assert out["delete_active"] == 68  # NON_EMPTY_GROUP

    # after the only member left
    assert out["listed_empty"] == [(group, "consumer")]
    assert out["empty"] == (0, group, "Empty", "consumer", "", [])
    assert out["offsets"] == {tp0: OffsetAndMetadata(6, ""), tp1: OffsetAndMetadata(4, "")}
    assert out["offsets_p1"] == {tp1: OffsetAndMetadata(4, "")}

    # after DeleteGroups
    assert out["delete_empty"] == 0
    assert out["listed_deleted"] == []
    assert out["offsets_deleted"] == {}
    assert out["deleted"] == (0, group, "Dead", "", "", [])
    assert out["delete_again"] == GROUP_ID_NOT_FOUND
