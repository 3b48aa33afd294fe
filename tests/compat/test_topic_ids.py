"""Topic ids (KIP-516) on a real single-node broker process: the same id in CreateTopics
v7, Metadata v12, DescribeTopicPartitions and each partition's partition.metadata, also
after a restart; and the stock clients that fetch by topic id once the broker answers ids
and advertises Fetch 13+ (librdkafka: Fetch v16, Kafka's Java consumer 3.9 and 4.3: v17)
read exact records.  A relay in front of the broker notes the Fetch versions they chose."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.client import Connection
from log.partition_metadata_file import PartitionMetadataFile
from tests.support.java_admin import JAVA_DIR, java_client_classpath
from tests.support.request_recorder import RequestRecorder
from tests.support.requirements_helper import missing_tool
from wire.error_codes import ErrorCode
from wire.messages import (
    ZERO_UUID,
    CreateTopicsRequest,
    DescribeTopicPartitionsRequest,
    MetadataRequest,
)

pytestmark = pytest.mark.timeout(600)
FETCH = 1
DEADLINE_S = 60.0


def send(bootstrap: str, req, version: int):
    host, port = bootstrap.rsplit(":", 1)
    with Connection.open(host, int(port), client_id="topic-ids-test", negotiate=False) as c:
        return c.call(req, version)


def ids_seen(bootstrap: str, name: str) -> tuple[uuid.UUID, uuid.UUID]:
    """(Metadata v12's id, DescribeTopicPartitions' id) of ``name``."""
    md = send(bootstrap, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                                         allow_auto_topic_creation=False), 12)
    dtp = send(bootstrap, DescribeTopicPartitionsRequest(
        topics=[DescribeTopicPartitionsRequest.TopicRequest(name=name)], response_partition_limit=2000), 0)
    return md.topics[0].topic_id, dtp.topics[0].topic_id


def test_createtopics_metadata_describetopicpartitions_and_partition_metadata_agree_across_a_restart(broker):
    created = send(broker.bootstrap, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="ids", num_partitions=3, replication_factor=1, assignments=[], configs=[])], timeout_ms=60000), 7)
    tid = created.topics[0].topic_id
    assert created.topics[0].error_code == ErrorCode.NONE and tid != ZERO_UUID
    assert ids_seen(broker.bootstrap, "ids") == (tid, tid)
    broker.stop()
    assert {PartitionMetadataFile(str(broker.data_dir / f"ids-{p}")).read() for p in range(3)} == {tid}
    broker.start()
    assert ids_seen(broker.bootstrap, "ids") == (tid, tid)


@pytest.fixture
def recorded_broker(broker_factory):
    """A broker whose advertised address is a RequestRecorder in front of it."""
    recorder = RequestRecorder()
    b = broker_factory(**{"advertised.listeners": f"PLAINTEXT://127.0.0.1:{recorder.port}"})
    recorder.target_port = b.port
    yield recorder, b
    recorder.close()


def test_librdkafka_fetches_by_topic_id_with_fetch_v16_and_reads_exact_records(recorded_broker):
    recorder, b = recorded_broker
    bootstrap = f"127.0.0.1:{recorder.port}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("by-id", 2, 1)])["by-id"].result(DEADLINE_S)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        p.produce("by-id", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
    assert p.flush(DEADLINE_S) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ids"})
    c.assign([TopicPartition("by-id", 0, 0), TopicPartition("by-id", 1, 0)])
    got = []
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < 10 and time.monotonic() < deadline:
        m = c.poll(1)
        if m is not None:
            assert m.error() is None, m.error()
            got.append((m.partition(), m.offset(), m.key(), m.value()))
    c.close()
    assert sorted(got) == sorted((i % 2, i // 2, b"k%d" % i, b"v%d" % i) for i in range(10))
    assert recorder.versions(FETCH) == {16}


def java_clients(version: str) -> str:
    """The classpath with kafka-clients ``version`` (3.9: spark_it/jars, 4.3: bench/kafka/jars)."""
    from tests.support.broker_process import ROOT

    jars = sorted((ROOT / "spark_it" / "jars").glob(f"kafka-clients-{version}*.jar")) + sorted(
        (ROOT / "bench" / "kafka" / "jars").glob(f"kafka-clients-{version}*.jar"))
    if not jars:
        missing_tool(f"no kafka-clients {version} jar (make spark-jars / make kafka-jars)")
    rest = [p for p in java_client_classpath().split(":") if "kafka-clients" not in p]
    return ":".join([str(jars[0]), *rest])


@pytest.mark.parametrize("client_version, fetch_version", [("3.9", 17), ("4.3", 17)])
def test_the_java_consumer_fetches_by_topic_id_and_reads_exact_records(recorded_broker, client_version,
                                                                          fetch_version):
    recorder, b = recorded_broker
    bootstrap = f"127.0.0.1:{recorder.port}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("java-ids", 1, 1)])["java-ids"].result(DEADLINE_S)
    done = subprocess.run(["java", "-cp", java_clients(client_version), str(JAVA_DIR / "SecureProduceConsume.java"),
                           bootstrap, "java-ids", "25"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "consumed 25 v0 v24"
    assert recorder.versions(FETCH) == {fetch_version}
