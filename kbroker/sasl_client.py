"""The client side of SASL PLAIN and SCRAM (RFC 4616, RFC 5802), for this broker's own
connections to other brokers (kbroker/inter_broker_client.py)."""

from __future__ import annotations

import base64
import hmac
import secrets

from kbroker.scram_credentials import hash_digest, hmac_digest, salted_password


class SaslClientError(Exception):
    pass


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
