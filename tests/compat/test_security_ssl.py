"""SSL and SASL_SSL against a real broker process, with certificates made by openssl in tmp.

Listeners: PLAINTEXT; SSL (ssl.client.auth=requested, PEM keystore); MTLS, a listener named
as it likes and mapped to SSL, with ssl.client.auth=required, a PKCS12 keystore and
truststore and ``ssl.principal.mapping.rules`` taking the CN in lower case; SASL_SSL with
PLAIN and SCRAM.  Principals are read from the broker's DEBUG line per TLS connection.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from tests.support.broker_process import free_port
from tests.support.security_certs import CLIENT_DN, make_certs
from tests.support.security_helpers import (
    USERS,
    aiokafka_round_trip,
    confluent_conf,
    start_secure_broker,
)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")))


@pytest.fixture
def tls_broker(tmp_path, certs):
    mtls = free_port()
    b = start_secure_broker(tmp_path / "data", certs=certs, log_level="DEBUG", **{
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                          "SASL_SSL:SASL_SSL,MTLS:SSL",
        "listener.name.ssl.ssl.client.auth": "requested",
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.keystore.type": "PKCS12",
        "listener.name.mtls.ssl.keystore.location": f"{certs}/broker.p12",
        "listener.name.mtls.ssl.keystore.password": "broker-pass",
        "listener.name.mtls.ssl.truststore.type": "PKCS12",
        "listener.name.mtls.ssl.truststore.location": f"{certs}/ca.p12",
        "listener.name.mtls.ssl.truststore.password": "trust-pass",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/L,DEFAULT",
    }, extra_listeners={"MTLS": mtls})
    yield b
    b.stop()
    assert "Traceback" not in b.log_text(), b.log_text()


def ssl_conf(port: int, certs: str, client_cert: str | None = "client", **extra: str) -> dict[str, str]:
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
            "ssl.ca.location": f"{certs}/ca.crt", **extra}
    if client_cert is not None:
        conf.update({"ssl.certificate.location": f"{certs}/{client_cert}.crt",
                     "ssl.key.location": f"{certs}/{client_cert}.key"})
    return conf


def produce_and_consume(conf: dict[str, str], values: list[bytes]) -> list[bytes]:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    p = Producer(conf)
    for v in values:
        p.produce(topic, v)
    assert p.flush(60) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(values) and time.monotonic() < deadline:
        m = c.poll(1)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    return got


def principals(b) -> set[tuple[str, str]]:
    out = set()
    for line in b.log_text().splitlines():
        if "TLS connection from" in line:
            rest = line.split("TLS connection from ", 1)[1]
            listener = rest.split(" on ", 1)[1].split(" is ", 1)[0]
            out.add((listener, rest.split(" is ", 1)[1].split(" (kbroker")[0].strip()))
    return out


def refused(conf: dict[str, str]) -> list[str]:
    """The errors a producer gets within 60 s (it must get one)."""
    errors: list[str] = []
    seen = threading.Event()

    def on_error(e) -> None:
        errors.append(e.str())
        seen.set()

    p = Producer({**conf, "error_cb": on_error})
    p.produce("never", b"x")
    deadline = time.monotonic() + 60
    while not seen.is_set() and time.monotonic() < deadline:
        p.poll(0.5)
    assert p.flush(1) == 1   # nothing was delivered
    return errors


def test_confluent_kafka_over_ssl_with_server_authentication_only_is_anonymous(tls_broker, certs):
    conf = ssl_conf(tls_broker.ports["SSL"], certs, client_cert=None)
    assert produce_and_consume(conf, [b"a", b"b", b"c"]) == [b"a", b"b", b"c"]
    assert ("SSL", "User:ANONYMOUS") in principals(tls_broker)


def test_confluent_kafka_over_mutual_tls_is_the_certificate_subject(tls_broker, certs):
    conf = ssl_conf(tls_broker.ports["SSL"], certs)
    assert produce_and_consume(conf, [b"x%d" % i for i in range(5)]) == [b"x%d" % i for i in range(5)]
    assert ("SSL", f"User:{CLIENT_DN}") in principals(tls_broker)
    mconf = ssl_conf(tls_broker.ports["MTLS"], certs)
    assert produce_and_consume(mconf, [b"m"]) == [b"m"]
    assert ("MTLS", "User:client") in principals(tls_broker)   # the mapping rule, lower case


def test_a_client_without_a_certificate_or_with_one_of_another_ca_is_refused(tls_broker, certs):
    assert refused(ssl_conf(tls_broker.ports["MTLS"], certs, client_cert=None))
    assert refused(ssl_conf(tls_broker.ports["MTLS"], certs, client_cert="rogue"))
    assert refused(ssl_conf(tls_broker.ports["SSL"], certs, client_cert="rogue"))
    assert ("SSL", "User:CN=client,OU=eng,O=kbroker,C=US") not in principals(tls_broker)
    # the broker is fine for everyone else
    assert produce_and_consume(ssl_conf(tls_broker.ports["MTLS"], certs), [b"ok"]) == [b"ok"]


def test_large_fetches_over_tls_carry_the_exact_records(tls_broker, certs):
    values = [bytes([i % 251]) * 200_000 for i in range(40)]   # 8 MB: slices sent as copies
    conf = ssl_conf(tls_broker.ports["SSL"], certs, **{"fetch.max.bytes": "52428800"})
    assert produce_and_consume(conf, values) == values


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_over_sasl_ssl(tls_broker, certs, mechanism):
    conf = confluent_conf(tls_broker.ports["SASL_SSL"], mechanism, protocol="SASL_SSL",
                          **{"ssl.ca.location": f"{certs}/ca.crt"})
    assert produce_and_consume(conf, [b"s1", b"s2"]) == [b"s1", b"s2"]


def test_sasl_ssl_with_a_wrong_password_is_refused(tls_broker, certs):
    conf = confluent_conf(tls_broker.ports["SASL_SSL"], "SCRAM-SHA-256", protocol="SASL_SSL", password="nope",
                          **{"ssl.ca.location": f"{certs}/ca.crt"})
    errors = refused(conf)
    assert any("Authentication failed during authentication due to invalid credentials with SASL mechanism "
               "SCRAM-SHA-256" in e for e in errors), errors


def test_kafka_python_over_mutual_tls_and_sasl_ssl(tls_broker, certs):
    import kafka

    tls = dict(ssl_cafile=f"{certs}/ca.crt", ssl_certfile=f"{certs}/client.crt", ssl_keyfile=f"{certs}/client.key")
    user, pw = USERS["SCRAM-SHA-512"]
    for extra in (dict(bootstrap_servers=f"127.0.0.1:{tls_broker.ports['MTLS']}", security_protocol="SSL", **tls),
                  dict(bootstrap_servers=f"127.0.0.1:{tls_broker.ports['SASL_SSL']}", security_protocol="SASL_SSL",
                       ssl_cafile=f"{certs}/ca.crt", sasl_mechanism="SCRAM-SHA-512",
                       sasl_plain_username=user, sasl_plain_password=pw)):
        topic = f"kp-{uuid.uuid4().hex[:6]}"
        p = kafka.KafkaProducer(**extra)
        for i in range(5):
            p.send(topic, b"k%d" % i)
        p.flush(60)
        p.close()
        c = kafka.KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=20000, **extra)
        got = [m.value for m in c][:5]
        c.close()
        assert got == [b"k%d" % i for i in range(5)]


def test_aiokafka_over_mutual_tls(tls_broker, certs):
    ctx = ssl.create_default_context(cafile=f"{certs}/ca.crt")
    ctx.load_cert_chain(f"{certs}/client.crt", f"{certs}/client.key")
    common = dict(bootstrap_servers=f"127.0.0.1:{tls_broker.ports['MTLS']}", security_protocol="SSL",
                  ssl_context=ctx)
    values = [b"a%d" % i for i in range(5)]
    assert aiokafka_round_trip("aio-tls", values, **common) == values


def test_kcat_over_mutual_tls(tls_broker, certs):
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.fail("kcat is not on PATH (make deps-system)")
    args = ["-b", f"127.0.0.1:{tls_broker.ports['MTLS']}", "-X", "security.protocol=SSL",
            "-X", f"ssl.ca.location={certs}/ca.crt", "-X", f"ssl.certificate.location={certs}/client.crt",
            "-X", f"ssl.key.location={certs}/client.key"]
    subprocess.run([kcat, "-P", *args, "-t", "kc"], input="one\ntwo\n", text=True, check=True, timeout=120)
    out = subprocess.run([kcat, "-C", *args, "-t", "kc", "-o", "beginning", "-e", "-q"], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    assert out.split() == ["one", "two"]


def test_a_stalled_tls_handshake_is_closed_and_does_not_hold_up_others(tls_broker, certs):
    stalled = socket.create_connection(("127.0.0.1", tls_broker.ports["SSL"]), timeout=60)
    garbage = socket.create_connection(("127.0.0.1", tls_broker.ports["SSL"]), timeout=60)
    garbage.sendall(b"\x16\x03\x01\x00\x05hello")   # a truncated, broken ClientHello
    assert produce_and_consume(ssl_conf(tls_broker.ports["SSL"], certs), [b"meanwhile"]) == [b"meanwhile"]
    # the broken one is closed (after a TLS alert, maybe), the stalled one by the handshake
    # timeout (10 s); recv waits up to 60 s for each
    for sock in (garbage, stalled):
        assert read_until_closed(sock)


def read_until_closed(sock: socket.socket) -> bool:
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return True   # socket.timeout (not closed within 60 s) propagates and fails the test


# ---------------------------------------------------------------- Kafka's Java clients
def java_produce_consume(bootstrap: str, topic: str, props: dict[str, str]) -> str:
    from tests.support.java_admin import JAVA_DIR, java_client_classpath

    done = subprocess.run(["java", "-cp", java_client_classpath(), str(JAVA_DIR / "SecureProduceConsume.java"),
                           bootstrap, topic, "10", *(f"{k}={v}" for k, v in props.items())],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if line.startswith(("consumed ", "error "))][-1]


def test_java_clients_over_mutual_tls_and_sasl_ssl_with_scram(tls_broker, certs):
    with open(f"{certs}/client.pem", "w") as out:   # Java's PEM keystore: key and chain in one file
        out.write(open(f"{certs}/client.key").read() + open(f"{certs}/client.crt").read())
    trust = {"ssl.truststore.type": "PEM", "ssl.truststore.location": f"{certs}/ca.crt"}
    mtls = {"security.protocol": "SSL", "ssl.keystore.type": "PEM", "ssl.keystore.location": f"{certs}/client.pem",
            **trust}
    assert java_produce_consume(f"127.0.0.1:{tls_broker.ports['MTLS']}", "java-mtls", mtls) == "consumed 10 v0 v9"
    user, pw = USERS["SCRAM-SHA-512"]
    scram = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", **trust,
             "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                 f'username="{user}" password="{pw}";'}
    assert java_produce_consume(f"127.0.0.1:{tls_broker.ports['SASL_SSL']}", "java-scram", scram) == \
        "consumed 10 v0 v9"
    wrong = {**scram, "sasl.jaas.config": scram["sasl.jaas.config"].replace(pw, "nope")}
    assert java_produce_consume(f"127.0.0.1:{tls_broker.ports['SASL_SSL']}", "java-wrong", wrong) == (
        "error org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed during "
        "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")
