"""DescribeTopicPartitions (key 75) answers as Kafka 3.9's KRaft broker: paging by
ResponsePartitionLimit and Cursor/NextCursor over sorted topics, unknown topics, and the
partition fields from the same metadata view as Metadata."""

from __future__ import annotations

import uuid

import pytest

from cluster.election import LeaderAndIsr
from cluster.metadata_image import BrokerInfo, MetadataImage, PartitionInfo, TopicInfo
from cluster.znodes import EndPoint
from kbroker.handlers.describe_topic_partitions import TOPIC_OPERATIONS, describe_topic_partitions
from kbroker.metadata.metadata_cache import MetadataCache
from kbroker.metadata.metadata_view import ClusterView, PartitionView, TopicView
from kbroker.server.error_responses import error_response
from wire.codec import decode, encode
from wire.error_codes import ErrorCode
from wire.messages import ZERO_UUID, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse

Req = DescribeTopicPartitionsRequest


class FakeView:
    """Topics of n partitions each, every partition led by broker 1."""

    def __init__(self, **sizes: int) -> None:
        self.sizes = sizes
        self.controller_id = 1

    def topic_names(self) -> list[str]:
        return sorted(self.sizes)

    def has_topic(self, name: str) -> bool:
        return name in self.sizes

    def topic(self, name: str) -> TopicView | None:
        if name not in self.sizes:
            return None
        return TopicView(name, uuid.UUID(int=len(name)), name.startswith("__"),
                         [PartitionView(i, 1, 0, [1], [1], []) for i in range(self.sizes[name])])

    def is_live(self, broker_id: int) -> bool:
        return broker_id == 1

    def brokers(self) -> list:
        return []


def request(names: list[str] | None = None, limit: int = 2000, cursor: tuple[str, int] | None = None) -> Req:
    return Req(topics=[Req.TopicRequest(name=n) for n in names or []], response_partition_limit=limit,
               cursor=None if cursor is None else Req.Cursor(topic_name=cursor[0], partition_index=cursor[1]))


def pages(resp: DescribeTopicPartitionsResponse) -> tuple[list[tuple[str, list[int]]], tuple[str, int] | None]:
    cursor = resp.next_cursor
    return ([(t.name, [p.partition_index for p in t.partitions]) for t in resp.topics],
            None if cursor is None else (cursor.topic_name, cursor.partition_index))


def test_all_topics_are_answered_in_name_order_when_the_request_names_none():
    view = FakeView(b=2, a=1, c=3)
    assert pages(describe_topic_partitions(view, request())) == (
        [("a", [0]), ("b", [0, 1]), ("c", [0, 1, 2])], None)


def test_a_topic_cut_by_the_limit_ends_the_page_with_a_cursor_at_its_first_partition_left_out():
    view = FakeView(a=2, b=5, c=1)
    assert pages(describe_topic_partitions(view, request(limit=4))) == ([("a", [0, 1]), ("b", [0, 1])], ("b", 2))


def test_following_the_next_cursor_returns_every_partition_exactly_once():
    view = FakeView(a=3, b=7, c=1, d=4)
    seen: list[tuple[str, int]] = []
    cursor = None
    for _ in range(20):
        resp = describe_topic_partitions(view, request(limit=3, cursor=cursor))
        seen += [(t.name, p.partition_index) for t in resp.topics for p in t.partitions]
        if resp.next_cursor is None:
            break
        cursor = (resp.next_cursor.topic_name, resp.next_cursor.partition_index)
    assert seen == [(t, i) for t in "abcd" for i in range(view.sizes[t])]


def test_a_limit_used_up_at_a_topic_boundary_points_the_cursor_at_the_next_topic_partition_zero():
    view = FakeView(a=2, b=2)
    assert pages(describe_topic_partitions(view, request(limit=2))) == ([("a", [0, 1])], ("b", 0))


def test_the_cursor_starts_its_topic_at_its_partition_and_skips_topics_named_before_it():
    view = FakeView(a=3, b=3, c=2)
    assert pages(describe_topic_partitions(view, request(cursor=("b", 2)))) == ([("b", [2]), ("c", [0, 1])], None)
    named = request(["c", "a", "b"], cursor=("b", 1))
    assert pages(describe_topic_partitions(view, named)) == ([("b", [1, 2]), ("c", [0, 1])], None)


def test_a_cursor_past_a_topics_last_partition_answers_that_topic_with_no_partitions():
    view = FakeView(a=2, b=1)
    assert pages(describe_topic_partitions(view, request(cursor=("a", 5)))) == ([("a", []), ("b", [0])], None)


