"""The SASL mechanisms, SCRAM credentials, JAAS/listener settings and TLS principals, without
sockets (the compat tests drive the same code through stock clients)."""

from __future__ import annotations

import base64

import pytest

import kbroker.security.sasl_scram as sasl_scram
from kbroker.configs.config import BrokerConfig, ConfigError
from kbroker.security.listeners import build_listeners, inter_broker_listener_name, parse_jaas
from kbroker.security.sasl_plain import PlainServer, SaslAuthenticationError, SaslFailure
from kbroker.security.sasl_scram import ScramServer
from kbroker.security.scram_credentials import (
    ScramCredential,
    ScramCredentialStore,
    credential_from_password,
)
from kbroker.security.tls import PrincipalMapper, rfc2253_name

# RFC 7677 section 3: user "user", password "pencil", salt, 4096 iterations and the exchange
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_store() -> ScramCredentialStore:
    store = ScramCredentialStore(None)
    store.apply([("user", "SCRAM-SHA-256", credential_from_password("SCRAM-SHA-256", "pencil", 4096, RFC_SALT))])
    return store


def test_scram_sha_256_server_answers_rfc_7677s_exchange_byte_for_byte(monkeypatch):
    server = ScramServer("SCRAM-SHA-256", rfc_store())
    monkeypatch.setattr(sasl_scram, "_base36", lambda n: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert (server.complete, server.username) == (True, "user")


def test_a_scram_proof_for_another_server_nonce_is_refused():
    server = ScramServer("SCRAM-SHA-256", rfc_store())
    server.evaluate(RFC_CLIENT_FIRST)   # a fresh random server nonce: the RFC's final is a replay
    with pytest.raises(SaslFailure, match="Invalid client nonce"):
        server.evaluate(RFC_CLIENT_FINAL)
    assert not server.complete


def test_a_wrong_scram_proof_and_an_unknown_user_fail_without_saying_which(monkeypatch):
    monkeypatch.setattr(sasl_scram, "_base36", lambda n: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    server = ScramServer("SCRAM-SHA-256", rfc_store())
    server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(SaslFailure, match="Invalid client credentials"):
        server.evaluate(RFC_CLIENT_FINAL.replace(b"p=dH", b"p=dX"))
    with pytest.raises(SaslFailure):
        ScramServer("SCRAM-SHA-256", rfc_store()).evaluate(b"n,,n=nobody,r=abc")
    with pytest.raises(SaslFailure):   # the user has no SCRAM-SHA-512 credential
        ScramServer("SCRAM-SHA-512", rfc_store()).evaluate(RFC_CLIENT_FIRST)


def test_credentials_have_kafkas_stored_form_and_survive_a_restart(tmp_path):
    cred = credential_from_password("SCRAM-SHA-512", "pw", 8192, b"\x01" * 16)
    text = cred.to_string()
    assert text.startswith("salt=AQEBAQEBAQEBAQEBAQEBAQ==,stored_key=") and text.endswith(",iterations=8192")
    assert ScramCredential.from_string(text) == cred
    store = ScramCredentialStore(str(tmp_path))
    for f in store.apply([("alice", "SCRAM-SHA-512", cred), ("bob", "SCRAM-SHA-256", cred)]):
        f.result(30)
    for f in store.apply([("bob", "SCRAM-SHA-256", None)]):
        f.result(30)
    store.close()
    again = ScramCredentialStore(str(tmp_path))
    assert (again.users(), again.get("alice", "SCRAM-SHA-512")) == (["alice"], cred)
    again.close()


@pytest.mark.parametrize(("token", "message"), [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0nobody\0x", "Authentication failed: Invalid username or password"),
    (b"\0alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0\0x", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"eve\0alice\0secret", "Authentication failed: Client requested an authorization id that is different "
                            "from username"),
])
def test_plain_refuses_with_kafkas_messages(token, message):
    with pytest.raises(SaslAuthenticationError) as e:
        PlainServer({"alice": "secret"}).evaluate(token)
    assert str(e.value) == message


def test_plain_accepts_the_right_password_with_or_without_an_equal_authorization_id():
    for token in (b"\0alice\0secret", b"alice\0alice\0secret"):
        server = PlainServer({"alice": "secret"})
        assert server.evaluate(token) == b"" and server.username == "alice"


def test_a_jaas_entry_gives_its_login_module_and_options():
    entry = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required\n'
                       '  username="admin" password="a \\"quoted\\" pw" user_admin=plain-value;')
    assert entry.login_module == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert entry.options == {"username": "admin", "password": 'a "quoted" pw', "user_admin": "plain-value"}


def test_listeners_take_per_listener_settings_and_refuse_unmapped_names():
    cfg = BrokerConfig({
        "listeners": "PLAINTEXT://:9092,INTERNAL://:9093",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.internal.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_b="pw";',
        "security.inter.broker.protocol": "SASL_PLAINTEXT",
    })
    assert cfg.unknown == []
    plain, internal = build_listeners(cfg)
    assert (plain.protocol, internal.protocol) == ("PLAINTEXT", "SASL_PLAINTEXT")
    assert internal.sasl_mechanisms == ("PLAIN", "SCRAM-SHA-256") and internal.plain_users == {"b": "pw"}
    assert inter_broker_listener_name(cfg) == "INTERNAL"
    with pytest.raises(ConfigError, match="No security protocol defined for listener INTERNAL"):
        build_listeners(BrokerConfig({"listeners": "INTERNAL://:9093"}))
    with pytest.raises(ConfigError, match="GSSAPI"):   # Kafka's default mechanism is not served
        build_listeners(BrokerConfig({"listeners": "SASL_PLAINTEXT://:9093"}))


def test_a_certificate_subject_is_written_as_javas_rfc_2253_name_and_mapped_by_the_rules():
    subject = ((("countryName", "US"),), (("organizationName", "Acme, Inc"),),
               (("organizationalUnitName", "eng"),), (("commonName", "alice"),))
    dn = rfc2253_name(subject)
    assert dn == "CN=alice,OU=eng,O=Acme\\, Inc,C=US"
    assert PrincipalMapper.parse("DEFAULT").name(dn) == dn
    rules = PrincipalMapper.parse("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U, DEFAULT")
    assert rules.name(dn) == "ALICE@ENG"
    assert rules.name("CN=x") == "CN=x"
    with pytest.raises(ValueError, match="No rules apply"):
        PrincipalMapper.parse("RULE:^CN=bob,.*$/bob/").name(dn)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_brokers_own_scram_client_logs_in_to_the_scram_server_and_checks_its_signature(mechanism):
    from kbroker.client.sasl import SaslClientError
    from kbroker.client.sasl import ScramClient as Client

    store = ScramCredentialStore(None)
    store.apply([("broker,1", mechanism, credential_from_password(mechanism, "pw", 4096))])
    client, server = Client(mechanism, "broker,1", "pw"), ScramServer(mechanism, store)
    final = client.step(server.evaluate(client.step(None)))
    assert client.step(server.evaluate(final)) is None
    assert (client.complete, server.complete, server.username) == (True, True, "broker,1")
    client, server = Client(mechanism, "broker,1", "pw"), ScramServer(mechanism, store)
    client.step(server.evaluate(client.step(None)))
    with pytest.raises(SaslClientError, match="invalid server signature"):
        client.step(b"v=" + base64.b64encode(b"\0" * 32))
