"""The client side of SASL PLAIN and SCRAM-SHA-256/512 (RFC 4616, RFC 5802/7677), sans I/O.

:func:`authentication` is the Kafka exchange as a step generator (kbroker/client/exchange.py):
SaslHandshake v1 naming the mechanism, then SaslAuthenticate v2 carrying the mechanism's
tokens until it is complete.  Fixed versions: every broker with SaslAuthenticate (Kafka 1.0+)
takes v1 of the handshake, and v2 of SaslAuthenticate since Kafka 2.2; kbroker serves both.

The SCRAM functions (``salted_password``, ``hmac_digest``, ``hash_digest``) are shared with the
broker's side (kbroker/security/scram_credentials.py derives stored keys with them).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from kbroker.client.errors import SaslAuthenticationFailed
from kbroker.client.exchange import Steps
from wire.messages import SaslAuthenticateRequest, SaslHandshakeRequest

__all__ = ["SaslCredentials", "PlainClient", "ScramClient", "SaslClientError", "authentication",
           "SCRAM_HASHES", "hmac_digest", "hash_digest", "salted_password"]

# SCRAM mechanism -> hashlib name of its hash function
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
HANDSHAKE_VERSION = 1
AUTHENTICATE_VERSION = 2


@dataclass(frozen=True, slots=True)
class SaslCredentials:
    mechanism: str      # "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512"
    username: str
    password: str


class SaslClientError(Exception):
    """The server's SCRAM answer is wrong (nonce, signature)."""


def hmac_digest(mechanism: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, SCRAM_HASHES[mechanism]).digest()


def hash_digest(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(SCRAM_HASHES[mechanism], data).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(SCRAM_HASHES[mechanism], password.encode(), salt, iterations)


class PlainClient:
    def __init__(self, username: str, password: str) -> None:
        self._token = b"\0" + username.encode() + b"\0" + password.encode()
        self.complete = False

    def step(self, challenge: bytes | None) -> bytes | None:
        """The next token to send (None: nothing more), given the server's last answer."""
        if challenge is None:
            return self._token
        self.complete = True
        return None


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self._password = password
        name = username.replace("=", "=3D").replace(",", "=2C")
        self._first_bare = f"n={name},r={secrets.token_hex(16)}"
        self._server_signature = b""
        self.complete = False
        self._step = 0

    def step(self, challenge: bytes | None) -> bytes | None:
        if self._step == 0:
            self._step = 1
            return ("n,," + self._first_bare).encode()
        if self._step == 1:
            self._step = 2
            assert challenge is not None
            server_first = challenge.decode()
            attrs = dict(a.split("=", 1) for a in server_first.split(","))
            if not attrs.get("r", "").startswith(self._first_bare.split(",r=", 1)[1]):
                raise SaslClientError("server nonce does not extend the client nonce")
            salted = salted_password(self.mechanism, self._password, base64.b64decode(attrs["s"]), int(attrs["i"]))
            client_key = hmac_digest(self.mechanism, salted, b"Client Key")
            stored = hash_digest(self.mechanism, client_key)
            without = f"c=biws,r={attrs['r']}"
            auth = f"{self._first_bare},{server_first},{without}".encode()
            proof = bytes(a ^ b for a, b in zip(client_key, hmac_digest(self.mechanism, stored, auth), strict=True))
            self._server_signature = hmac_digest(self.mechanism, hmac_digest(self.mechanism, salted, b"Server Key"),
                                                 auth)
            return f"{without},p={base64.b64encode(proof).decode()}".encode()
        assert challenge is not None
        if not hmac.compare_digest(challenge, b"v=" + base64.b64encode(self._server_signature)):
            raise SaslClientError("invalid server signature")
        self.complete = True
        return None


def authentication(creds: SaslCredentials) -> Steps:
    """SaslHandshake then SaslAuthenticate rounds; raises SaslAuthenticationFailed."""
    mechanism = creds.mechanism
    hs = yield SaslHandshakeRequest(mechanism=mechanism), HANDSHAKE_VERSION
    if hs.error_code != 0:
        raise SaslAuthenticationFailed(f"SASL handshake with {mechanism} refused (error {hs.error_code}, "
                                       f"enabled: {hs.mechanisms})")
    client = PlainClient(creds.username, creds.password) if mechanism == "PLAIN" else \
        ScramClient(mechanism, creds.username, creds.password)
    challenge: bytes | None = None
    while True:
        try:
            token = client.step(challenge)
        except SaslClientError as e:
            raise SaslAuthenticationFailed(f"SASL {mechanism}: {e}") from None
        if token is None:
            return None
        answer = yield SaslAuthenticateRequest(auth_bytes=token), AUTHENTICATE_VERSION
        if answer.error_code != 0:
            raise SaslAuthenticationFailed(f"SASL {mechanism} authentication as {creds.username} failed: "
                                           f"{answer.error_message}")
        challenge = bytes(answer.auth_bytes)
        if client.complete:
            return None
