"""KIP-227 fetch sessions with stock clients on a real broker process: Kafka's Java consumer
(3.9 and 4.3) and kafka-python read many partitions in two rounds, every record at its own
offset, while the broker serves them incremental fetches (counted in /metrics: the
session count, incremental fetches served, session partitions left unread because nothing
changed; none of them move for a client that fetches sessionless)."""

from __future__ import annotations

import subprocess

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.compat.test_topic_ids import java_clients
from tests.support.broker_process import free_port
from tests.support.java_admin import JAVA_DIR
from tests.support.metrics_scrape import scrape_unlabelled

pytestmark = [pytest.mark.compat, pytest.mark.timeout(600)]
DEADLINE_S = 60.0
PARTITIONS = 64


def session_figures(port: int) -> tuple[float, float]:
    m = scrape_unlabelled(port)
    return (m["kbroker_fetchsessioncache_incrementalfetches_total"],
            m["kbroker_fetchsessioncache_partitionsskipped_total"])


@pytest.fixture
def metered(broker_factory):
    port = free_port()
    b = broker_factory(**{"kbroker.metrics.port": str(port)})
    return b, port


def create(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})   # kept alive until the answer
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(DEADLINE_S)


@pytest.mark.parametrize("client_version", ["3.9", "4.3"])
def test_the_java_consumer_reads_many_partitions_exactly_through_incremental_fetches(metered, client_version):
    b, port = metered
    create(b.bootstrap, "java-sessions")
    assert session_figures(port) == (0, 0)
    done = subprocess.run(["java", "-cp", java_clients(client_version), str(JAVA_DIR / "ManyPartitionsConsume.java"),
                           b.bootstrap, "java-sessions", str(PARTITIONS), "30"],
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith(("round", "error"))]
    assert lines == [f"round 1 {30 * PARTITIONS} 0", f"round 2 {30 * PARTITIONS} 0"], done.stdout[-2000:]
    incremental, skipped = session_figures(port)
    assert incremental > 0 and skipped > 0


def test_kafka_python_reads_many_partitions_exactly_through_incremental_fetches(metered):
    b, port = metered
    topic = "kp-sessions"
    create(b.bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", linger_ms=5)
    consumer = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, fetch_max_wait_ms=200,
                             max_partition_fetch_bytes=2048)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    try:
        for rnd in range(2):
            for i in range(20):
                for p in range(PARTITIONS):
                    producer.send(topic, value=b"%d:%d" % (p, rnd * 20 + i), partition=p)
            producer.flush(DEADLINE_S)
            got: list[tuple[int, int, bytes]] = []
            polls = 0
            while len(got) < 20 * PARTITIONS and polls < 600:
                polls += 1
                for tp, records in consumer.poll(timeout_ms=500).items():
                    got += [(tp.partition, r.offset, r.value) for r in records]
            assert sorted(got) == sorted((p, o, b"%d:%d" % (p, o))
                                         for p in range(PARTITIONS) for o in range(rnd * 20, rnd * 20 + 20))
    finally:
        consumer.close()
        producer.close()
    incremental, skipped = session_figures(port)
    assert incremental > 0 and skipped > 0
