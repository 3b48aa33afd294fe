"""SCRAM credentials (RFC 5802/7677): their computation, Kafka's stored form, and the store.

Stored form (Kafka's ScramCredentialUtils.credentialToString), one per user and mechanism::

    salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<int>

with SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations), ClientKey = HMAC(SaltedPassword,
"Client Key"), StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key").
AlterUserScramCredentials carries salt and SaltedPassword; the broker derives the keys.

Where they live: the JSON file ``scram-credentials.json`` in the first log dir
({"<user>": {"<mechanism>": "<stored form>"}}), written whole and atomically on its own thread
(kbroker/configs/json_file.py), never on the loop.  In cluster mode ZooKeeper is the truth, as in
Kafka's ZooKeeper era: ``/config/users/<user>`` {"version":1,"config":{"SCRAM-SHA-256":
"<stored form>", ...the user's quotas...}}, written and re-read by kbroker/zk/quotas_zk.py (the
one writer of that znode); the file is then each broker's mirror.
"""

from __future__ import annotations

import base64
import os
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

# the SCRAM functions both sides compute with (the broker's own SCRAM client is there too)
from kbroker.client.sasl import hash_digest, hmac_digest, salted_password
from kbroker.configs.json_file import JsonFileWriter, read_json

# mechanism name -> (hashlib name, AlterUserScramCredentials' mechanism id)
MECHANISMS = {"SCRAM-SHA-256": ("sha256", 1), "SCRAM-SHA-512": ("sha512", 2)}
MECHANISM_BY_ID = {mid: name for name, (_, mid) in MECHANISMS.items()}
MIN_ITERATIONS = 4096      # ScramMechanism.minIterations (both mechanisms)
MAX_ITERATIONS = 16384     # the most AlterUserScramCredentials accepts (Kafka's limit)
FILE_NAME = "scram-credentials.json"


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_string(self) -> str:
        b64 = base64.b64encode
        return (f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
                f"server_key={b64(self.server_key).decode()},iterations={self.iterations}")

    @classmethod
    def from_string(cls, text: str) -> ScramCredential:
        fields = dict(item.split("=", 1) for item in text.split(","))
        d = base64.b64decode
        return cls(d(fields["salt"]), d(fields["stored_key"]), d(fields["server_key"]),
                   int(fields["iterations"]))


def credential_from_salted(mechanism: str, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
    client_key = hmac_digest(mechanism, salted, b"Client Key")
    return ScramCredential(salt, hash_digest(mechanism, client_key),
                           hmac_digest(mechanism, salted, b"Server Key"), iterations)


def credential_from_password(mechanism: str, password: str, iterations: int = 4096,
                             salt: bytes | None = None) -> ScramCredential:
    salt = salt if salt is not None else os.urandom(32)
    return credential_from_salted(mechanism, salt, salted_password(mechanism, password, salt, iterations),
                                  iterations)


class ScramCredentialStore:
    """user -> mechanism -> credential, read by the SCRAM servers on the event loop; changed
    by AlterUserScramCredentials; backed by the JSON file (module docstring), or by nothing
    with ``log_dir`` None (tests)."""

    def __init__(self, log_dir: str | None) -> None:
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self._writer: JsonFileWriter | None = None
        if log_dir is not None:
            path = os.path.join(log_dir, FILE_NAME)
            for user, creds in read_json(path, {}).items():
                self._users[user] = {m: ScramCredential.from_string(s) for m, s in creds.items()}
            self._writer = JsonFileWriter(path)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def mechanisms(self, user: str) -> dict[str, ScramCredential]:
        return dict(self._users.get(user, {}))

    def users(self) -> list[str]:
        return sorted(self._users)

    def replace_user(self, user: str, creds: dict[str, ScramCredential]) -> None:
        """Set a user's credentials from outside (ZooKeeper, cluster mode) and mirror them in
        the file, so a restarted broker authenticates the users it knew before it has read
        ZooKeeper again.  Nothing waits for the mirror's write."""
        if creds == self._users.get(user, {}):
            return
        if creds:
            self._users[user] = dict(creds)
        else:
            self._users.pop(user, None)
        self._persist({user})

    def apply(self, changes: list[tuple[str, str, ScramCredential | None]]) -> list[Future[None]]:
        """Upsert (credential) or delete (None) ``(user, mechanism)`` entries; returns the
        futures of their durability."""
        touched: set[str] = set()
        for user, mech, cred in changes:
            creds = self._users.setdefault(user, {})
            if cred is None:
                creds.pop(mech, None)
            else:
                creds[mech] = cred
            if not creds:
                del self._users[user]
            touched.add(user)
        return self._persist(touched)

    def _persist(self, users: set[str]) -> list[Future[None]]:
        if self._writer is None:
            return []
        return [self._writer.write(self.snapshot())]

    def snapshot(self) -> dict[str, Any]:
        return {u: {m: c.to_string() for m, c in creds.items()} for u, creds in self._users.items()}

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
