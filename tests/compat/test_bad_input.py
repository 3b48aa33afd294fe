"""Bad input on raw sockets while a confluent-kafka producer (acks=all) keeps producing on
its own connection: the bad connection gets what Kafka gives it (an error code, or the
connection closed) and nothing else is disturbed.

Kafka's rules (SocketServer / RequestContext / KafkaApis): a negative or oversized size
prefix, an unparsable header, an unknown API key, an unsupported version (except
ApiVersions, answered KIP-511 style in the v0 layout with error 35) or a body that does
not parse closes that connection and nothing else; record-level problems are error codes
in the response.  Every side-load record must be there afterwards, and the broker
process must still be up.

Valid requests are built with the project's codec and then mutated.
"""

from __future__ import annotations

import random
import re
import socket
import struct
import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.client import Connection, ConnectionClosed
from tests.support.broker_process import BrokerProcess
from wire.codec import decode_at
from wire.headers import decode_request_header, decode_response, encode_request
from wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from wire.record_batch import Compression, build_batch

SIDE_TOPIC = "side"
CORRUPT_MESSAGE, UNSUPPORTED_VERSION, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, INVALID_RECORD = 2, 35, 53, 87


# ---------------------------------------------------------------------------- raw connections

class Closed(Exception):
    pass


class Raw:
    """A plain TCP connection speaking framed Kafka requests: kbroker.client's blocking
    Connection, no ApiVersions of its own, every byte as the test writes it."""

    def __init__(self, port: int):
        self.conn = Connection.open("127.0.0.1", port, client_id="raw-test", timeout_s=10, negotiate=False)
        self.sock = self.conn.sock

    def close(self) -> None:
        self.conn.close()

    def send(self, data: bytes) -> None:
        self.conn.send_raw(data)

    def request(self, msg, version: int, correlation_id: int) -> None:
        self.conn.send(msg, version, correlation_id)

    def read_frame(self, timeout_s: float = 10.0) -> bytes:
        """The next response frame (without its size prefix)."""
        try:
            return self.conn.read_frame(timeout_s)
        except ConnectionClosed as e:
            raise Closed(f"closed with {e.unread} unread bytes") from None

    def response(self, cls, version: int, timeout_s: float = 10.0):
        return decode_response(cls, self.read_frame(timeout_s), version)

    def assert_closed_without_answer(self, timeout_s: float = 10.0) -> None:
        with pytest.raises(Closed) as e:
            self.read_frame(timeout_s)
        assert str(e.value) == "closed with 0 unread bytes"

    def assert_silent(self, seconds: float) -> None:
        """Nothing arrives and the connection stays open for ``seconds``."""
        with pytest.raises(socket.timeout):
            self.read_frame(seconds)
        assert self.conn.buffered_bytes == 0


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def produce_request(topic: str, records: bytes, *, acks: int = -1, partition: int = 0) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=acks, timeout_ms=10_000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=records)])])


def a_batch(n: int = 3, tag: bytes = b"raw", compression: Compression = Compression.NONE) -> bytes:
    return build_batch([(b"k%d" % i, tag + b"-%d" % i, [("h", b"v")], 1_700_000_000_000 + i) for i in range(n)],
                       compression=compression)


def metadata_request() -> MetadataRequest:
    return MetadataRequest(topics=None, allow_auto_topic_creation=False)


def list_offsets_request(topic: str, partition: int = 0, timestamp: int = -1) -> ListOffsetsRequest:
    return ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1,
                                                    timestamp=timestamp)])])


def high_watermark(port: int, topic: str, partition: int = 0) -> int:
    raw = Raw(port)
    try:
        raw.request(list_offsets_request(topic, partition), 7, 1)
        corr, resp = raw.response(ListOffsetsResponse, 7)
        p = resp.topics[0].partitions[0]
        assert (corr, p.error_code) == (1, 0)
        return p.offset
    finally:
        raw.close()


