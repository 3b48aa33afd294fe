"""Shared pieces of the security compat tests: a broker with PLAINTEXT + SASL_PLAINTEXT (+ SSL,
SASL_SSL) listeners, SCRAM users made through AlterUserScramCredentials on the PLAINTEXT
listener, client configurations per client library, and a client-side SCRAM for raw sockets."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from tests.support.broker_process import BrokerProcess, free_port

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
USERS = {"PLAIN": ("alice", "alice-secret"), "SCRAM-SHA-256": ("scram256", "s256-secret"),
         "SCRAM-SHA-512": ("scram512", "s512-secret")}
MECHANISMS = tuple(USERS)


def start_secure_broker(data_dir, certs: str | None = None, log_level: str | None = None,
                        extra_listeners: dict[str, int] | None = None, **extra: str) -> BrokerProcess:
    """A broker whose PLAINTEXT listener is ``.port``; ``.ports[name]`` for the others."""
    b = BrokerProcess(data_dir, log_level=log_level)
    ports = {"PLAINTEXT": b.port, "SASL_PLAINTEXT": free_port()}   # the first: the one logged
    if certs is not None:
        ports.update(SSL=free_port(), SASL_SSL=free_port())
    ports.update(extra_listeners or {})
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    b.overrides.update({
        "listeners": listeners,
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        **extra,
    })
    if certs is not None:
        b.overrides.update({
            "ssl.keystore.type": "PEM", "ssl.keystore.location": f"{certs}/broker.pem",
            "ssl.truststore.type": "PEM", "ssl.truststore.location": f"{certs}/ca.crt",
        })
    b.ports = ports  # type: ignore[attr-defined]
    b.start()
    create_scram_users(b.bootstrap)
    return b


def create_scram_users(bootstrap: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    ups = [UserScramCredentialUpsertion(USERS[m][0], ScramCredentialInfo(getattr(ScramMechanism, m.replace("-", "_")),
                                                                         4096), USERS[m][1].encode())
           for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")]
    for f in admin.alter_user_scram_credentials(ups).values():
        f.result(60)


def confluent_conf(port: int, mechanism: str | None, protocol: str = "SASL_PLAINTEXT",
                   password: str | None = None, **extra: str) -> dict[str, str]:
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": protocol, **extra}
    if mechanism is not None:
        user, pw = USERS[mechanism]
        conf.update({"sasl.mechanism": mechanism, "sasl.username": user,
                     "sasl.password": password if password is not None else pw})
    return conf


# ---------------------------------------------------------------- SCRAM on a raw socket
class ScramClient:
    """RFC 5802 client side (for hostile-input tests that replay or cut its messages)."""

    def __init__(self, mechanism: str, user: str, password: str) -> None:
        self.h = "sha256" if mechanism.endswith("256") else "sha512"
        self.user, self.password = user, password
        self.nonce = base64.b64encode(os.urandom(18)).decode()
        self.first_bare = f"n={user},r={self.nonce}"

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        attrs = dict(a.split("=", 1) for a in server_first.decode().split(","))
        salted = hashlib.pbkdf2_hmac(self.h, self.password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", self.h).digest()
        stored = hashlib.new(self.h, client_key).digest()
        without = f"c=biws,r={attrs['r']}"
        auth = f"{self.first_bare},{server_first.decode()},{without}".encode()
        sig = hmac.new(stored, auth, self.h).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, sig, strict=True))
        return f"{without},p={base64.b64encode(proof).decode()}".encode()


def aiokafka_round_trip(topic: str, values: list[bytes], **common: object) -> list[bytes]:
    """Produce ``values`` to ``topic`` with aiokafka and read them back from the start, both
    with the client settings ``common`` (listener, security protocol, credentials)."""
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> list[bytes]:
        p = AIOKafkaProducer(**common)
        await p.start()
        for v in values:
            await p.send_and_wait(topic, v)
        await p.stop()
        c = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **common)
        await c.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                async for m in c:
                    got.append(m.value)
                    if len(got) == len(values):
                        break
        finally:
            await c.stop()
        return got

    return asyncio.run(run())
