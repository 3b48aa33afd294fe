"""Kafka's per-record produce validation (LogValidator), driven over TCP with raw Produce v9
requests against a real broker process; every refusal leaves nothing stored (ListOffsets
latest unchanged, Fetch returns no record).

Kafka's answers, from its source (storage LogValidator, clients DefaultRecordBatch and
DefaultRecord, ReplicaManager.appendToLocalLog):

* a batch whose CRC-32C is right but whose records are not (it declares 3 records and holds
  one followed by garbage): DefaultRecordBatch's iterator throws
  ``org.apache.kafka.common.InvalidRecordException`` ("Incorrect declared batch size ..." /
  "Invalid record size ...") while LogValidator walks it; that exception is an ApiException
  mapped to INVALID_RECORD (87), with no record_errors and no error message (only a
  RecordValidationException has a custom message).  CORRUPT_MESSAGE (2) is a CRC or batch
  size failure (tests/compat/test_bad_input.py).
* a header whose maxTimestamp disagrees with the records: accepted; LogValidator's
  ``setMaxTimestamp`` writes the records' max into the header with a new CRC; ListOffsets
  MAX_TIMESTAMP (-3) returns that timestamp and the offset of the record holding it.
* a record timestamp past message.timestamp.after.max.ms (the header's maxTimestamp
  within bounds): INVALID_TIMESTAMP (32) with record_errors naming that record.
* a keyless record on a compacted topic inside a compressed batch: INVALID_RECORD with
  record_errors (the batch is decompressed and every record checked).
"""

from __future__ import annotations

import struct
import time

import crc32c
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess
from tests.support.wire_client import WireClient
from wire.compression import compress, decompress
from wire.messages import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ProduceRequest,
    ProduceResponse,
)
from wire.record_batch import HEADER_SIZE, Compression, RecordBatch, build_batch, iter_batches

INVALID_TIMESTAMP, INVALID_RECORD = 32, 87
LATEST, MAX_TIMESTAMP = -1, -3


class Raw(WireClient):
    """One plain TCP connection speaking framed Kafka requests, one at a time."""

    def __init__(self, port: int) -> None:
        super().__init__(f"127.0.0.1:{port}", "produce-validation-test")

    def produce(self, topic: str, records: bytes):
        req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=records)])])
        return self.call(req, 9, ProduceResponse).responses[0].partition_responses[0]

    def list_offset(self, topic: str, timestamp: int):
        req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1,
                                                        timestamp=timestamp)])])
        p = self.call(req, 7, ListOffsetsResponse).topics[0].partitions[0]
        assert p.error_code == 0
        return p.timestamp, p.offset

    def fetch(self, topic: str, offset: int = 0) -> bytes:
        req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                           session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                               topic=topic, partitions=[FetchRequest.FetchPartition(
                                   partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                                   partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id="")
        p = self.call(req, 12, FetchResponse).responses[0].partitions[0]
        assert p.error_code == 0
        return bytes(p.records or b"")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def reseal(batch: bytes | bytearray, body: bytes | None = None, count: int | None = None,
           max_timestamp: int | None = None) -> bytes:
    """``batch`` with another records body, recordCount (and lastOffsetDelta) or header
    maxTimestamp, its batchLength and CRC-32C made right again: CRC-valid whatever it holds."""
    out = bytearray(batch[:HEADER_SIZE]) + (batch[HEADER_SIZE:] if body is None else body)
    struct.pack_into(">i", out, 8, len(out) - 12)
    if count is not None:
        struct.pack_into(">i", out, 57, count)
        struct.pack_into(">i", out, 23, count - 1)
    if max_timestamp is not None:
        struct.pack_into(">q", out, 35, max_timestamp)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("produce-validation") / "data").start()
    yield broker
    broker.stop()
    assert "Traceback" not in broker.log_text(), broker.log_text()


def make_topic(broker: BrokerProcess, name: str, config: dict[str, str] | None = None) -> str:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=config or {})])[name].result(60)
    return name


@pytest.fixture
def raw(shared):
    r = Raw(shared.port)
    yield r
    r.close()


def assert_nothing_stored(raw: Raw, topic: str, log_end_offset: int = 0) -> None:
    assert raw.list_offset(topic, LATEST) == (-1, log_end_offset)
    assert raw.fetch(topic, log_end_offset) == b""


