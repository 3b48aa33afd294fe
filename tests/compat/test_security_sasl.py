"""SASL_PLAINTEXT against a real broker process: stock clients (confluent-kafka, kafka-python,
aiokafka, kcat) produce and consume with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; bad
credentials are refused with Kafka's texts; hostile input on raw sockets closes only its
connection (Kafka's SaslServerAuthenticator rules); KIP-368 session expiry.

The broker has a PLAINTEXT listener too (SCRAM users are created through it with
AlterUserScramCredentials) and advertises, on each listener, that listener's port.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from tests.compat.test_bad_input import Raw, frame
from tests.support.security_helpers import (
    MECHANISMS,
    USERS,
    ScramClient,
    aiokafka_round_trip,
    confluent_conf,
    start_secure_broker,
)
from wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 33, 34, 58


@pytest.fixture
def secure(tmp_path):
    b = start_secure_broker(tmp_path / "data")
    yield b
    b.stop()
    assert "Traceback" not in b.log_text(), b.log_text()


def produce_and_consume(conf: dict[str, str], n: int = 20) -> list[bytes]:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    p = Producer(conf)
    for i in range(n):
        p.produce(topic, b"m%d" % i)
    assert p.flush(60) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(1)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    return got


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_produces_and_consumes_over_sasl_plaintext(secure, mechanism):
    conf = confluent_conf(secure.ports["SASL_PLAINTEXT"], mechanism)
    assert produce_and_consume(conf) == [b"m%d" % i for i in range(20)]
    md = AdminClient(conf).list_topics(timeout=30)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", secure.ports["SASL_PLAINTEXT"])]
    md = AdminClient({"bootstrap.servers": secure.bootstrap}).list_topics(timeout=30)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", secure.port)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_produces_and_consumes_over_sasl_plaintext(secure, mechanism):
    import kafka

    user, pw = USERS[mechanism]
    common = dict(bootstrap_servers=f"127.0.0.1:{secure.ports['SASL_PLAINTEXT']}", security_protocol="SASL_PLAINTEXT",
                  sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=pw)
    topic = f"kp-{mechanism.lower()}"
    p = kafka.KafkaProducer(**common)
    for i in range(10):
        p.send(topic, b"v%d" % i)
    p.flush(60)
    p.close()
    c = kafka.KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=20000, **common)
    got = [m.value for m in c][:10]
    c.close()
    assert got == [b"v%d" % i for i in range(10)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_produces_and_consumes_over_sasl_plaintext(secure, mechanism):
    user, pw = USERS[mechanism]
    common = dict(bootstrap_servers=f"127.0.0.1:{secure.ports['SASL_PLAINTEXT']}", security_protocol="SASL_PLAINTEXT",
                  sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=pw)
    values = [b"a%d" % i for i in range(10)]
    assert aiokafka_round_trip(f"aio-{mechanism.lower()}", values, **common) == values


def test_kcat_produces_and_consumes_with_scram_sha_512(secure, tmp_path):
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.fail("kcat is not on PATH (make deps-system)")
    user, pw = USERS["SCRAM-SHA-512"]
    args = ["-b", f"127.0.0.1:{secure.ports['SASL_PLAINTEXT']}", "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", f"sasl.username={user}", "-X", f"sasl.password={pw}"]
    subprocess.run([kcat, "-P", *args, "-t", "kc"], input="one\ntwo\nthree\n", text=True, check=True, timeout=120)
    out = subprocess.run([kcat, "-C", *args, "-t", "kc", "-o", "beginning", "-e", "-q"], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    assert out.split() == ["one", "two", "three"]


@pytest.mark.parametrize(("mechanism", "password", "user", "message"), [
    ("PLAIN", "wrong", None, "Authentication failed: Invalid username or password"),
    ("PLAIN", None, "mallory", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "wrong", None,
     "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"),
    ("SCRAM-SHA-512", None, "mallory",
     "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"),
])
def test_wrong_credentials_are_refused_with_kafkas_message(secure, mechanism, password, user, message):
    errors: list[str] = []
    seen = threading.Event()

    def on_error(e) -> None:
        errors.append(e.str())
        seen.set()

    conf = confluent_conf(secure.ports["SASL_PLAINTEXT"], mechanism, password=password, error_cb=on_error)
    if user is not None:
        conf["sasl.username"] = user
    p = Producer(conf)
    deadline = time.monotonic() + 60
    while not seen.is_set() and time.monotonic() < deadline:
        p.poll(0.5)
    assert any(message in e for e in errors), errors
    with pytest.raises(KafkaException):   # nothing is served to it
        AdminClient(conf).list_topics(timeout=3)


# ---------------------------------------------------------------- raw sockets
def handshake(raw: Raw, mechanism: str, version: int = 1) -> SaslHandshakeResponse:
    raw.request(SaslHandshakeRequest(mechanism=mechanism), version, 1)
    return raw.response(SaslHandshakeResponse, version)[1]


def authenticate(raw: Raw, token: bytes, corr: int = 2, version: int = 1) -> SaslAuthenticateResponse:
    raw.request(SaslAuthenticateRequest(auth_bytes=token), version, corr)
    return raw.response(SaslAuthenticateResponse, version)[1]


def test_a_request_before_authentication_closes_the_connection_and_others_go_on(secure):
    good = Producer(confluent_conf(secure.ports["SASL_PLAINTEXT"], "PLAIN"))
    raw = Raw(secure.ports["SASL_PLAINTEXT"])
    raw.request(MetadataRequest(topics=None, allow_auto_topic_creation=True), 4, 1)
    raw.assert_closed_without_answer()
    good.produce("after-raw", b"x")
    assert good.flush(60) == 0


def test_api_versions_then_an_unknown_mechanism_is_answered_with_the_enabled_list_then_closed(secure):
    raw = Raw(secure.ports["SASL_PLAINTEXT"])
    raw.request(ApiVersionsRequest(), 0, 0)
    versions = raw.response(ApiVersionsResponse, 0)[1]
    keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert keys[17] == (0, 1) and keys[36] == (0, 2)
    answer = handshake(raw, "GSSAPI")
    assert (answer.error_code, answer.mechanisms) == (UNSUPPORTED_SASL_MECHANISM, list(MECHANISMS))
    raw.assert_closed_without_answer()


def test_plain_over_raw_frames_and_kip_152_frames_authenticate(secure):
    raw = Raw(secure.ports["SASL_PLAINTEXT"])    # SaslHandshake v0: raw tokens
    assert handshake(raw, "PLAIN", version=0).error_code == 0
    raw.send(frame(b"\0alice\0alice-secret"))
    assert raw.read_frame() == b""
    raw.request(MetadataRequest(topics=None, allow_auto_topic_creation=True), 4, 5)
    assert raw.response(MetadataResponse, 4)[0] == 5
    raw = Raw(secure.ports["SASL_PLAINTEXT"])    # v1: SaslAuthenticate
    assert handshake(raw, "PLAIN").error_code == 0
    ok = authenticate(raw, b"\0alice\0alice-secret")
    assert (ok.error_code, ok.session_lifetime_ms) == (0, 0)
    # after authentication, Kafka's KafkaApis answers these ILLEGAL_SASL_STATE
    again = authenticate(raw, b"\0alice\0alice-secret", corr=3)
    assert (again.error_code, again.error_message) == (
        ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication")


@pytest.mark.parametrize(("token", "message"), [
    (b"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"\0\0pw", "Authentication failed: username not specified"),
    (b"bob\0alice\0alice-secret",
     "Authentication failed: Client requested an authorization id that is different from username"),
])
def test_malformed_plain_tokens_are_refused_and_close_only_that_connection(secure, token, message):
    other = Raw(secure.ports["SASL_PLAINTEXT"])
    assert handshake(other, "PLAIN").error_code == 0
    raw = Raw(secure.ports["SASL_PLAINTEXT"])
    assert handshake(raw, "PLAIN").error_code == 0
    answer = authenticate(raw, token)
    assert (answer.error_code, answer.error_message) == (SASL_AUTHENTICATION_FAILED, message)
    raw.assert_closed_without_answer()
    assert authenticate(other, b"\0alice\0alice-secret").error_code == 0


def test_an_oversized_frame_during_authentication_closes_the_connection(secure):
    raw = Raw(secure.ports["SASL_PLAINTEXT"])
    assert handshake(raw, "PLAIN").error_code == 0
    raw.send((600_000).to_bytes(4, "big") + b"\0" * 1000)   # above sasl.server.max.receive.size
    raw.assert_closed_without_answer()


def test_a_non_authenticate_request_during_authentication_closes_the_connection(secure):
    raw = Raw(secure.ports["SASL_PLAINTEXT"])
    assert handshake(raw, "SCRAM-SHA-256").error_code == 0
    raw.request(MetadataRequest(topics=None, allow_auto_topic_creation=True), 4, 2)
    raw.assert_closed_without_answer()


def test_a_replayed_scram_final_message_fails_on_a_new_connection(secure):
    user, pw = USERS["SCRAM-SHA-256"]
    client = ScramClient("SCRAM-SHA-256", user, pw)
    first = Raw(secure.ports["SASL_PLAINTEXT"])
    assert handshake(first, "SCRAM-SHA-256").error_code == 0
    server_first = authenticate(first, client.first()).auth_bytes
    final = client.final(server_first)
    done = authenticate(first, final, corr=3)
    assert done.error_code == 0 and done.auth_bytes.startswith(b"v=")
    replay = Raw(secure.ports["SASL_PLAINTEXT"])   # same client-first, same final: new server nonce
    assert handshake(replay, "SCRAM-SHA-256").error_code == 0
    assert authenticate(replay, client.first()).auth_bytes != server_first
    refused = authenticate(replay, final, corr=3)
    assert (refused.error_code, refused.error_message) == (
        SASL_AUTHENTICATION_FAILED,
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
    replay.assert_closed_without_answer()


def test_a_truncated_scram_message_fails_and_closes_only_that_connection(secure):
    raw = Raw(secure.ports["SASL_PLAINTEXT"])
    assert handshake(raw, "SCRAM-SHA-512").error_code == 0
    refused = authenticate(raw, b"n,,n=scram5")
    assert refused.error_code == SASL_AUTHENTICATION_FAILED
    raw.assert_closed_without_answer()
    assert produce_and_consume(confluent_conf(secure.ports["SASL_PLAINTEXT"], "SCRAM-SHA-512"), 3) == [
        b"m0", b"m1", b"m2"]


# ---------------------------------------------------------------- KIP-368
def test_a_session_that_expires_without_re_authentication_is_closed(tmp_path):
    b = start_secure_broker(tmp_path / "data", **{"connections.max.reauth.ms": "1500"})
    try:
        raw = Raw(b.ports["SASL_PLAINTEXT"])
        assert handshake(raw, "PLAIN").error_code == 0
        t0 = time.monotonic()
        ok = authenticate(raw, b"\0alice\0alice-secret")
        assert (ok.error_code, ok.session_lifetime_ms) == (0, 1500)
        raw.request(MetadataRequest(topics=None, allow_auto_topic_creation=True), 4, 3)
        assert raw.response(MetadataResponse, 4)[0] == 3
        # the session's end is a lower bound: past it, whatever the machine's load
        time.sleep(max(0.0, 1.5 - (time.monotonic() - t0)) + 0.5)
        raw.request(MetadataRequest(topics=None, allow_auto_topic_creation=True), 4, 4)
        raw.assert_closed_without_answer()
        # re-authenticating on time keeps the connection: SaslHandshake + SaslAuthenticate again
        raw = Raw(b.ports["SASL_PLAINTEXT"])
        assert handshake(raw, "PLAIN").error_code == 0
        assert authenticate(raw, b"\0alice\0alice-secret").error_code == 0
        assert handshake(raw, "PLAIN").error_code == 0
        assert authenticate(raw, b"\0alice\0alice-secret", corr=4).session_lifetime_ms == 1500
        raw.request(MetadataRequest(topics=None, allow_auto_topic_creation=True), 4, 5)
        assert raw.response(MetadataResponse, 4)[0] == 5
        # changing the principal on re-authentication is refused
        assert handshake(raw, "PLAIN").error_code == 0
        refused = authenticate(raw, b"\0admin\0admin-secret", corr=6)
        assert (refused.error_code, refused.error_message) == (
            SASL_AUTHENTICATION_FAILED, "Cannot change principals during re-authentication from User:alice: User:admin")
        raw.assert_closed_without_answer()
    finally:
        b.stop()
    assert "Traceback" not in b.log_text(), b.log_text()


def test_confluent_kafka_keeps_producing_across_re_authentications(tmp_path):
    b = start_secure_broker(tmp_path / "data", **{"connections.max.reauth.ms": "2000"}, log_level="DEBUG")
    try:
        for mechanism in ("PLAIN", "SCRAM-SHA-256"):
            p = Producer(confluent_conf(b.ports["SASL_PLAINTEXT"], mechanism))
            before = b.log_text().count(f"authenticated as User:{USERS[mechanism][0]}")
            sent = 0
            # produce until the broker has seen this client authenticate a few more times
            deadline = time.monotonic() + 90
            while b.log_text().count(f"authenticated as User:{USERS[mechanism][0]}") < before + 4:
                assert time.monotonic() < deadline, b.log_text()[-3000:]
                p.produce(f"reauth-{mechanism.lower()}", b"%d" % sent)
                sent += 1
                assert p.flush(60) == 0
                time.sleep(0.2)
            assert "expired without re-authentication" not in b.log_text()
    finally:
        b.stop()


# ---------------------------------------------------------------- Kafka's kafka-configs
def test_kafka_configs_adds_describes_and_deletes_scram_users_that_then_log_in(secure):
    from tests.support.kafka_tools import kafka_configs

    kafka_configs(secure.bootstrap, "--alter", "--entity-type", "users", "--entity-name", "carol",
                  "--add-config", "SCRAM-SHA-256=[iterations=8192,password=carol-pw],SCRAM-SHA-512=[password=carol-pw]")
    described = kafka_configs(secure.bootstrap, "--describe", "--entity-type", "users", "--entity-name", "carol")
    assert "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=8192, " \
           "SCRAM-SHA-512=iterations=4096" in described, described
    conf = confluent_conf(secure.ports["SASL_PLAINTEXT"], "SCRAM-SHA-256")
    conf.update({"sasl.username": "carol", "sasl.password": "carol-pw"})
    assert produce_and_consume(conf, 2) == [b"m0", b"m1"]
    kafka_configs(secure.bootstrap, "--alter", "--entity-type", "users", "--entity-name", "carol",
                  "--delete-config", "SCRAM-SHA-256")
    described = kafka_configs(secure.bootstrap, "--describe", "--entity-type", "users", "--entity-name", "carol")
    assert "SCRAM-SHA-512=iterations=4096" in described and "SCRAM-SHA-256" not in described, described
    errors: list[str] = []
    p = Producer({**conf, "error_cb": lambda e: errors.append(e.str())})
    deadline = time.monotonic() + 60
    while not errors and time.monotonic() < deadline:
        p.poll(0.5)
    assert any("invalid credentials with SASL mechanism SCRAM-SHA-256" in e for e in errors), errors


def test_a_failed_authentication_is_answered_after_kafkas_delay_then_closed(secure):
    raw = Raw(secure.ports["SASL_PLAINTEXT"])
    assert handshake(raw, "PLAIN").error_code == 0
    t0 = time.monotonic()
    refused = authenticate(raw, b"\0alice\0guess")
    waited = time.monotonic() - t0
    assert refused.error_message == "Authentication failed: Invalid username or password"
    assert waited >= 0.1   # connection.failed.authentication.delay.ms=100: a lower bound only
    raw.assert_closed_without_answer()
