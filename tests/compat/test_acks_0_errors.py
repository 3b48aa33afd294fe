"""An acks=0 Produce that fails is answered by closing its connection, as Kafka's
KafkaApis.handleProduceRequest does (``requestChannel.closeConnection``): the producer
expects no response, so the close is how it learns of the error and refreshes its
metadata.  The responses of earlier requests on the connection still leave, in order;
nothing after the failed request is handled.  A successful acks=0 Produce keeps the
connection (tests/compat/test_bad_input.py)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.compat.test_bad_input import (
    Raw,
    a_batch,
    high_watermark,
    metadata_request,
    produce_request,
)
from tests.support.broker_process import BrokerProcess
from wire.headers import encode_request
from wire.messages import (
    FetchRequest,
    FetchResponse,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from wire.record_batch import build_batch

DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("acks0") / "data", log_level="DEBUG",   # sendfile is logged
                      overrides={"auto.create.topics.enable": "true"}).start()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    assert admin.create_topics([NewTopic("exists", 2, 1)], operation_timeout=10)["exists"].result(DEADLINE_S) is None
    yield b
    b.stop()


def closes_logged(broker: BrokerProcess, needle: str) -> int:
    return sum(1 for line in broker.output if "closing connection" in line and needle in line)


def wait_for_close_logged(broker: BrokerProcess, needle: str) -> None:
    assert broker.wait_for_output(lambda lines: any("closing connection" in line and needle in line
                                                    for line in lines), DEADLINE_S), broker.log_text()[-3000:]


def test_an_acks_0_produce_to_an_unknown_topic_closes_the_connection_without_an_answer(shared):
    raw = Raw(shared.port)
    try:
        raw.request(produce_request("no-such-topic", a_batch(2), acks=0), 9, 7)
        raw.assert_closed_without_answer(DEADLINE_S)
    finally:
        raw.close()
    wait_for_close_logged(shared, "correlation id 7 from client id raw-test with ack=0; "
                                  "topic and partition to exceptions: no-such-topic-0=UNKNOWN_TOPIC_OR_PARTITION")


@pytest.mark.parametrize(("partition", "corrupt", "error"), [
    (5, False, "exists-5=UNKNOWN_TOPIC_OR_PARTITION"),   # a partition the topic does not have
    (0, True, "exists-0=CORRUPT_MESSAGE"),               # a CRC that does not match
])
def test_an_acks_0_produce_that_fails_on_a_partition_closes_the_connection(shared, partition, corrupt, error):
    batch = bytearray(a_batch(3, tag=b"bad"))
    if corrupt:
        batch[-1] ^= 0xFF
    before = high_watermark(shared.port, "exists", 0)
    raw = Raw(shared.port)
    try:
        raw.request(produce_request("exists", bytes(batch), acks=0, partition=partition), 9, 8)
        raw.assert_closed_without_answer(DEADLINE_S)
    finally:
        raw.close()
    wait_for_close_logged(shared, error)
    assert high_watermark(shared.port, "exists", 0) == before


def test_an_acks_0_produce_of_transactional_records_without_a_transactional_id_closes_the_connection(shared):
    """The whole-request failure (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): Kafka's
    sendErrorResponseMaybeThrottle finds no response for acks=0 and closes."""
    txn = build_batch([(b"k", b"v", None, 1_700_000_000_000)], producer_id=1000, producer_epoch=0,
                      base_sequence=0, is_transactional=True)
    before = high_watermark(shared.port, "exists", 0)
    raw = Raw(shared.port)
    try:
        raw.request(ProduceRequest(transactional_id=None, acks=0, timeout_ms=10_000, topic_data=[
            ProduceRequest.TopicProduceData(name="exists", partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=txn)])]), 9, 9)
        raw.assert_closed_without_answer(DEADLINE_S)
    finally:
        raw.close()
    wait_for_close_logged(shared, "correlation id 9 from client id raw-test with ack=0; "
                                  "topic and partition to exceptions: TransactionalIdAuthorizationException")
    assert high_watermark(shared.port, "exists", 0) == before


def test_the_answers_before_a_failed_acks_0_produce_are_sent_and_the_requests_after_it_are_not_handled(shared):
    before = high_watermark(shared.port, "exists", 1)
    raw = Raw(shared.port)
    try:
        raw.send(encode_request(metadata_request(), 12, 21, "raw-test")
                 + encode_request(produce_request("no-such-topic", a_batch(1), acks=0), 9, 22, "raw-test")
                 + encode_request(produce_request("exists", a_batch(4), acks=1, partition=1), 9, 23, "raw-test"))
        corr, resp = raw.response(MetadataResponse, 12, DEADLINE_S)
        assert corr == 21 and "exists" in [t.name for t in resp.topics]
        raw.assert_closed_without_answer(DEADLINE_S)
    finally:
        raw.close()
    wait_for_close_logged(shared, "correlation id 22 ")
    # Kafka reads one request of a connection at a time: the produce behind the failed one is never appended
    assert high_watermark(shared.port, "exists", 1) == before


def test_a_large_fetch_sent_with_sendfile_before_a_failed_acks_0_produce_arrives_whole_before_the_close(shared):
    """The Fetch answer's records (7 batches, about 6 MB: more than a socket buffer holds, so
    the broker waits for the client to read) leave by sendfile (kbroker/server/connection.py's raw
    mode): the close comes only after they have all been written."""
    batches = [build_batch([(None, bytes([(n + i) % 251]) * 9_000, [], 1_700_000_000_000 + i) for i in range(100)])
               for n in range(7)]
    raw = Raw(shared.port)
    here = f"127.0.0.1:{raw.sock.getsockname()[1]}"
    try:
        bases = []
        for n, batch in enumerate(batches):
            raw.request(produce_request("exists", batch, acks=1, partition=1), 9, 40 + n)
            corr, produced = raw.response(ProduceResponse, 9, DEADLINE_S)
            bases.append(produced.responses[0].partition_responses[0].base_offset)
            assert corr == 40 + n and bases[-1] >= 0
        fetch = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=64 << 20, isolation_level=0,
                             session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                                 topic="exists", partitions=[FetchRequest.FetchPartition(
                                     partition=1, current_leader_epoch=-1, fetch_offset=bases[0], log_start_offset=-1,
                                     partition_max_bytes=64 << 20)])], forgotten_topics_data=[], rack_id="")
        raw.send(encode_request(fetch, 12, 50, "raw-test")
                 + encode_request(produce_request("no-such-topic", a_batch(1), acks=0), 9, 51, "raw-test"))
        corr, resp = raw.response(FetchResponse, 12, DEADLINE_S)
        assert corr == 50
        records, at = bytes(resp.responses[0].partitions[0].records), 0
        for batch in batches:   # each batch as written, from its magic byte on (base offset and epoch are the broker's)
            assert records[at + 16:at + len(batch)] == batch[16:]
            at += len(batch)
        assert at == len(records)
        raw.assert_closed_without_answer(DEADLINE_S)
    finally:
        raw.close()
    wait_for_close_logged(shared, "correlation id 51 ")
    total = sum(len(b) for b in batches)
    sent = [line for line in shared.output if f"to {here} with sendfile" in line]
    assert len(sent) == 1 and f"sent 1 record slices ({total} bytes)" in sent[0], sent


def test_a_successful_acks_0_produce_keeps_the_connection(shared):
    closes = closes_logged(shared, "exists")
    raw = Raw(shared.port)
    try:
        raw.request(produce_request("exists", a_batch(2), acks=0, partition=1), 9, 31)
        raw.request(metadata_request(), 12, 32)
        corr, _ = raw.response(MetadataResponse, 12, DEADLINE_S)
        assert corr == 32
    finally:
        raw.close()
    assert closes_logged(shared, "exists") == closes


def test_confluent_kafka_acks_0_producer_recovers_from_a_deleted_topic_through_the_close(shared):
    """librdkafka (acks=0) keeps producing to a topic deleted under it: the broker closes the
    connection, the client refreshes its metadata, which auto-creates the topic again, and
    the records produced after that arrive.  Without the close the client would go on
    sending to a partition that does not exist until its 5-minute metadata refresh."""
    admin = AdminClient({"bootstrap.servers": shared.bootstrap})
    assert admin.create_topics([NewTopic("deleted", 1, 1)], operation_timeout=10)["deleted"].result(
        DEADLINE_S) is None
    producer = Producer({"bootstrap.servers": shared.bootstrap, "acks": 0, "linger.ms": 0})
    producer.produce("deleted", b"before")
    assert producer.flush(DEADLINE_S) == 0
    assert high_watermark(shared.port, "deleted") == 1
    assert admin.delete_topics(["deleted"], operation_timeout=10)["deleted"].result(DEADLINE_S) is None

    consumer = Consumer({"bootstrap.servers": shared.bootstrap, "group.id": "acks0-reader",
                         "enable.auto.commit": False})
    seen: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    i = 0
    assigned = False
    try:
        while not seen and time.monotonic() < deadline:
            producer.produce("deleted", b"after-%d" % i)
            producer.poll(0.05)
            i += 1
            if not assigned and "deleted" in admin.list_topics(timeout=DEADLINE_S).topics:
                consumer.assign([TopicPartition("deleted", 0, 0)])
                assigned = True
            if assigned:
                m = consumer.poll(0.05)
                if m is not None and m.error() is None:
                    seen.append(m.value())
    finally:
        consumer.close()
        producer.flush(DEADLINE_S)
    assert seen and seen[0].startswith(b"after-"), shared.log_text()[-3000:]
    assert closes_logged(shared, "deleted-0=UNKNOWN_TOPIC_OR_PARTITION") >= 1
