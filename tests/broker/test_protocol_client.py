"""kbroker.client against a real broker started in-process (and, for what a broker never
does on purpose, a scripted peer on a plain socket): version negotiation, correlation ids,
timeouts, closed connections, SASL and TLS, in the blocking and the asyncio flavour."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kbroker import Broker
from kbroker.client import (
    AsyncConnection,
    ClientError,
    Connection,
    ConnectionClosed,
    CorrelationMismatch,
    RequestTimeout,
    SaslAuthenticationFailed,
    SaslCredentials,
    UnsupportedVersion,
    VersionTable,
    error_name,
)
from kbroker.client.sasl import salted_password
from wire.error_codes import ErrorCode
from wire.headers import decode_request_header, encode_response
from wire.messages import (
    AlterUserScramCredentialsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    FetchRequest,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)
from wire.record_batch import build_batch
from wire.schema import REQUESTS

TOPIC = "client-test"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> Iterator[Any]:
    """One broker for the module: PLAINTEXT and SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256), with
    topic ``client-test`` and the SCRAM user ``bob``."""
    b = Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                      "log.dirs": str(tmp_path_factory.mktemp("client")),
                      "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                      "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS})
    try:
        with Connection.open(*address(b)) as c:
            created = c.call(CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[
                CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1,
                                                   assignments=[], configs=[])]))
            assert created.topics[0].error_code == ErrorCode.NONE
            salt = os.urandom(16)
            scram = c.call(AlterUserScramCredentialsRequest(deletions=[], upsertions=[
                AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
                    name="bob", mechanism=1, iterations=4096, salt=salt,
                    salted_password=salted_password("SCRAM-SHA-256", "bob-secret", salt, 4096))]))
            assert scram.results[0].error_code == ErrorCode.NONE
        yield b
    finally:
        b.stop()


def address(b: Any, listener: str = "PLAINTEXT") -> tuple[str, int]:
    return "127.0.0.1", b.broker.listener_ports[listener]


def metadata(topics: list[str] | None = None) -> MetadataRequest:
    return MetadataRequest(topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t)
                                                                for t in topics],
                           allow_auto_topic_creation=False)


def list_offsets(timestamp: int = -1) -> ListOffsetsRequest:
    return ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=timestamp)])])


def codec_max(api_key: int) -> int:
    lo, hi = REQUESTS[api_key].valid
    return hi if hi is not None else lo


# ------------------------------------------------------------------------ versions

def test_a_connection_negotiates_the_highest_version_both_sides_know(broker):
    with Connection.open(*address(broker)) as c:
        assert c.versions is not None
        for api_key, (lo, hi) in c.versions.ranges.items():
            if api_key in REQUESTS and max(lo, REQUESTS[api_key].valid[0]) <= min(hi, codec_max(api_key)):
                assert c.version_for(api_key) == min(hi, codec_max(api_key)), api_key
        answer = c.call(metadata([TOPIC]))
        assert [t.name for t in answer.topics] == [TOPIC]


def test_a_callers_cap_holds_a_version_down_and_a_cap_for_one_call_lowers_it_further(broker):
    with Connection.open(*address(broker), caps={3: 9, 2: 5}) as c:
        assert (c.version_for(3), c.version_for(2), c.version_for(2, cap=1)) == (9, 5, 1)
        assert c.version_for(3, cap=12) == 9   # a per-call cap never raises the caller's own


def test_an_api_the_broker_lacks_or_shares_no_version_of_raises_unsupported_version():
    table = VersionTable({3: (0, 12), 1: (4, 17)}, caps={1: 3})
    with pytest.raises(UnsupportedVersion, match="the broker does not support Produce") as lacking:
        table.pick(0)
    assert lacking.value.code == ErrorCode.UNSUPPORTED_VERSION
    with pytest.raises(UnsupportedVersion, match="no common version of Fetch"):
        table.pick(1)   # the broker starts at 4, the caller stops at 3
    assert table.supports(3) and not table.supports(0)
    assert error_name(35) == "UNSUPPORTED_VERSION" and error_name(9999) == "error code 9999"


def test_a_call_without_a_version_on_a_connection_that_did_not_negotiate_is_refused_before_sending(broker):
    with Connection.open(*address(broker), negotiate=False) as c:
        with pytest.raises(ClientError, match="give Metadata's version"):
            c.call(metadata())
        assert not c.closed and c.call(metadata(), 12).brokers


def test_an_api_versions_version_the_broker_does_not_know_is_asked_again_at_the_brokers_highest():
    """KIP-511: an older broker answers UNSUPPORTED_VERSION in the v0 layout with its own
    ApiVersions range; the client asks again at that range's top and uses the answer."""
    asked: list[int] = []

    def answer(api_key: int, version: int, cid: int) -> list[Any] | None:
        asked.append(version)
        keys = [ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=2),
                ApiVersionsResponse.ApiVersion(api_key=3, min_version=0, max_version=8)]
        if version == 3:
            return encode_response(ApiVersionsResponse(error_code=35, api_keys=keys[:1]), 0, cid)
        return encode_response(ApiVersionsResponse(error_code=0, api_keys=keys), version, cid)

    with ScriptedPeer(answer) as peer, Connection.open("127.0.0.1", peer.port) as c:
        assert asked == [3, 2]
        assert c.version_for(3) == 8