def test_the_limit_is_capped_at_kafkas_max_request_partition_size_limit_of_2000():
    view = FakeView(big=2500)
    topics, cursor = pages(describe_topic_partitions(view, request(limit=10_000)))
    assert (len(topics[0][1]), cursor) == (2000, ("big", 2000))
    topics, cursor = pages(describe_topic_partitions(view, request(limit=10_000, cursor=cursor)))
    assert (topics[0][1][0], len(topics[0][1]), cursor) == (2000, 500, None)


def test_a_zero_limit_answers_no_topic_and_a_cursor_at_the_first_one_and_a_negative_limit_nothing():
    view = FakeView(a=1, b=1)
    assert pages(describe_topic_partitions(view, request(limit=0))) == ([], ("a", 0))
    assert pages(describe_topic_partitions(view, request(limit=-1))) == ([], None)


def test_named_unknown_topics_answer_their_errors_and_listing_all_never_reports_one():
    view = FakeView(b=1)
    resp = describe_topic_partitions(view, request(["zz", "b", "bad name!", "b", "__transaction_state"]))
    assert [(t.name, t.error_code, t.topic_id, t.is_internal, t.partitions) for t in resp.topics
            if t.error_code] == [
        ("__transaction_state", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID, True, []),
        ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION, ZERO_UUID, False, []),
        ("zz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID, False, []),
    ]
    assert [t.name for t in resp.topics] == ["__transaction_state", "b", "bad name!", "zz"]  # once each
    assert all(t.topic_authorized_operations == TOPIC_OPERATIONS for t in resp.topics)


def test_a_named_list_without_the_cursors_topic_fails_every_requested_topic_with_invalid_request():
    view = FakeView(a=1, b=1)
    resp = describe_topic_partitions(view, request(["a", "b"], cursor=("c", 0)))
    assert [(t.name, t.error_code, t.partitions, t.topic_authorized_operations) for t in resp.topics] == [
        ("a", ErrorCode.INVALID_REQUEST, [], -(1 << 31)), ("b", ErrorCode.INVALID_REQUEST, [], -(1 << 31))]
    assert resp.next_cursor is None


def cluster_view() -> ClusterView:
    """Brokers 1 and 2 live, 3 gone: t-0 led by 1 with 3 offline, t-1 led by the dead 3."""
    img = MetadataImage()
    for b in (1, 2):
        img.with_broker(BrokerInfo(b, (EndPoint("PLAINTEXT", "127.0.0.1", 9090 + b),)))
    tid = uuid.UUID(int=42)
    img.set_topic(TopicInfo("t", tid, {0: PartitionInfo((1, 2, 3)), 1: PartitionInfo((3, 2, 1))}))
    img.set_partition_state("t", 0, LeaderAndIsr(1, 4, (1, 2)), controller_epoch=1)
    img.set_partition_state("t", 1, LeaderAndIsr(3, 7, (3,)), controller_epoch=1)
    cache = MetadataCache(broker_id=1)
    cache.image = img
    return ClusterView("PLAINTEXT", cache, lambda: 2)


def test_cluster_partitions_show_the_isr_offline_replicas_a_dead_leader_as_minus_one_and_no_elr():
    resp = describe_topic_partitions(cluster_view(), request(["t"]))
    (t,) = resp.topics
    assert (t.error_code, t.topic_id, t.is_internal) == (0, uuid.UUID(int=42), False)
    assert [(p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes,
             p.offline_replicas, p.eligible_leader_replicas, p.last_known_elr) for p in t.partitions] == [
        (0, 0, 1, 4, [1, 2, 3], [1, 2], [3], [], []),
        (1, 0, -1, 7, [3, 2, 1], [3], [3], [], []),   # Metadata says LEADER_NOT_AVAILABLE here
    ]


def test_the_response_round_trips_through_the_v0_codec_with_and_without_a_cursor():
    view = FakeView(a=3)
    for limit in (2, 2000):
        resp = describe_topic_partitions(view, request(limit=limit))
        assert decode(DescribeTopicPartitionsResponse, encode(resp, 0), 0) == resp


@pytest.mark.parametrize("names", [["a", "b"], []])
def test_a_crashed_handler_answers_each_requested_topic_with_unknown_server_error(names):
    resp = error_response(75, 0, request(names))
    assert [(t.name, t.error_code, t.is_internal, t.partitions) for t in resp.topics] == [
        (n, ErrorCode.UNKNOWN_SERVER_ERROR, False, []) for n in names]
    assert resp.next_cursor is None
