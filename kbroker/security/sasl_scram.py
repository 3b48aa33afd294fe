"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 server (RFC 5802, RFC 7677), as Kafka's ScramSaslServer.

Exchange (``,``-separated attributes; user names escape ``,`` as ``=2C`` and ``=`` as ``=3D``)::

    client-first   n,[a=<authzid>],n=<user>,r=<client nonce>[,<extensions>]
    server-first   r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=<base64 gs2 header>,r=<the nonce>,p=<base64 proof>
    server-final   v=<base64 server signature>

AuthMessage = client-first-bare "," server-first "," client-final-without-proof.  The proof is
ClientKey XOR HMAC(StoredKey, AuthMessage); the server checks H(ClientKey) == StoredKey.  Each
exchange makes a fresh server nonce, so a replayed client-final fails (the final nonce must
end with this exchange's nonce, as Kafka checks).  Every failure is a
SaslFailure: Kafka never tells the client whether the user exists.  Delegation tokens
(``tokenauth=true``) are not served.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
import secrets

from kbroker.security.sasl_plain import SaslFailure
from kbroker.security.scram_credentials import (
    MIN_ITERATIONS,
    ScramCredentialStore,
    hash_digest,
    hmac_digest,
)

_CLIENT_FIRST = re.compile(r"^(?P<gs2>[ny]),(a=(?P<authzid>[^,]*))?,(?P<bare>n=(?P<name>[^,]*),"
                           r"r=(?P<nonce>[^,]*)(?P<ext>(,[^,]*)*))$", re.S)
_CLIENT_FINAL = re.compile(r"^(?P<without>c=(?P<channel>[^,]*),r=(?P<nonce>[^,]*)(,[^,]*)*?),"
                           r"p=(?P<proof>[^,]*)$", re.S)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def _sasl_name_to_user(name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise SaslFailure(f"Invalid username: {name}")
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    def __init__(self, mechanism: str, store: ScramCredentialStore) -> None:
        self.mechanism = mechanism
        self._store = store
        self.complete = False
        self.username = ""
        self._step = 0
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._cred = None

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("SCRAM message is not UTF-8") from None
        if self._step == 0:
            return self._first(text)
        if self._step == 1:
            return self._final(text)
        raise SaslFailure("SCRAM exchange already complete")

    def _first(self, text: str) -> bytes:
        m = _CLIENT_FIRST.match(text)
        if m is None:
            raise SaslFailure(f"Invalid SCRAM client first message {text!r}")
        extensions = [e for e in m.group("ext").split(",") if e]
        if any(e.split("=", 1)[0] == "tokenauth" and e.endswith("=true") for e in extensions):
            raise SaslFailure("delegation tokens are not supported")
        user = _sasl_name_to_user(m.group("name"))
        authzid = m.group("authzid")
        if authzid and authzid != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that "
                              "is different from username")
        cred = self._store.get(user, self.mechanism)
        if cred is None:
            raise SaslFailure("Authentication failed: Invalid user credentials")
        if cred.iterations < MIN_ITERATIONS:
            raise SaslFailure(f"Iterations {cred.iterations} is less than the minimum {MIN_ITERATIONS}")
        client_nonce = m.group("nonce")
        if not client_nonce:
            raise SaslFailure("empty client nonce")
        self.username = user
        self._cred = cred
        self._client_first_bare = m.group("bare")
        # Kafka's ScramFormatter.secureRandomString: a 130-bit random number in base 36
        self._nonce = client_nonce + _base36(secrets.randbits(130))
        self._server_first = (f"r={self._nonce},s={base64.b64encode(cred.salt).decode()},"
                              f"i={cred.iterations}")
        self._step = 1
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        self._step = 2   # one attempt: a failure here ends the exchange
        m = _CLIENT_FINAL.match(text)
        if m is None:
            raise SaslFailure("Invalid SCRAM client final message")
        # Kafka checks endsWith, not equality: older librdkafka (e.g. Debian's kcat) sends its
        # own nonce again in front of the combined one, and Kafka accepts it
        if not m.group("nonce").endswith(self._nonce):
            raise SaslFailure("Invalid client nonce in the final client message.")
        try:
            proof = base64.b64decode(m.group("proof"), validate=True)
        except (binascii.Error, ValueError):
            raise SaslFailure("Invalid client proof") from None
        cred = self._cred
        assert cred is not None
        auth_message = f"{self._client_first_bare},{self._server_first},{m.group('without')}".encode()
        signature = hmac_digest(self.mechanism, cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslFailure("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hash_digest(self.mechanism, client_key), cred.stored_key):
            raise SaslFailure("Invalid client credentials")
        server_signature = hmac_digest(self.mechanism, cred.server_key, auth_message)
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)