# ------------------------------------------------------------------------ correlation ids

def test_pipelined_requests_are_answered_in_order_with_their_correlation_ids(broker):
    with Connection.open(*address(broker), negotiate=False) as c:
        first = c.send(metadata(), 12)
        second = c.send(list_offsets(), 7)
        chosen = c.send(metadata(), 12, correlation_id=4242)
        assert (first, second, chosen, c.last_correlation_id) == (1, 2, 4242, 2)
        assert c.receive(MetadataResponse, 12)[0] == 1
        assert c.receive(ListOffsetsResponse, 7)[0] == 2
        assert c.receive(MetadataResponse, 12)[0] == 4242


def test_an_answer_to_another_correlation_id_raises_and_closes_the_connection():
    def answer(api_key: int, version: int, cid: int) -> list[Any] | None:
        return encode_response(MetadataResponse(brokers=[], topics=[]), version, cid + 1)

    with ScriptedPeer(answer) as peer, Connection.open("127.0.0.1", peer.port, negotiate=False) as c:
        with pytest.raises(CorrelationMismatch, match="correlation id 2 answered for 1"):
            c.call(metadata(), 9)
        assert c.closed


def test_a_produce_with_acks_0_returns_none_and_the_next_answer_is_the_next_requests(broker):
    with Connection.open(*address(broker)) as c:
        produce = ProduceRequest(transactional_id=None, acks=0, timeout_ms=10_000, topic_data=[
            ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(
                index=0, records=build_batch([(b"k", b"v", [], 1_700_000_000_000)]))])])
        before = c.call(list_offsets()).topics[0].partitions[0].offset
        assert c.call(produce) is None
        after = c.call(list_offsets()).topics[0].partitions[0].offset
        assert after == before + 1


# ------------------------------------------------------------------------ failures

def test_a_request_the_broker_cannot_read_closes_the_connection_and_raises_connection_closed(broker):
    with Connection.open(*address(broker)) as c:
        assert c.versions is not None
        unserved = c.versions.ranges[3][1] + 1
        if unserved > codec_max(3):
            pytest.skip("the broker serves every Metadata version the codec knows")
        with pytest.raises(ConnectionClosed) as closed:   # Kafka closes on an unsupported version
            c.call(metadata(), unserved)
        assert closed.value.unread == 0 and c.closed
        with pytest.raises(ConnectionClosed, match="this connection is closed"):
            c.call(metadata())


def test_a_request_unanswered_within_its_timeout_raises_request_timeout_and_closes_the_connection(broker):
    parked = FetchRequest(replica_id=-1, max_wait_ms=30_000, min_bytes=1 << 30, max_bytes=1 << 20, isolation_level=0,
                          session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[], topics=[
                              FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchPartition(
                                  partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                  partition_max_bytes=1 << 20)])])
    with Connection.open(*address(broker), timeout_s=10) as c:
        with pytest.raises(RequestTimeout):
            c.call(parked, 12, timeout_s=0.3)
        assert c.closed


def test_a_receive_that_timed_out_can_wait_again_for_the_same_answer(broker):
    with Connection.open(*address(broker), negotiate=False) as c:
        with pytest.raises(TimeoutError):
            c.read_frame(timeout_s=0.05)   # nothing asked yet
        c.send(metadata(), 12)
        assert c.receive(MetadataResponse, 12)[0] == 1


def test_malformed_bytes_sent_raw_make_the_broker_close_the_connection(broker):
    with Connection.open(*address(broker), negotiate=False) as c:
        c.send_raw(struct.pack(">ihhih", 10, 9999, 0, 5, -1))   # an unknown api key
        with pytest.raises(ConnectionClosed) as closed:
            c.read_frame()
        assert closed.value.unread == 0


# ------------------------------------------------------------------------ SASL and TLS

@pytest.mark.parametrize(("mechanism", "user", "password"), [("PLAIN", "alice", "alice-secret"),
                                                              ("SCRAM-SHA-256", "bob", "bob-secret")])
