"""The group coordinator stores, then answers, against a real broker process.

* A commit whose ``__consumer_offsets`` record is over that topic's ``max.message.bytes``
  (its metadata is within ``offset.metadata.max.bytes``, 4096, so it is the record size that
  fails) answers INVALID_COMMIT_OFFSET_SIZE, as Kafka's ``storeOffsets`` maps
  MESSAGE_TOO_LARGE; the connection stays open, the failed offset is not fetched, a later
  commit on the same connection is stored.  confluent-kafka reports the same error.
* ``__consumer_offsets`` keeps the partition count it was created with: a restart with a
  different ``offsets.topic.num.partitions`` places groups by the topic's real count, so
  commits land where the group's earlier records are and survive another restart.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from groups import partition_for
from kbroker.client import Connection
from tests.support.group_helpers import create_topic
from wire.messages import (
    FindCoordinatorRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)

OFFSETS_TOPIC = "__consumer_offsets"
INVALID_COMMIT_OFFSET_SIZE = 28
COMMIT_V, FETCH_V = 8, 7


def raw_connection(port: int) -> Connection:
    """One connection (no ApiVersions of its own) sending requests at the versions this test
    names and reading their responses in order."""
    return Connection.open("127.0.0.1", port, client_id="store-first", timeout_s=60, negotiate=False)


def commit(raw: Connection, group: str, topic: str, offsets: dict[int, int], metadata: str) -> list[int]:
    req = OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                committed_metadata=metadata)
            for p, o in offsets.items()])])
    resp = raw.call(req, COMMIT_V)
    return [p.error_code for t in resp.topics for p in t.partitions]


def fetch(raw: Connection, group: str, topic: str, partitions: list[int]) -> dict[int, tuple[int, str]]:
    req = OffsetFetchRequest(group_id=group, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)])
    resp = raw.call(req, FETCH_V)
    assert resp.error_code == 0
    return {p.partition_index: (p.committed_offset, p.metadata)
            for t in resp.topics for p in t.partitions}


def find_coordinator(raw: Connection, group: str) -> int:
    resp = raw.call(FindCoordinatorRequest(key=group, key_type=0), 3)
    assert resp.error_code == 0
    return resp.node_id


def offsets_topic_partitions(raw: Connection) -> int:
    resp = raw.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(
        name=OFFSETS_TOPIC)], allow_auto_topic_creation=False), 9)
    [topic] = resp.topics
    assert topic.error_code == 0 and topic.is_internal
    return len(topic.partitions)


def set_topic_config(bootstrap: str, topic: str, name: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    [future] = admin.incremental_alter_configs([res], request_timeout=30).values()
    future.result(60)


def test_a_commit_whose_record_exceeds_max_message_bytes_answers_invalid_commit_offset_size_and_the_connection_stays_open(broker):
    create_topic(broker.bootstrap, "t", 2)
    raw = raw_connection(broker.port)
    try:
        find_coordinator(raw, "g")  # creates __consumer_offsets, as in Kafka
        set_topic_config(broker.bootstrap, OFFSETS_TOPIC, "max.message.bytes", "1024")
        assert commit(raw, "g", "t", {0: 5}, "small") == [0]
        too_big = "m" * 2000  # under offset.metadata.max.bytes, over the topic's record limit
        assert commit(raw, "g", "t", {0: 9, 1: 9}, too_big) == [INVALID_COMMIT_OFFSET_SIZE] * 2
        # Same connection: the failed commit is not visible, the next one is stored.
        assert fetch(raw, "g", "t", [0, 1]) == {0: (5, "small"), 1: (-1, "")}
        assert commit(raw, "g", "t", {1: 7}, "ok") == [0]
        assert fetch(raw, "g", "t", [0, 1]) == {0: (5, "small"), 1: (7, "ok")}
    finally:
        raw.close()

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g",
                  "enable.auto.commit": False})
    try:
        with pytest.raises(KafkaException) as err:
            c.commit(offsets=[TopicPartition("t", 0, 11, metadata="x" * 2000)],
                     asynchronous=False)
        assert err.value.args[0].code() == KafkaError.INVALID_COMMIT_OFFSET_SIZE
        [tp] = c.committed([TopicPartition("t", 0)], timeout=60)
        # Offset only: confluent-kafka's committed() hands metadata back without its end
        # (b"small" came back as "small\x7f"); the raw fetches check the metadata.
        assert tp.offset == 5
    finally:
        c.close()

    broker.restart()  # what was answered with an error is not in the log either
    raw = raw_connection(broker.port)
    try:
        assert fetch(raw, "g", "t", [0, 1]) == {0: (5, "small"), 1: (7, "ok")}
    finally:
        raw.close()


def _groups_beyond(created: int, configured: int, n: int) -> list[str]:
    """Group ids whose partition under ``configured`` partitions differs from the one under
    ``created`` and does not exist in a topic of ``created`` partitions."""
    out = []
    i = 0
    while len(out) < n:
        g = f"grp-{i}"
        if partition_for(g, configured) >= created:
            out.append(g)
        i += 1
    return out


def test_a_restart_with_another_offsets_topic_num_partitions_keeps_placing_groups_by_the_topics_real_count(broker_factory):
    b = broker_factory(**{"offsets.topic.num.partitions": "3"})
    create_topic(b.bootstrap, "t", 1)
    groups = _groups_beyond(3, 7, 4)
    raw = raw_connection(b.port)
    try:
        find_coordinator(raw, groups[0])
        for i, g in enumerate(groups):
            assert commit(raw, g, "t", {0: 10 + i}, "first") == [0]
    finally:
        raw.close()

    b.overrides["offsets.topic.num.partitions"] = "7"
    b.restart()
    raw = raw_connection(b.port)
    try:
        assert offsets_topic_partitions(raw) == 3  # the topic is not resized
        for i, g in enumerate(groups):
            assert fetch(raw, g, "t", [0]) == {0: (10 + i, "first")}
            find_coordinator(raw, g)
            assert commit(raw, g, "t", {0: 100 + i}, "second") == [0]
    finally:
        raw.close()
    assert "groups are placed by the topic's count" in b.log_text()

    # A stock consumer group works on the restarted broker.
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": groups[0],
                  "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition("t", 0, 200)], asynchronous=False)
        [tp] = c.committed([TopicPartition("t", 0)], timeout=60)
        assert tp.offset == 200
    finally:
        c.close()

    b.restart()  # the second commits were written next to the first ones: they win on replay
    raw = raw_connection(b.port)
    try:
        assert fetch(raw, groups[0], "t", [0]) == {0: (200, "")}
        for i, g in enumerate(groups[1:], start=1):
            assert fetch(raw, g, "t", [0]) == {0: (100 + i, "second")}
    finally:
        raw.close()
    assert "Traceback" not in b.log_text(), b.log_text()
