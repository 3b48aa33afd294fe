"""SASL/PLAIN server (RFC 4616), as Kafka's PlainSaslServer.

The one client message is ``[authzid] NUL authcid NUL passwd`` (UTF-8).  The users are the
``user_<name>="<password>"`` options of the listener's PlainLoginModule JAAS entry.  The
error texts are Kafka's (they reach the client in SaslAuthenticate's error_message).
"""

from __future__ import annotations

import hmac


class SaslAuthenticationError(Exception):
    """Authentication failed; the message is sent to the client (Kafka's
    SaslAuthenticationException)."""


class SaslFailure(Exception):
    """Authentication failed with details the client must not see (Kafka's SaslException):
    the client gets "Authentication failed during authentication due to invalid credentials
    with SASL mechanism <mech>"."""


class PlainServer:
    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self.complete = False
        self.username = ""

    def evaluate(self, token: bytes) -> bytes:
        """The client's message; returns the (empty) server answer or raises."""
        if self.complete:
            raise SaslFailure("PLAIN authentication already complete")
        text = token.decode("utf-8", errors="replace")
        parts = text.split("\0")
        if len(parts) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        # compare_digest on both branches: the time does not tell whether the user exists
        ok = hmac.compare_digest(password.encode(), (expected or "\0" + password).encode())
        if expected is None or not ok:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an authorization "
                                          "id that is different from username")
        self.username = username
        self.complete = True
        return b""