def test_a_crc_valid_batch_declaring_three_records_but_holding_one_and_garbage_is_invalid_record_and_not_stored(shared, raw):
    topic = make_topic(shared, "poison")
    one = build_batch([(b"k", b"the one real record", None, now_ms())])
    poison = reseal(one, one[HEADER_SIZE:] + b"\x13\x37garbage\xff\xff\xff\xff", count=3)
    assert RecordBatch(poison).is_crc_valid() and RecordBatch(poison).record_count == 3
    p = raw.produce(topic, poison)
    assert (p.error_code, p.base_offset, p.record_errors, p.error_message) == (INVALID_RECORD, -1, [], None)
    assert_nothing_stored(raw, topic)
    # the connection and the partition go on: a good batch lands at offset 0
    assert raw.produce(topic, one).error_code == 0
    assert raw.list_offset(topic, LATEST) == (-1, 1)


def test_a_header_lying_about_max_timestamp_is_stored_with_the_true_one_and_list_offsets_max_timestamp_follows_the_records(shared, raw):
    topic = make_topic(shared, "lying-header")
    t0 = now_ms()
    assert raw.produce(topic, build_batch([(b"a", b"0", None, t0 - 1000), (b"b", b"1", None, t0 - 900)])).error_code == 0
    honest = build_batch([(b"c", b"2", None, t0 - 300), (b"d", b"3", None, t0 - 100), (b"e", b"4", None, t0 - 200)])
    for lie in (t0 - 50_000, t0 + 60_000):  # below the records' max, then above it (within after.max.ms)
        p = raw.produce(topic, reseal(honest, max_timestamp=lie))
        assert p.error_code == 0
    assert p.base_offset == 5
    # ListOffsets(-3): the largest record timestamp and the offset of its record (the first such)
    assert raw.list_offset(topic, MAX_TIMESTAMP) == (t0 - 100, 3)
    stored = list(iter_batches(raw.fetch(topic)))
    assert [(b.base_offset, b.max_timestamp, b.is_crc_valid()) for b in stored] == [
        (0, t0 - 900, True), (2, t0 - 100, True), (5, t0 - 100, True)]
    assert [r.timestamp for r in stored[1].records()] == [t0 - 300, t0 - 100, t0 - 200]


def test_a_record_timestamp_beyond_after_max_ms_is_invalid_timestamp_naming_the_record_and_not_stored(shared, raw):
    topic = make_topic(shared, "late-record", {"message.timestamp.after.max.ms": "60000"})
    t0 = now_ms()
    future = t0 + 3_600_000
    sent = build_batch([(b"a", b"0", None, t0), (b"b", b"1", None, future), (b"c", b"2", None, t0)])
    p = raw.produce(topic, reseal(sent, max_timestamp=t0))  # the header's timestamps are fine
    assert (p.error_code, p.base_offset) == (INVALID_TIMESTAMP, -1)
    assert p.error_message == "One or more records have been rejected due to invalid timestamp"
    assert len(p.record_errors) == 1 and p.record_errors[0].batch_index == 1
    message = p.record_errors[0].batch_index_error_message
    assert message.startswith(f"Timestamp {future} of message with offset 1 is out of range. The timestamp should be within [")
    assert_nothing_stored(raw, topic)


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.LZ4])
def test_a_keyless_record_on_a_compacted_topic_inside_a_compressed_batch_is_invalid_record_with_record_errors(shared, raw, codec):
    topic = make_topic(shared, f"compacted-{codec.name.lower()}", {"cleanup.policy": "compact"})
    t0 = now_ms()
    sent = build_batch([(b"k0", b"v0", None, t0), (None, b"no key", None, t0), (b"k2", b"v2", None, t0)], compression=codec)
    p = raw.produce(topic, sent)
    assert (p.error_code, p.base_offset) == (INVALID_RECORD, -1)
    assert [(e.batch_index, e.batch_index_error_message) for e in p.record_errors] == [
        (1, f"Compacted topic cannot accept message without key in topic partition {topic}-0")]
    assert p.error_message.startswith("One or more records have been rejected due to 1 record errors in total")
    assert_nothing_stored(raw, topic)


def test_garbage_after_the_records_inside_a_compressed_batch_is_invalid_record_and_not_stored(shared, raw):
    topic = make_topic(shared, "compressed-garbage")
    sent = build_batch([(b"k", b"v", None, now_ms())] * 3, compression=Compression.GZIP)
    inner = decompress(Compression.GZIP, sent[HEADER_SIZE:])
    p = raw.produce(topic, reseal(sent, compress(Compression.GZIP, inner + b"\x02\x00\x00")))
    assert (p.error_code, p.base_offset, p.record_errors) == (INVALID_RECORD, -1, [])
    assert_nothing_stored(raw, topic)