def test_sasl_logs_in_with_the_right_password_and_raises_with_a_wrong_one(broker, mechanism, user, password):
    where = address(broker, "SASL_PLAINTEXT")
    with Connection.open(*where, sasl=SaslCredentials(mechanism, user, password)) as c:
        assert [t.name for t in c.call(metadata([TOPIC])).topics] == [TOPIC]
    with pytest.raises(SaslAuthenticationFailed, match=f"SASL {mechanism} authentication as {user} failed"):
        Connection.open(*where, sasl=SaslCredentials(mechanism, user, "wrong"))

    async def main() -> list[str]:
        async with await AsyncConnection.open(*where, sasl=SaslCredentials(mechanism, user, password)) as a:
            return [t.name for t in (await a.call(metadata([TOPIC]))).topics]
    assert asyncio.run(main()) == [TOPIC]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the test certificates are made with openssl")
def test_tls_connections_check_the_brokers_certificate_and_speak_through_it(tmp_path):
    from tests.support.security_certs import make_certs

    certs = make_certs(str(tmp_path / "certs"))
    with Broker.start({"listeners": "SSL://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
                       "ssl.keystore.type": "PEM", "ssl.keystore.location": f"{certs}/broker.pem"}) as b:
        trusting = ssl.create_default_context(cafile=f"{certs}/ca.crt")
        with Connection.open(*address(b, "SSL"), ssl_context=trusting) as c:
            assert c.call(metadata()).brokers[0].port == b.broker.listener_ports["SSL"]

        async def main() -> int:
            async with await AsyncConnection.open(*address(b, "SSL"), ssl_context=trusting) as a:
                return len((await a.call(metadata())).brokers)
        assert asyncio.run(main()) == 1
        with pytest.raises(ssl.SSLCertVerificationError):
            Connection.open(*address(b, "SSL"), ssl_context=ssl.create_default_context(cafile=f"{certs}/other-ca.crt"))


# ------------------------------------------------------------------------ asyncio

def test_the_async_connection_answers_concurrent_callers_one_request_at_a_time(broker):
    async def main() -> tuple[list[int], int]:
        async with await AsyncConnection.open(*address(broker), caps={3: 9}) as a:
            answers = await asyncio.gather(*(a.call(metadata([TOPIC])) for _ in range(20)))
            return [len(m.topics) for m in answers], a.version_for(3)
    assert asyncio.run(main()) == ([1] * 20, 9)


def test_the_async_connection_times_out_against_a_peer_that_never_answers_and_closes():
    with socket.create_server(("127.0.0.1", 0)) as silent:   # accepted by the kernel, never read
        port = silent.getsockname()[1]

        async def main() -> bool:
            with pytest.raises(RequestTimeout):   # its ApiVersions is never answered
                await AsyncConnection.open("127.0.0.1", port, timeout_s=0.3)
            a = await AsyncConnection.open("127.0.0.1", port, negotiate=False)
            with pytest.raises(RequestTimeout):
                await a.call(metadata(), 12, timeout_s=0.2)
            with pytest.raises(ConnectionClosed, match="this connection is closed"):
                await a.call(metadata(), 12)
            return a.closed
        assert asyncio.run(main())


def test_the_async_connection_raises_connection_closed_when_the_broker_closes(broker):
    async def main() -> bool:
        a = await AsyncConnection.open(*address(broker))
        unserved = (a.versions.ranges[3][1] + 1) if a.versions else 99
        if unserved > codec_max(3):
            await a.aclose()
            pytest.skip("the broker serves every Metadata version the codec knows")
        with pytest.raises(ConnectionClosed):
            await a.call(metadata(), unserved)
        return a.closed
    assert asyncio.run(main())


# ------------------------------------------------------------------------ a scripted peer

class ScriptedPeer:
    """A one-connection peer on a plain socket: each request frame is answered with
    ``answer(api_key, version, correlation_id)`` (response parts; None: no answer)."""

    def __init__(self, answer: Callable[[int, int, int], list[Any] | None]) -> None:
        self.answer = answer
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> ScriptedPeer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.close()
        self.thread.join(10)

    def _serve(self) -> None:
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        with conn:
            while (head := _read(conn, 4)) is not None:
                frame = _read(conn, struct.unpack(">i", head)[0])
                if frame is None:
                    return
                header, _ = decode_request_header(frame)
                parts = self.answer(header.request_api_key, header.request_api_version, header.correlation_id)
                if parts is not None:
                    conn.sendall(b"".join(bytes(p) for p in parts))


def _read(conn: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf
