"""Committed offsets of a deleted topic leave every group (Kafka's
GroupCoordinator.onPartitionsDeleted): a topic created again under the same name starts
with no committed offset (OffsetFetch answers -1), the group's offsets listing and
``kbroker consumer-groups --describe`` no longer show it, and a restart does not bring them
back (their tombstones are in ``__consumer_offsets`` and replayed)."""

from __future__ import annotations

from confluent_kafka import OFFSET_INVALID, Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess
from tests.tools.helpers import kbroker

DEADLINE_S = 60.0


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def committed(bootstrap: str, group: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return {(tp.topic, tp.partition): tp.offset
                for tp in c.committed([TopicPartition(t, p) for t, p in partitions], timeout=DEADLINE_S)}
    finally:
        c.close()


def listed(admin: AdminClient, group: str) -> dict[tuple[str, int], int]:
    """Admin listConsumerGroupOffsets of every committed partition (OffsetFetch, topics null)."""
    [future] = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values()
    return {(tp.topic, tp.partition): tp.offset for tp in future.result(DEADLINE_S).topic_partitions}


def describe_rows(bootstrap: str, group: str) -> list[list[str]]:
    r = kbroker("consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group)
    assert r.rc == 0, r
    return [line.split() for line in r.out.splitlines()[2:] if line.strip()]


def test_a_deleted_topics_committed_offsets_are_gone_for_every_group_also_after_a_restart(tmp_path):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        b = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": b})
        for name, n in (("gone", 2), ("kept", 1)):
            assert admin.create_topics([NewTopic(name, n, 1)])[name].result(DEADLINE_S) is None
        commit(b, "g", {("gone", 0): 5, ("gone", 1): 7, ("kept", 0): 3})
        commit(b, "h", {("gone", 1): 2})
        assert listed(admin, "g") == {("gone", 0): 5, ("gone", 1): 7, ("kept", 0): 3}

        assert admin.delete_topics(["gone"])["gone"].result(DEADLINE_S) is None
        assert admin.create_topics([NewTopic("gone", 2, 1)])["gone"].result(DEADLINE_S) is None

        def check() -> None:
            assert committed(b, "g", [("gone", 0), ("gone", 1), ("kept", 0)]) == {
                ("gone", 0): OFFSET_INVALID, ("gone", 1): OFFSET_INVALID, ("kept", 0): 3}
            assert committed(b, "h", [("gone", 1)]) == {("gone", 1): OFFSET_INVALID}
            assert listed(admin, "g") == {("kept", 0): 3}
            assert [row[1:4] for row in describe_rows(b, "g")] == [["kept", "0", "3"]]

        check()
        assert broker.wait_for_output(lambda lines: any(
            "Removed 3 offsets associated with deleted partitions of gone" in line for line in lines), DEADLINE_S)
        broker.restart()
        check()
    finally:
        broker.stop()
