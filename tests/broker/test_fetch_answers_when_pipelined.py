"""A parked Fetch is answered as soon as its connection has read a later request (librdkafka
pipelines a starting consumer's ListOffsets behind its Fetches; responses leave in order, so
each would otherwise wait out the Fetch's max_wait_ms).  An embedded broker; the client is a
plain socket sending requests without waiting for answers.  The Fetches here wait up to
10 minutes: a test that is not answered long before fails on the socket's 60 s deadline."""

from __future__ import annotations

import pytest

from kbroker import Broker
from tests.support.wire_client import WireClient
from wire.messages import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from wire.record_batch import build_batch

TOPIC = "pipelined"
DEADLINE_S = 60.0
TEN_MINUTES_MS = 600_000


def Client(bootstrap: str, rcvbuf: int | None = None) -> WireClient:
    return WireClient(bootstrap, "pipelined-test", rcvbuf)


def fetch(offset: int, max_wait_ms: int = TEN_MINUTES_MS) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[
                            FetchRequest.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=offset,
                                                        last_fetched_epoch=-1, log_start_offset=-1,
                                                        partition_max_bytes=1 << 20)])],
                        forgotten_topics_data=[], rack_id="")


def list_offsets() -> ListOffsetsRequest:
    return ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])])


def produce(value: bytes) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=1, timeout_ms=30_000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(
            index=0, records=build_batch([(None, value, None, 1_700_000_000_000)]))])])


@pytest.fixture
def client(tmp_path):
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}) as b:
        c = Client(b.bootstrap_servers)
        c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                               allow_auto_topic_creation=True), 9, 1)
        _, md = c.receive(MetadataResponse, 9)
        assert md.topics[0].error_code == 0
        yield c
        c.close()


def test_a_parked_fetch_answers_empty_when_a_list_offsets_follows_it_on_the_connection(client):
    client.send(fetch(0), 12, 2)
    client.send(list_offsets(), 7, 3)
    corr, resp = client.receive(FetchResponse, 12)
    assert corr == 2
    (p,) = resp.responses[0].partitions
    assert (p.error_code, p.high_watermark, bytes(p.records or b"")) == (0, 0, b"")
    corr, lo = client.receive(ListOffsetsResponse, 7)
    assert (corr, lo.topics[0].partitions[0].offset) == (3, 0)


def test_a_fetch_parked_before_a_produce_on_the_same_connection_answers_with_the_produced_record(client):
    client.send(fetch(0), 12, 2)
    client.send(produce(b"hello"), 9, 3)
    corr, resp = client.receive(FetchResponse, 12)
    assert corr == 2
    (p,) = resp.responses[0].partitions
    assert (p.error_code, p.high_watermark) == (0, 1)
    assert b"hello" in bytes(p.records)
    corr, pr = client.receive(ProduceResponse, 9)
    assert (corr, pr.responses[0].partition_responses[0].error_code) == (3, 0)


def test_a_fetch_alone_on_its_connection_still_waits_for_data_and_answers_with_it(client):
    # parked with nothing behind it on its connection: another connection's produce wakes it
    client.send(fetch(0), 12, 2)
    host, port = client.sock.getpeername()[:2]
    other = Client(f"{host}:{port}")
    other.send(produce(b"from-elsewhere"), 9, 7)
    assert other.receive(ProduceResponse, 9)[0] == 7
    other.close()
    corr, resp = client.receive(FetchResponse, 12)
    (p,) = resp.responses[0].partitions
    assert (corr, p.high_watermark) == (2, 1)
    assert b"from-elsewhere" in bytes(p.records)
