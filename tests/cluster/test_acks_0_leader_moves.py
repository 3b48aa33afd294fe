"""Cluster mode: an acks=0 producer whose partition's leader moved away learns of it from
the closed connection, as with Kafka (KafkaApis.handleProduceRequest closes the connection
of an acks=0 Produce with an error, here NOT_LEADER_OR_FOLLOWER or, once the old replica is
deleted, UNKNOWN_TOPIC_OR_PARTITION): librdkafka refreshes its metadata and goes on producing
to the new leader, where the records arrive.  Without the close it would keep sending to
the old leader until its 5-minute metadata refresh."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import TopicPartition as KTopicPartition
from kafka.admin import KafkaAdminClient

from cluster import znodes
from tests.support.cluster_processes import DEADLINE_S, Cluster, wait_until

pytestmark = pytest.mark.timeout(600)

TOPIC = "acks0-moving"


def leader(c: Cluster) -> int:
    return json.loads(c.admin.get(znodes.partition_state_path(TOPIC, 0))[0])["leader"]


def test_an_acks_0_producer_follows_a_leader_that_moved_through_the_closed_connection(zookeeper, tmp_path):
    cluster = Cluster(tmp_path, zookeeper).start()
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        assert admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[1, 2]])])[TOPIC].result(
            DEADLINE_S) is None
        wait_until(lambda: leader(cluster) == 1, "broker 1 to lead")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": 0, "linger.ms": 0})
        producer.produce(TOPIC, b"before", partition=0)
        assert producer.flush(DEADLINE_S) == 0

        kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=60000)
        try:
            tp = KTopicPartition(TOPIC, 0)
            assert kadmin.alter_partition_reassignments({tp: [2, 3]}) == {tp: None}
        finally:
            kadmin.close()
        wait_until(lambda: leader(cluster) == 2, "broker 2 to lead after the reassignment")

        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "acks0-moving-reader",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        seen: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        i = 0
        try:
            while not any(v.startswith(b"after-") for v in seen) and time.monotonic() < deadline:
                producer.produce(TOPIC, b"after-%d" % i, partition=0)
                producer.poll(0.05)
                i += 1
                m = consumer.poll(0.05)
                if m is not None and m.error() is None:
                    seen.append(m.value())
        finally:
            consumer.close()
            producer.flush(DEADLINE_S)
        assert any(v.startswith(b"after-") for v in seen), seen
        assert any("closing connection" in line and "with ack=0" in line and f"{TOPIC}-0=" in line
                   for line in cluster.brokers[1].output), cluster.brokers[1].log_text()[-3000:]
    finally:
        cluster.stop()