def advertised_versions(port: int) -> dict[int, tuple[int, int]]:
    raw = Raw(port)
    try:
        raw.request(ApiVersionsRequest(client_software_name="raw-test", client_software_version="1"), 3, 7)
        corr, resp = raw.response(ApiVersionsResponse, 3)
        assert (corr, resp.error_code) == (7, 0)
        return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    finally:
        raw.close()


# ---------------------------------------------------------------------------- the side load

class SideLoad:
    """confluent-kafka producing acks=all on its own connection for the whole test."""

    def __init__(self, bootstrap: str):
        self.errors: list[str] = []
        self.sent: list[int] = []
        self.acked: list[int] = []
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                                  "error_cb": lambda e: self.errors.append(f"error_cb: {e}")})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _report(self, err, msg) -> None:
        if err is not None:
            self.errors.append(f"delivery: {err}")
        else:
            self.acked.append(int(msg.value()[5:]))

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            try:
                self.producer.produce(SIDE_TOPIC, value=b"side-%d" % n, partition=0, on_delivery=self._report)
            except BufferError:
                self.producer.poll(0.01)
                continue
            self.sent.append(n)
            n += 1
            self.producer.poll(0)
            time.sleep(0.001)

    def start(self) -> SideLoad:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self.acked:  # producing for real before the bad input starts
            assert time.monotonic() < deadline, self.errors
            time.sleep(0.01)
        return self

    def finish(self) -> None:
        self._stop.set()
        self._thread.join(10)
        assert self.producer.flush(30) == 0
        assert self.errors == []
        assert self.acked == self.sent


