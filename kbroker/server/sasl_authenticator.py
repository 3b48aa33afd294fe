"""The server side of SASL on one connection, as Kafka's SaslServerAuthenticator.

States (Kafka's SaslState)::

    HANDSHAKE_OR_VERSIONS --ApiVersions--> HANDSHAKE --SaslHandshake--> AUTHENTICATE
    HANDSHAKE_OR_VERSIONS --SaslHandshake--> AUTHENTICATE --token...--> COMPLETE
    COMPLETE --SaslHandshake (KIP-368 re-authentication)--> AUTHENTICATE --...--> COMPLETE

* Before AUTHENTICATE only ApiVersions and SaslHandshake are served; anything else, or bytes
  that are no Kafka request, closes the connection ("Unexpected Kafka request of type X during
  SASL handshake.").  Frames are limited to ``sasl.server.max.receive.size`` until COMPLETE.
* SaslHandshake v0: the tokens that follow are raw frames (size-prefixed, no Kafka header) and
  so are the answers; v1 (KIP-152): tokens travel in SaslAuthenticate requests, and any other
  request in AUTHENTICATE closes the connection.
* An unsupported mechanism is answered UNSUPPORTED_SASL_MECHANISM with the enabled list, then
  the connection closes.  A failed exchange is answered SASL_AUTHENTICATION_FAILED with
  Kafka's message (the mechanism's own for PLAIN, the generic one for SCRAM), then closes.
  Both answers come ``connection.failed.authentication.delay.ms`` (100) late, as Kafka's
  delayed close; frames arriving meanwhile are dropped.
* KIP-368: with ``connections.max.reauth.ms`` > 0 the successful SaslAuthenticate carries that
  as session_lifetime_ms; a request other than SaslHandshake arriving after the session ended
  closes the connection (clients re-authenticate before: SaslHandshake on the authenticated
  connection starts it; mechanism and principal must not change).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from kbroker.security.sasl_plain import PlainServer, SaslAuthenticationError, SaslFailure
from kbroker.security.sasl_scram import ScramServer
from kbroker.server.request_context import RequestContext
from wire.codec import decode_at
from wire.error_codes import ErrorCode
from wire.errors import DecodeError, WireError
from wire.headers import decode_request_header
from wire.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from wire.schema import REQUESTS

if TYPE_CHECKING:
    from kbroker.security.listeners import ListenerSpec
    from kbroker.server.services import Services
    from wire.framing import FrameDecoder


class SaslConnection(Protocol):
    """What the authenticator drives of its connection (kbroker/server/connection.py)."""

    decoder: FrameDecoder
    services: Services
    peer: str

    def respond(self, ctx: RequestContext, version: int, response: Any) -> None: ...

    def fail_later(self, ctx: RequestContext, version: int, response: Any, delay_s: float, why: str) -> None: ...

    def send_raw(self, data: bytes) -> None: ...

    def authenticated(self, principal: str, keep: bool) -> None: ...

    def close_after_sending(self, why: str) -> None: ...

log = logging.getLogger("kbroker.sasl")

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
_API_NAMES = {0: "PRODUCE", 1: "FETCH", 2: "LIST_OFFSETS", 3: "METADATA", 8: "OFFSET_COMMIT",
              9: "OFFSET_FETCH", 10: "FIND_COORDINATOR", 11: "JOIN_GROUP", 17: "SASL_HANDSHAKE",
              18: "API_VERSIONS", 19: "CREATE_TOPICS", 36: "SASL_AUTHENTICATE"}

HANDSHAKE_OR_VERSIONS, HANDSHAKE, AUTHENTICATE, COMPLETE, FAILED = range(5)


def _api_name(key: int) -> str:
    return _API_NAMES.get(key, str(key))


class SaslAuthenticator:
    def __init__(self, conn: SaslConnection, spec: ListenerSpec,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.conn = conn
        self.spec = spec
        self.clock = clock
        self.state = HANDSHAKE_OR_VERSIONS
        self.mechanism: str | None = None
        self.server: PlainServer | ScramServer | None = None
        self.kafka_headers = False
        self.expiry: float | None = None          # clock() when the session ends (KIP-368)
        self.principal: str | None = None
        self.reauthenticating = False
        self.bad_reauth_mechanism: str | None = None
        self._max_frame = conn.decoder.max_frame_bytes
        conn.decoder.max_frame_bytes = min(self._max_frame, spec.max_receive_size)

    # ------------------------------------------------------------ entry point
    def intercept(self, frame: bytearray) -> bool:
        """Handle ``frame`` if it belongs to authentication; False: dispatch it normally."""
        if self.state == FAILED:
            return True   # the failure answer is on its way (delayed), then the close
        if self.state == COMPLETE:
            key = int.from_bytes(frame[0:2], "big", signed=True) if len(frame) >= 2 else -1
            if key == SASL_HANDSHAKE and self.spec.max_reauth_ms > 0:
                self.reauthenticating = True
                self.state = HANDSHAKE
                self.conn.decoder.max_frame_bytes = min(self._max_frame, self.spec.max_receive_size)
                self._kafka_request(frame)
                return True
            if self.expiry is not None and self.clock() > self.expiry:
                self._close(f"SASL session of {self.principal} expired without re-authentication")
                return True
            return False
        if self.state == AUTHENTICATE and not self.kafka_headers:
            self._raw_token(bytes(frame))
            return True
        return self._kafka_request(frame)

    # ------------------------------------------------------------ Kafka-framed requests
    def _kafka_request(self, frame: bytearray) -> bool:
        try:
            header, offset = decode_request_header(frame)
        except DecodeError:
            self._close("Invalid request, potential reasons: kafka client configured with the wrong "
                        "security protocol, it does not support KIP-43 or it is not a kafka client.")
            return True
        key, version = header.request_api_key, header.request_api_version
        if self.state in (HANDSHAKE_OR_VERSIONS, HANDSHAKE):
            if key == API_VERSIONS and self.state == HANDSHAKE_OR_VERSIONS and not self.reauthenticating:
                self.state = HANDSHAKE
                return False   # answered by the ApiVersions handler (KIP-511 included)
            if key != SASL_HANDSHAKE:
                self._close(f"Unexpected Kafka request of type {_api_name(key)} during SASL handshake.")
                return True
            request = self._decode(key, version, frame, offset)
            if request is not None:
                self._handshake(header, version, request.mechanism)
            return True
        # AUTHENTICATE with KIP-152 headers
        if key != SASL_AUTHENTICATE:
            self._close(f"Unexpected Kafka request of type {_api_name(key)} during SASL authentication.")
            return True
        request = self._decode(key, version, frame, offset)
        if request is not None:
            self._authenticate(header, version, bytes(request.auth_bytes))
        return True

    def _decode(self, key: int, version: int, frame: bytearray, offset: int):  # noqa: ANN202
        lo, hi = (0, 1) if key == SASL_HANDSHAKE else (0, 2)
        if not lo <= version <= hi:
            self._close(f"Version {version} is not supported for apiKey {_api_name(key)}")
            return None
        try:
            return decode_at(REQUESTS[key].cls, frame, version, offset)[0]
        except WireError as e:
            self._close(f"malformed {_api_name(key)} request: {e}")
            return None

    def _ctx(self, header, version: int) -> RequestContext:  # noqa: ANN001
        return RequestContext(header.request_api_key, version, header.correlation_id,
                              header.client_id, self.conn.services, self.conn.peer,
                              listener_name=self.spec.name)

    def _handshake(self, header, version: int, mechanism: str) -> None:  # noqa: ANN001
        ctx = self._ctx(header, version)
        enabled = list(self.spec.sasl_mechanisms)
        if mechanism not in enabled:
            self._fail_later(ctx, version, SaslHandshakeResponse(
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled),
                f"Unsupported SASL mechanism {mechanism}")
            return
        self.kafka_headers = version >= 1
        if self.reauthenticating and mechanism != self.mechanism:
            # Kafka answers the handshake, then fails the SaslAuthenticate that follows
            self.bad_reauth_mechanism = (f"SASL mechanism '{mechanism}' requested by client is not "
                                         f"supported for re-authentication of mechanism '{self.mechanism}'")
        else:
            self.mechanism = mechanism
            self.server = self._new_server(mechanism)
        self.conn.respond(ctx, version, SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=enabled))
        self.state = AUTHENTICATE

    def _new_server(self, mechanism: str) -> PlainServer | ScramServer:
        if mechanism == "PLAIN":
            return PlainServer(self.spec.plain_users)
        return ScramServer(mechanism, self.conn.services.scram)

    def _authenticate(self, header, version: int, token: bytes) -> None:  # noqa: ANN001
        ctx = self._ctx(header, version)
        if self.bad_reauth_mechanism is not None:
            self._fail(ctx, version, self.bad_reauth_mechanism)
            return
        assert self.server is not None
        try:
            answer = self.server.evaluate(token)
            if self.server.complete:
                self._check_principal()
        except SaslAuthenticationError as e:
            self._fail(ctx, version, str(e))
            return
        except SaslFailure as e:
            log.info("SASL %s authentication of %s failed: %s", self.mechanism, self.conn.peer, e)
            self._fail(ctx, version, f"Authentication failed during "
                       f"{'re-authentication' if self.reauthenticating else 'authentication'} due to "
                       f"invalid credentials with SASL mechanism {self.mechanism}")
            return
        lifetime = self._complete() if self.server.complete else 0
        self.conn.respond(ctx, version, SaslAuthenticateResponse(
            error_code=ErrorCode.NONE, error_message=None, auth_bytes=answer,
            session_lifetime_ms=lifetime))
        if self.state == COMPLETE:
            self._done()

    def _fail(self, ctx: RequestContext, version: int, message: str) -> None:
        self._fail_later(ctx, version, SaslAuthenticateResponse(
            error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message),
            f"SASL authentication failed: {message}")

    def _fail_later(self, ctx: RequestContext, version: int, answer: object, why: str) -> None:
        """Kafka's delayed close on an authentication failure: the answer and the close come
        ``connection.failed.authentication.delay.ms`` later (at once with 0)."""
        self.state = FAILED
        delay = self.spec.failed_auth_delay_ms
        if delay <= 0:
            self.conn.respond(ctx, version, answer)
            self._close(why)
            return
        self.conn.fail_later(ctx, version, answer, delay / 1000, why)

    # ------------------------------------------------------------ SaslHandshake v0 tokens
    def _raw_token(self, token: bytes) -> None:
        assert self.server is not None
        try:
            answer = self.server.evaluate(token)
            if self.server.complete:
                self._check_principal()
        except (SaslAuthenticationError, SaslFailure) as e:
            self._close(f"SASL {self.mechanism} authentication failed: {e}")
            return
        if self.server.complete:
            self._complete()
        self.conn.send_raw(len(answer).to_bytes(4, "big") + answer)
        if self.state == COMPLETE:
            self._done()

    # ------------------------------------------------------------ completion
    def _check_principal(self) -> None:
        assert self.server is not None
        principal = f"User:{self.server.username}"
        if self.reauthenticating and principal != self.principal:
            raise SaslAuthenticationError(f"Cannot change principals during re-authentication from "
                                          f"{self.principal}: {principal}")

    def _complete(self) -> int:
        """Authenticated: the session's lifetime (ms; 0 = unlimited) and its end."""
        assert self.server is not None
        self.state = COMPLETE
        self.principal = f"User:{self.server.username}"
        lifetime = self.spec.max_reauth_ms
        self.expiry = self.clock() + lifetime / 1000 if lifetime > 0 else None
        return lifetime

    def _done(self) -> None:
        conn = self.conn
        conn.decoder.max_frame_bytes = self._max_frame
        log.debug("%s authenticated as %s with %s on %s", conn.peer, self.principal,
                  self.mechanism, self.spec.name)
        conn.authenticated(self.principal or "User:ANONYMOUS", keep=self.spec.max_reauth_ms > 0)
        self.reauthenticating = False
        self.server = None

    def _close(self, why: str) -> None:
        self.state = FAILED
        self.conn.close_after_sending(why)
