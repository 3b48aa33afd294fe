"""DescribeTopicPartitions (key 75) against a real single-node broker: Kafka's Java
AdminClient (3.9) describeTopics pages through NextCursor, and the raw request answers
with the cursor where the limit cuts."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.client import Connection
from tests.support.java_admin import describe_topics
from wire.error_codes import ErrorCode
from wire.messages import DescribeTopicPartitionsRequest as Req
from wire.messages import MetadataRequest
from wire.uuids import uuid_to_string

pytestmark = pytest.mark.timeout(600)

SIZES = {"wide": 23, "narrow": 2}


def create(bootstrap: str) -> None:
    client = AdminClient({"bootstrap.servers": bootstrap})
    for f in client.create_topics([NewTopic(t, n, 1) for t, n in SIZES.items()], request_timeout=60).values():
        f.result(60)


def send(broker, req, version: int = 0):
    host, port = broker.bootstrap.rsplit(":", 1)
    with Connection.open(host, int(port), client_id="dtp-test", negotiate=False) as c:
        return c.call(req, version)


def test_the_java_admin_client_pages_through_a_topic_with_more_partitions_than_its_limit(broker):
    create(broker.bootstrap)
    lines = describe_topics(broker.bootstrap, ["wide", "narrow", "missing"], partition_limit=5)
    expected = ["error missing UnknownTopicOrPartitionException"]
    for topic in ("wide", "narrow"):
        # the id Metadata v12 answers, as Uuid.toString prints it
        md = send(broker, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 12)
        expected.append(f"topic {topic} internal=false id={uuid_to_string(md.topics[0].topic_id)}")
        expected += [f"partition {topic} {i} leader=1 replicas=1 isr=1 elr= lastKnownElr="
                     for i in range(SIZES[topic])]
    assert sorted(lines) == sorted(expected)
    # partitions in index order across the five pages of "wide"
    assert [line for line in lines if line.startswith("partition wide")] == [
        f"partition wide {i} leader=1 replicas=1 isr=1 elr= lastKnownElr=" for i in range(23)]


def test_a_raw_request_is_cut_at_the_limit_and_the_next_cursor_resumes_where_it_stopped(broker):
    create(broker.bootstrap)
    first = send(broker, Req(topics=[], response_partition_limit=10))
    assert [(t.name, len(t.partitions)) for t in first.topics] == [("narrow", 2), ("wide", 8)]
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("wide", 8)
    rest = send(broker, Req(topics=[Req.TopicRequest(name="wide")], response_partition_limit=2000,
                            cursor=Req.Cursor(topic_name="wide", partition_index=8)))
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in rest.topics] == [
        ("wide", list(range(8, 23)))]
    assert rest.next_cursor is None
    p = rest.topics[0].partitions[0]
    assert (p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes, p.offline_replicas,
            p.eligible_leader_replicas, p.last_known_elr) == (0, 1, [1], [1], [], [], [])


def test_the_java_admin_client_reports_the_brokers_describe_topic_partitions_failure(broker_factory, monkeypatch):
    """Proof the client takes the DescribeTopicPartitions path (Metadata would succeed): a
    broker whose key-75 handler raises answers UNKNOWN_SERVER_ERROR per topic."""
    monkeypatch.setenv("KBROKER_TEST_FAIL_API", "75")
    b = broker_factory()
    create(b.bootstrap)
    assert describe_topics(b.bootstrap, ["wide"]) == ["error wide UnknownServerException"]
    resp = send(b, Req(topics=[Req.TopicRequest(name="wide")]))
    assert [(t.name, t.error_code) for t in resp.topics] == [("wide", ErrorCode.UNKNOWN_SERVER_ERROR)]