def read_side(bootstrap: str, expected: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compat-unused", "enable.auto.commit": False})
    values: list[bytes] = []
    try:
        c.assign([TopicPartition(SIDE_TOPIC, 0, OFFSET_END)])
        c.seek(TopicPartition(SIDE_TOPIC, 0, OFFSET_BEGINNING))
        deadline = time.monotonic() + 30
        while len(values) < expected and time.monotonic() < deadline:
            for m in c.consume(expected - len(values), 0.5):
                assert m.error() is None, m.error()
                values.append(m.value())
    finally:
        c.close()
    return values


class Target:
    """What a test gets: the shared broker's port and a fresh topic of 2 partitions."""

    def __init__(self, broker: BrokerProcess, topic: str):
        self.broker, self.topic, self.port = broker, topic, broker.port

    def alive(self) -> bool:
        return self.broker.alive()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One broker process and one side load for the whole module (a broker start costs
    1-2 s; each test gets its own topic instead).  At the end: the broker is alive, the side
    producer saw no error, and every side record is there, in order."""
    broker = BrokerProcess(tmp_path_factory.mktemp("bad-input") / "data").start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert admin.create_topics([NewTopic(SIDE_TOPIC, 1, 1)], operation_timeout=10)[SIDE_TOPIC].result(20) is None
    side = SideLoad(broker.bootstrap).start()
    yield broker, side
    assert broker.alive()
    side.finish()
    assert broker.alive()
    assert read_side(broker.bootstrap, len(side.sent)) == [b"side-%d" % n for n in side.sent]
    broker.stop()
    assert "Traceback" not in broker.log_text(), broker.log_text()


@pytest.fixture
def target(shared, request):
    """A fresh topic on the shared broker; after the test the broker is alive and the side
    producer has gone on producing without an error while the test ran."""
    broker, side = shared
    topic = "t-" + re.sub(r"[^a-zA-Z0-9._-]", "_", request.node.name)[-200:]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert admin.create_topics([NewTopic(topic, 2, 1)], operation_timeout=10)[topic].result(20) is None
    acked_before = len(side.acked)
    yield Target(broker, topic)
    assert broker.alive()
    deadline = time.monotonic() + 10
    while len(side.acked) <= acked_before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert side.errors == []
    assert len(side.acked) > acked_before, "the side producer stalled"


# ---------------------------------------------------------------------------- framing

def test_a_size_prefix_of_2_gib_closes_the_connection(target):
    raw = Raw(target.port)
    raw.send(struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 64)
    raw.assert_closed_without_answer()


@pytest.mark.parametrize("size", [-1, -0x80000000, -5])
def test_a_negative_size_prefix_closes_the_connection(target, size):
    raw = Raw(target.port)
    raw.send(struct.pack(">i", size))
    raw.assert_closed_without_answer()


def test_a_frame_one_byte_above_socket_request_max_bytes_closes_and_one_at_the_limit_waits(broker_factory):
    b = broker_factory(**{"socket.request.max.bytes": "1000"})
    over = Raw(b.port)
    over.send(struct.pack(">i", 1001))
    over.assert_closed_without_answer()
    at = Raw(b.port)
    at.send(struct.pack(">i", 1000) + b"\x00" * 10)
    at.assert_silent(0.5)
    # and an ordinary request on another connection is answered
    assert advertised_versions(b.port)[18] == (0, 4)
    assert b.alive()


def test_an_empty_frame_closes_the_connection(target):
    raw = Raw(target.port)
    raw.send(frame(b""))
    raw.assert_closed_without_answer()


def test_a_frame_promising_more_bytes_than_sent_waits_and_is_answered_once_complete(target):
    full = encode_request(metadata_request(), 12, 41, "raw-test")
    raw = Raw(target.port)
    raw.send(full[:-3])
    raw.assert_silent(0.5)
    raw.send(full[-3:])
    corr, resp = raw.response(MetadataResponse, 12)
    assert corr == 41
    assert target.topic in {t.name for t in resp.topics} and SIDE_TOPIC in {t.name for t in resp.topics}


def test_a_request_sent_one_byte_at_a_time_is_answered(target):
    full = encode_request(list_offsets_request(target.topic, 1, -2), 7, 42, "raw-test")
    raw = Raw(target.port)
    raw.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(len(full)):
        raw.send(full[i : i + 1])
    corr, resp = raw.response(ListOffsetsResponse, 7)
    p = resp.topics[0].partitions[0]
    assert (corr, p.partition_index, p.error_code, p.offset) == (42, 1, 0, 0)


@pytest.mark.parametrize("cut", [1, 5, 9, 20])
def test_a_truncated_body_inside_an_honest_frame_closes_the_connection(target, cut):
    """The size prefix matches what is sent, but the request inside it is cut short."""
    full = encode_request(produce_request(target.topic, a_batch()), 9, 43, "raw-test")
    body = full[4:-cut]
    raw = Raw(target.port)
    raw.send(frame(body))
    raw.assert_closed_without_answer()
    assert high_watermark(target.port, target.topic) == 0


@pytest.mark.parametrize("cut", [2, 6, 9])
def test_a_frame_too_short_for_its_header_closes_the_connection(target, cut):
    full = encode_request(metadata_request(), 12, 44, "raw-test")
    raw = Raw(target.port)
    raw.send(frame(full[4 : 4 + cut]))
    raw.assert_closed_without_answer()


def test_random_garbage_frames_get_an_answer_with_their_correlation_id_or_a_close(target):
    """Seeded random frames: an unknown API key or an unsupported version must close; a
    known key/version whose body parses must be answered with the frame's correlation id;
    nothing else is allowed (no answer with another id, no hang)."""
    versions = advertised_versions(target.port)
    rng = random.Random(4)
    outcomes = {"closed": 0, "answered": 0}
    for _ in range(60):
        kind = rng.randrange(3)
        if kind == 0:      # anything at all
            body = rng.randbytes(rng.randrange(8, 200))
        elif kind == 1:    # a known key and version, random body
            key = rng.choice(sorted(versions))
            lo, hi = versions[key]
            body = struct.pack(">hhi", key, rng.randint(lo, hi), rng.randrange(1 << 31)) + rng.randbytes(
                rng.randrange(0, 120))
        else:              # a valid request with a few bytes overwritten after the header
            good = bytearray(encode_request(produce_request(target.topic, a_batch(2)), 9, rng.randrange(1 << 31), "raw-test")[4:])
            for _ in range(rng.randint(1, 4)):
                good[rng.randrange(18, len(good))] = rng.randrange(256)
            body = bytes(good)
        key, version, corr = struct.unpack(">hhi", body[:8])
        supported = key in versions and versions[key][0] <= version <= versions[key][1]
        raw = Raw(target.port)
        try:
            raw.send(frame(body))
            if not supported and key != 18:
                raw.assert_closed_without_answer()
                outcomes["closed"] += 1
                continue
            try:
                answer = raw.read_frame(10)
            except Closed as e:
                assert str(e) == "closed with 0 unread bytes"
                outcomes["closed"] += 1
                continue
            except TimeoutError:
                # only an acks=0 Produce may go unanswered
                header, at = decode_request_header(body)
                assert decode_at(ProduceRequest, body, header.request_api_version, at)[0].acks == 0
                outcomes["unanswered acks=0"] = outcomes.get("unanswered acks=0", 0) + 1
                continue
            assert struct.unpack(">i", answer[:4])[0] == corr
            outcomes["answered"] += 1
        finally:
            raw.close()
    assert outcomes["closed"] > 0 and sum(outcomes.values()) == 60
    assert target.alive()


# ---------------------------------------------------------------------------- headers and versions

@pytest.mark.parametrize("api_key", [9999, 32, 68, -1])
def test_an_unknown_or_unimplemented_api_key_closes_the_connection(target, api_key):
    raw = Raw(target.port)
    raw.send(frame(struct.pack(">hhih", api_key, 0, 5, -1) + b"\x00" * 8))
    raw.assert_closed_without_answer()


@pytest.mark.parametrize(("api_key", "version"), [(1, 3), (1, 13), (2, 0), (3, 13), (0, 10), (22, 5)])
def test_a_known_api_key_at_an_unsupported_version_closes_the_connection(target, api_key, version):
    raw = Raw(target.port)
    raw.send(frame(struct.pack(">hhih", api_key, version, 6, -1) + b"\x00" * 32))
    raw.assert_closed_without_answer()


def test_api_versions_at_an_unknown_version_gets_error_35_in_the_v0_layout_and_the_connection_stays_open(target):
    versions = advertised_versions(target.port)
    raw = Raw(target.port)
    raw.send(frame(struct.pack(">hhih", 18, 99, 12345, 3) + b"raw" + b"\x00" * 5))
    corr, resp = raw.response(ApiVersionsResponse, 0)
    assert (corr, resp.error_code) == (12345, UNSUPPORTED_VERSION)
    assert {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys} == versions
    assert len(resp.api_keys) == len(versions)
    # still open: the client retries at a version it now knows
    raw.request(ApiVersionsRequest(client_software_name="raw-test", client_software_version="1"), 3, 12346)
    corr, resp = raw.response(ApiVersionsResponse, 3)
    assert (corr, resp.error_code) == (12346, 0)


def test_a_flexible_request_sent_without_its_header_tag_section_closes_the_connection(target):
    """Metadata v12 wants request header v2 (with a tagged-field section); this one lies
    and sends header v1, so the body is read one byte late and runs short."""
    good = encode_request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 12, 47, "raw-test")[4:]
    header_v1_len = 8 + 2 + len(b"raw-test")
    assert good[header_v1_len] == 0  # the empty tag section the lie leaves out
    raw = Raw(target.port)
    raw.send(frame(good[:header_v1_len] + good[header_v1_len + 1 :]))
    raw.assert_closed_without_answer()


def test_a_client_id_longer_than_the_frame_closes_the_connection(target):
    raw = Raw(target.port)
    raw.send(frame(struct.pack(">hhih", 3, 1, 48, 500) + b"short"))
    raw.assert_closed_without_answer()


def test_a_header_tag_section_running_past_the_frame_closes_the_connection(target):
    raw = Raw(target.port)
    # Metadata v12 header v2: client_id null, then 1 tagged field of 100 bytes that is not there
    raw.send(frame(struct.pack(">hhih", 3, 12, 49, -1) + b"\x01\x00\x64" + b"\x00" * 4))
    raw.assert_closed_without_answer()


# ---------------------------------------------------------------------------- produce

@pytest.mark.parametrize("where", ["value", "crc", "attributes", "record count"])
def test_a_produce_with_a_corrupted_batch_gets_corrupt_message_and_the_connection_stays_open(target, where):
    batch = bytearray(a_batch(5))
    pos = {"value": len(batch) - 6, "crc": 17, "attributes": 22, "record count": 59}[where]
    batch[pos] ^= 0x04
    raw = Raw(target.port)
    raw.request(produce_request(target.topic, bytes(batch)), 9, 50)
    corr, resp = raw.response(ProduceResponse, 9)
    p = resp.responses[0].partition_responses[0]
    assert (corr, resp.responses[0].name, p.index, p.error_code, p.base_offset) == (50, target.topic, 0, CORRUPT_MESSAGE, -1)
    # nothing was written, and the same connection goes on
    raw.request(produce_request(target.topic, a_batch(5)), 9, 51)
    corr, resp = raw.response(ProduceResponse, 9)
    p = resp.responses[0].partition_responses[0]
    assert (corr, p.error_code, p.base_offset) == (51, 0, 0)
    assert high_watermark(target.port, target.topic) == 5


def test_a_produce_with_a_corrupted_compressed_batch_gets_corrupt_message(target):
    batch = bytearray(a_batch(50, compression=Compression.GZIP))
    batch[len(batch) // 2 + 30] ^= 0x80
    raw = Raw(target.port)
    raw.request(produce_request(target.topic, bytes(batch)), 9, 52)
    corr, resp = raw.response(ProduceResponse, 9)
    p = resp.responses[0].partition_responses[0]
    assert (corr, p.error_code, p.base_offset) == (52, CORRUPT_MESSAGE, -1)
    assert high_watermark(target.port, target.topic) == 0


def test_a_produce_whose_batch_is_not_magic_2_gets_invalid_record(target):
    batch = bytearray(a_batch(2))
    batch[16] = 1  # magic
    raw = Raw(target.port)
    raw.request(produce_request(target.topic, bytes(batch)), 9, 53)
    corr, resp = raw.response(ProduceResponse, 9)
    p = resp.responses[0].partition_responses[0]
    assert (corr, p.error_code, p.base_offset) == (53, INVALID_RECORD, -1)
    assert high_watermark(target.port, target.topic) == 0


def test_transactional_records_without_a_transactional_id_fail_the_whole_request(target):
    """KafkaApis.handleProduceRequest: TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
    partition when a batch is transactional and the request has no transactional id."""
    txn = build_batch([(b"k", b"v", None, 1_700_000_000_000)], producer_id=1000, producer_epoch=0,
                      base_sequence=0, is_transactional=True)
    req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=10_000, topic_data=[
        ProduceRequest.TopicProduceData(name=target.topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=a_batch(2)),
            ProduceRequest.PartitionProduceData(index=1, records=txn)])])
    raw = Raw(target.port)
    raw.request(req, 9, 55)
    corr, resp = raw.response(ProduceResponse, 9)
    assert corr == 55
    assert [(p.index, p.error_code, p.base_offset, p.error_message)
            for p in resp.responses[0].partition_responses] == [
        (0, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "Transactional Id authorization failed."),
        (1, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "Transactional Id authorization failed.")]
    assert (high_watermark(target.port, target.topic, 0), high_watermark(target.port, target.topic, 1)) == (0, 0)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_below_v3_is_answered_unsupported_version_per_partition(target, version):
    req = ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[
        ProduceRequest.TopicProduceData(name=target.topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=a_batch(1)),
            ProduceRequest.PartitionProduceData(index=1, records=a_batch(1))])])
    raw = Raw(target.port)
    raw.request(req, version, 54)
    corr, resp = raw.response(ProduceResponse, version)
    assert corr == 54
    assert [(t.name, [(p.index, p.error_code, p.base_offset) for p in t.partition_responses])
            for t in resp.responses] == [(target.topic, [(0, UNSUPPORTED_VERSION, -1), (1, UNSUPPORTED_VERSION, -1)])]
    assert (high_watermark(target.port, target.topic, 0), high_watermark(target.port, target.topic, 1)) == (0, 0)


def test_an_acks_0_produce_gets_no_response_and_the_next_request_gets_its_own_correlation_id(target):
    raw = Raw(target.port)
    raw.request(produce_request(target.topic, a_batch(4), acks=0), 9, 60)
    raw.request(metadata_request(), 12, 61)
    corr, resp = raw.response(MetadataResponse, 12)
    assert corr == 61
    raw.assert_silent(0.3)
    assert high_watermark(target.port, target.topic) == 4  # it was written all the same


def test_fifty_pipelined_requests_are_answered_in_request_order(target):
    """Mixed APIs in one write, a long-polling Fetch among them: the answers leave in
    request order.  Kafka reads nothing behind a parked Fetch until it answers; kbroker reads
    on and answers a parked Fetch (empty) once a later request is read (NOT_IMPLEMENTED.md),
    so there only the last Fetch waits its max_wait."""
    kinds = []
    raw = Raw(target.port)
    out = b""
    for i in range(50):
        corr = 1000 + i
        k = i % 5
        if k == 0:
            out += encode_request(ApiVersionsRequest(client_software_name="raw", client_software_version="1"), 3, corr)
        elif k == 1:
            out += encode_request(metadata_request(), 12, corr)
        elif k == 2:
            out += encode_request(produce_request(target.topic, a_batch(2, tag=b"pipe-%d" % i), acks=1, partition=1), 9, corr)
        elif k == 3:
            out += encode_request(list_offsets_request(target.topic, 1, -1), 7, corr)
        else:
            # at the high watermark after this pipeline's produces so far: parks for max_wait
            out += encode_request(FetchRequest(replica_id=-1, max_wait_ms=100, min_bytes=1 << 20, max_bytes=1 << 20,
                                               isolation_level=0, session_id=0, session_epoch=-1, topics=[
                FetchRequest.FetchTopic(topic=target.topic, partitions=[FetchRequest.FetchPartition(
                    partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                    partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id=""), 12, corr)
        kinds.append(k)
    t0 = time.monotonic()
    raw.send(out)
    types = {0: (ApiVersionsResponse, 3), 1: (MetadataResponse, 12), 2: (ProduceResponse, 9),
             3: (ListOffsetsResponse, 7), 4: (FetchResponse, 12)}
    seen = []
    produced_offsets = []
    listed = []
    for k in kinds:
        cls, v = types[k]
        corr, resp = raw.response(cls, v, timeout_s=20)
        seen.append(corr)
        if k == 2:
            p = resp.responses[0].partition_responses[0]
            assert p.error_code == 0
            produced_offsets.append(p.base_offset)
        elif k == 3:
            listed.append(resp.topics[0].partitions[0].offset)
        elif k == 4:
            p = resp.responses[0].partitions[0]
            assert (p.error_code, p.high_watermark, bytes(p.records or b"")) == (0, 0, b"")
    elapsed = time.monotonic() - t0
    assert seen == [1000 + i for i in range(50)]
    assert produced_offsets == [2 * j for j in range(10)]
    # each ListOffsets right after a produce sees that produce
    assert listed == [2 * (j + 1) for j in range(10)]
    assert elapsed >= 0.09  # the (last) fetch did park
    raw.assert_silent(0.2)


def test_a_fetch_parked_on_a_topic_that_gets_deleted_answers_unknown_topic_at_once(target):
    raw = Raw(target.port)
    raw.request(FetchRequest(replica_id=-1, max_wait_ms=5_000, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                             session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                                 topic=target.topic, partitions=[FetchRequest.FetchPartition(
                                     partition=1, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                     partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id=""), 12, 70)
    raw.assert_silent(0.3)  # parked
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{target.port}"})
    t0 = time.monotonic()
    assert admin.delete_topics([target.topic], operation_timeout=10)[target.topic].result(20) is None
    corr, resp = raw.response(FetchResponse, 12, timeout_s=10)
    waited = time.monotonic() - t0
    p = resp.responses[0].partitions[0]
    assert (corr, p.partition_index, p.error_code) == (70, 1, 3)  # UNKNOWN_TOPIC_OR_PARTITION
    assert waited < 2.0, f"answered only after {waited:.1f} s (max_wait_ms is 5 s)"
