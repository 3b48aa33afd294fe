"""Consumer groups with confluent-kafka against a real broker process: queue and broadcast
semantics, committed offsets across restarts, the admin API, and the records kept in
__consumer_offsets."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from groups.records import decode_key, decode_value
from tests.support.broker_process import BrokerProcess
from tests.support.group_helpers import create_topic, produce_numbers, wait_for_a_settled_split
from wire.messages import OffsetCommitKey, OffsetCommitValue
from wire.record_batch import iter_batches

TOPIC = "clicks"


def _consume_in_group(bootstrap: str, group: str, members: int, expect: int, *, topic: str = TOPIC,
                      produce: Callable[[], None] | None = None, partitions: int = 6, extra=None,
                      timeout_s: float = 60) -> dict[int, list[tuple[str, int]]]:
    """Run ``members`` subscribed consumers until ``expect`` distinct values arrived.

    With ``produce``, the records are written only once every member holds a non-empty,
    disjoint share of all ``partitions`` and the shares have been still for a second: the
    tests that check how a group splits a topic must not let the first generation (one
    member, everything assigned) drain the topic before the others have joined."""
    seen: dict[int, list[tuple[str, int]]] = {}
    lock = threading.Lock()
    assignments: dict[str, frozenset[int]] = {}

    def run(name: str) -> None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "session.timeout.ms": 10000, **(extra or {})})
        c.subscribe([topic])
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            m = c.poll(0.2)
            with lock:
                if m is not None and m.error() is None:
                    seen.setdefault(int(m.value()), []).append((name, m.partition()))
                assignments[name] = frozenset(tp.partition for tp in c.assignment())
                if len(seen) >= expect:
                    break
        c.close()

    threads = [threading.Thread(target=run, args=(f"m{i}",)) for i in range(members)]
    for t in threads:
        t.start()
    if produce is not None:
        wait_for_a_settled_split(assignments, lock, members, partitions, timeout_s)
        produce()
    for t in threads:
        t.join(timeout_s + 20)
    return seen


@pytest.fixture
def six_partitions(broker_factory):
    return broker_factory(**{"num.partitions": "6"})


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_three_members_of_one_group_share_every_record_of_a_six_partition_topic(six_partitions, assignor):
    b = six_partitions
    create_topic(b.bootstrap, TOPIC, 6)
    seen = _consume_in_group(b.bootstrap, f"queue-{assignor}", 3, 6000,
                             produce=lambda: produce_numbers(b.bootstrap, 6000),
                             extra={"partition.assignment.strategy": assignor})
    assert sorted(seen) == list(range(6000))
    by_member = Counter(name for hits in seen.values() for name, _ in hits)
    assert set(by_member) == {"m0", "m1", "m2"}
    # each partition was read by exactly one member (no rebalance happened mid-stream)
    owners: dict[int, set[str]] = {}
    for hits in seen.values():
        for name, part in hits:
            owners.setdefault(part, set()).add(name)
    assert sorted(owners) == list(range(6)) and all(len(o) == 1 for o in owners.values())


def test_two_groups_each_receive_every_record_and_one_group_of_two_splits_them(six_partitions):
    b = six_partitions
    produce_numbers(b.bootstrap, 3000)
    broadcast_a = _consume_in_group(b.bootstrap, "ga", 1, 3000)
    broadcast_b = _consume_in_group(b.bootstrap, "gb", 1, 3000)
    create_topic(b.bootstrap, "jobs", 6)
    queue = _consume_in_group(b.bootstrap, "gq", 2, 3000, topic="jobs",
                              produce=lambda: produce_numbers(b.bootstrap, 3000, "jobs"))
    assert sorted(broadcast_a) == sorted(broadcast_b) == sorted(queue) == list(range(3000))
    assert all(len(v) == 1 for v in queue.values())
    assert len({name for hits in queue.values() for name, _ in hits}) == 2


@pytest.mark.parametrize("clean", [True, False], ids=["sigterm", "kill-9"])
def test_committed_offsets_and_metadata_survive_a_broker_restart(tmp_path, clean):
    b = BrokerProcess(tmp_path / "data", overrides={"num.partitions": "2"}).start()
    try:
        produce_numbers(b.bootstrap, 100)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "resume", "enable.auto.commit": False})
        offsets = [TopicPartition(TOPIC, 0, 17, metadata="checkpoint-17"), TopicPartition(TOPIC, 1, 23)]
        committed = c.commit(offsets=offsets, asynchronous=False)
        assert [(t.partition, t.offset, t.error) for t in committed] == [(0, 17, None), (1, 23, None)]
        c.close()
        b.restart(clean=clean)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "resume", "enable.auto.commit": False})
        got = c.committed([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)], timeout=15)
        assert [(t.partition, t.offset) for t in got] == [(0, 17), (1, 23)]
        assert got[0].metadata == "checkpoint-17"
        c.subscribe([TOPIC])
        first: dict[int, int] = {}
        deadline = time.time() + 30
        while len(first) < 2 and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                first.setdefault(m.partition(), m.offset())
        c.close()
        assert first == {0: 17, 1: 23}
    finally:
        b.stop()


def test_the_admin_api_lists_describes_and_deletes_groups_and_lists_their_offsets(broker):
    produce_numbers(broker.bootstrap, 10)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "admin-g", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(TOPIC, 0, 7)], asynchronous=False)
    c.close()
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = a.list_consumer_groups().result(15)
    assert [g.group_id for g in listed.valid] == ["admin-g"]
    described = a.describe_consumer_groups(["admin-g"])["admin-g"].result(15)
    assert (described.group_id, described.state.name, described.members) == ("admin-g", "EMPTY", [])
    from confluent_kafka import ConsumerGroupTopicPartitions
    offsets = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions("admin-g")])["admin-g"].result(15)
    assert [(t.topic, t.partition, t.offset) for t in offsets.topic_partitions] == [(TOPIC, 0, 7)]
    a.delete_consumer_groups(["admin-g"])["admin-g"].result(15)
    assert a.list_consumer_groups().result(15).valid == []


def test_records_in_consumer_offsets_decode_with_kafkas_coordinator_record_schemas(broker):
    produce_numbers(broker.bootstrap, 5)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "rec-g", "enable.auto.commit": False})
    tp = TopicPartition(TOPIC, 0, 3, metadata="m")
    c.commit(offsets=[tp], asynchronous=False)
    c.close()
    broker.stop()
    found = []
    for seg in sorted(broker.data_dir.glob("__consumer_offsets-*/*.log")):
        for batch in iter_batches(seg.read_bytes()):
            assert batch.is_crc_valid()
            for rec in batch.records():
                key = decode_key(rec.key)
                if isinstance(key, OffsetCommitKey):
                    found.append((key, decode_value(key, rec.value)))
    broker.start()
    assert len(found) == 1
    key, value = found[0]
    assert (key.group, key.topic, key.partition) == ("rec-g", TOPIC, 0)
    # confluent-kafka-python 2.x sends the metadata C string with its NUL terminator (and
    # strips it again when reading); the broker stores exactly the bytes it was sent.
    assert isinstance(value, OffsetCommitValue) and value.offset == 3
    assert value.metadata in ("m", "m\x00")
