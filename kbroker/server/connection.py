"""One client connection: framing, in-order effects and answers, flow control (an asyncio.Protocol).

Requests on a connection take effect in the order they were sent, and each takes a
response slot in that order; responses leave strictly in that order (Kafka clients match
responses to the oldest in-flight request).  Order of effects is decided here, once, for
every API: a handler answers synchronously (its effects have all happened when it
returns), or returns an awaitable; then the connection dispatches nothing more of its
frames (and stops reading) until that awaitable is done, unless the handler has said
``ctx.took_effect()``: everything it changes is changed and only its answer waits.  So an
OffsetCommit waiting for its ``__consumer_offsets`` append to replicate, or a transactional
Produce waiting for its verification by a coordinator on another broker, holds the
requests sent after it, as Kafka's processor does by muting the channel until the
response is on its way (async commits and idempotent producers with five requests in
flight rely on it).  Two waits take effect first and keep the pipelining, because
clients pipeline behind them: an acks=all Produce waiting for the ISR (its appends are
done; Kafka holds the connection, kbroker lets the next appends go on in order:
NOT_IMPLEMENTED.md) and a parked Fetch (it changes nothing; a later request of the
connection makes it answer at once with what there is, below).  A handler that parks
holds up only this connection, never other connections.  A slot whose
handler answered ``NO_RESPONSE`` (acks=0 Produce) is released without writing.  A
handler that answered ``CloseConnection`` (an acks=0 Produce with an error, Kafka's
``requestChannel.closeConnection``) closes the connection in its turn: the responses of
the requests before it still leave, in order; nothing after it is read or answered.

What closes the connection, as Kafka's SocketServer does: a frame size below zero or
above ``socket.request.max.bytes``; a header that cannot be parsed; an unknown API
key; a version outside the range the broker serves (except ApiVersions, which gets
the KIP-511 v0 error answer); a request body that does not decode.

A handler that raises (at once or in its awaitable), or whose response does not encode,
does not close it: as Kafka's ``RequestHandlerHelper.handleError`` does, the request is
answered with UNKNOWN_SERVER_ERROR in the API's own layout
(kbroker/server/error_responses.py), the traceback is logged once, and the connection goes on
with the next request.  The one exception is Kafka's too: an acks=0 Produce has no
response to carry the error, so its connection is closed (in its turn, as above).
Reading pauses while too many responses are pending, the transport's write buffer is
full (uvicorn-style flow control), or a response is being sent raw (below), so a slow
reader cannot make the broker buffer without bound: what a connection holds is at most
``MAX_PENDING`` responses, and the record bytes of a Fetch response sent with sendfile
are never in memory at all.

Security (kbroker/security/listeners.py).  Each connection belongs to one listener; its requests carry
that listener's name and the connection's principal (``User:ANONYMOUS``; the client
certificate's mapped subject on SSL; the SASL user once authenticated).  On a SASL listener
every frame first goes to the connection's SaslAuthenticator (kbroker/server/sasl_authenticator.py)
until authentication completes (and, with KIP-368 re-authentication, for the session); its
answers take response slots like any other and a failure is answered, then the connection
closed.  On a TLS listener the transport encrypts: slices are read into bytes instead of raw
mode (no sendfile under TLS).

Zero-copy Fetch: a response with record slices is written by the connection itself with
``os.sendfile``, in *raw mode* (kbroker/server/raw_send.py).

"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from functools import partial
from time import perf_counter
from typing import TYPE_CHECKING, Any

from kbroker.metrics.counters import REQUEST_STATS
from kbroker.security.quotas import apply_quotas
from kbroker.server.error_responses import CLOSE, error_response
from kbroker.server.raw_send import RawSender, SendStats, read_slices  # noqa: F401  (SendStats: for importers)
from kbroker.server.registry import NO_RESPONSE, CloseConnection, unsupported_version_response
from kbroker.server.request_context import RequestContext
from kbroker.server.sasl_authenticator import SaslAuthenticator
from log.file_records import PinnedSlice
from wire.codec import decode_at
from wire.errors import DecodeError, WireError
from wire.framing import FrameDecoder, FrameError
from wire.headers import decode_request_header, encode_response
from wire.schema import REQUESTS

if TYPE_CHECKING:
    from kbroker.security.listeners import ListenerSpec
    from kbroker.server.server_state import ServerState
    from kbroker.server.services import Services

log = logging.getLogger("kbroker.connection")

API_VERSIONS = 18
FETCH = 1
MAX_PENDING = 64          # responses awaiting their turn before reading pauses


class _Slot:
    __slots__ = ("close_why", "parts", "ready", "t0")

    def __init__(self, t0: float = 0.0) -> None:
        self.parts: list[Any] | None = None
        self.ready = False
        self.close_why: str | None = None   # set: the connection closes when this slot's turn comes
        self.t0 = t0   # perf_counter() when its request arrived; 0: not timed (kbroker/metrics/counters.py)


class KafkaConnection(RawSender, asyncio.Protocol):
    def __init__(self, server: ServerState, services: Services, listener: ListenerSpec | None = None):
        self.server = server       # the registries and the set of open connections
        self.services = services   # every request's ports (kbroker/server/services.py)
        self._registry = server.registry
        self._inter_broker = server.inter_broker   # cluster mode: the controller's requests
        # Who is on the other end (kbroker/security/listeners.py): every request's context carries
        # these.  ``_auth`` is the SASL state machine (kbroker/server/sasl_authenticator.py) while
        # it has work (until authenticated, or for the session with KIP-368 re-auth): a
        # PLAINTEXT/SSL connection's only per-request cost is the ``is not None`` test.
        self.listener_name = listener.name if listener is not None else "PLAINTEXT"
        self.principal = "User:ANONYMOUS"
        self._auth: SaslAuthenticator | None = None
        self._tls = listener is not None and listener.ssl_context is not None
        self._listener = listener
        self._dispatching = False   # inside data_received: responses are written once, after it
        self.decoder = FrameDecoder(services.config.config["socket.request.max.bytes"])
        if listener is not None and listener.is_sasl:
            self._auth = SaslAuthenticator(self, listener)
        self.slots: deque[_Slot] = deque()
        self.tasks: set[asyncio.Future[Any]] = set()
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.closed = False
        self._read_paused = False
        self._write_paused = False
        # raw mode (kbroker/server/raw_send.py): parts not yet written, bytes already sent of _out[0]
        # when it is a slice, the socket's descriptor, the dup watched while waiting
        self._out: deque[Any] = deque()
        self._slice_sent = 0
        self._sock_fd = -1
        self._wake_fd = -1
        self._raw_slices = 0   # slices / bytes sent with sendfile since raw mode last ended
        self._raw_bytes = 0
        self._muted_until = 0.0   # loop time until which a throttled client is not read (quotas)
        self._quotas = services.quotas
        # A request's handler asked to close (CloseConnection: a failed acks=0 Produce):
        # ``_closing`` stops reading and dispatching at once; ``_close_when_sent`` is the
        # reason, set when that slot's turn has come, and the close happens once every
        # earlier response has been written (raw mode included).
        self._closing = False
        self._close_when_sent: str | None = None
        # requests dispatched so far, and the future a parked Fetch waits on for the next one
        self._requests = 0
        self._next_request: asyncio.Future[None] | None = None
        # Order of effects (module docstring): the request whose effects have not all
        # happened yet; while set, no later frame of this connection is dispatched.
        self._holding: RequestContext | None = None

    # ------------------------------------------------------------ asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.server.connections.add(self)
        if self._tls and self._auth is None:   # SSL: the certificate's subject, mapped
            from kbroker.security.tls import peer_principal

            try:
                self.principal = peer_principal(transport, self._listener.principal_rules)
                log.debug("TLS connection from %s on %s is %s", self.peer, self.listener_name, self.principal)
            except ValueError as e:   # no ssl.principal.mapping.rules rule applies
                self._abort(f"SSL authentication failed: {e}")

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._end_raw_mode()
        self.server.connections.discard(self)
        for t in self.tasks:
            t.cancel()
        self.tasks.clear()

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        try:
            self.decoder.feed(data)
        except FrameError as e:
            self._abort(f"bad frame: {e}")
            return
        self._dispatch_frames()

    def _dispatch_frames(self) -> None:
        """Dispatch the complete frames received, in order, until one holds the rest."""
        # Every response answered synchronously while this chunk's requests are dispatched
        # leaves in one writelines (one send) after the loop, not one send per request:
        # pipelining clients (librdkafka sends up to 5+ requests back to back) cost a
        # syscall and a wake-up of the client per chunk instead of per request.
        self._dispatching = True
        try:
            while not self.closed and not self._closing and self._holding is None:
                frame = self.decoder.next_frame()
                if frame is None:
                    break
                self._dispatch(frame)
        finally:
            self._dispatching = False
        self._flush()

    # ------------------------------------------------------------ requests
    def _dispatch(self, frame: bytearray) -> None:
        t0 = perf_counter()
        if self._auth is not None and self._auth.intercept(frame):
            return
        try:
            header, offset = decode_request_header(frame)
        except DecodeError as e:
            self._abort(f"unparsable request header: {e}")
            return
        key, version = header.request_api_key, header.request_api_version
        entry = self._registry.get(key)
        if (entry is None or not entry.min_version <= version <= entry.max_version) \
                and self._inter_broker is not None:
            # cluster mode: the controller's requests, and brokers' versions of client APIs
            # that are not advertised (AddPartitionsToTxn v4 verify_only)
            entry = self._inter_broker.get(key) or entry
        if entry is None:
            self._abort(f"unknown api key {key}")
            return
        self._requests += 1
        waiting = self._next_request
        if waiting is not None:   # a parked Fetch before this request answers now
            self._next_request = None
            if not waiting.done():
                waiting.set_result(None)
        ctx = RequestContext(key, version, header.correlation_id, header.client_id, self.services, self.peer,
                             self.principal, self.listener_name,
                             partial(self._request_after, self._requests) if key == FETCH else None)
        if not entry.min_version <= version <= entry.max_version:
            if key == API_VERSIONS:
                # KIP-511: answer an unknown ApiVersions version with error 35 in the v0 layout.
                self._respond(ctx, 0, unsupported_version_response(self._registry))
                return
            self._abort(f"api key {key} version {version} is not supported")
            return
        try:
            request = decode_at(REQUESTS[key].cls, frame, version, offset)[0]
        except WireError as e:
            self._abort(f"malformed api key {key} v{version} request: {e}")
            return
        slot = _Slot(t0)
        self.slots.append(slot)
        try:
            result = entry.handler(ctx, request)
        except Exception as exc:
            self._handler_failed(slot, ctx, request, exc)
            return
        if inspect.isawaitable(result):
            fut = asyncio.ensure_future(result)
            self.tasks.add(fut)
            fut.add_done_callback(lambda f, s=slot, c=ctx, r=request: self._async_done(f, s, c, r))
            if not ctx.effected:   # its effects are still to come: the next frames wait
                self._holding = ctx
                ctx.on_effect = partial(self._release, ctx)
        else:
            self._fill(slot, ctx, version, result, request)

    def _request_after(self, seq: int) -> asyncio.Future[None]:
        """Done once a request after the ``seq``-th has been read (already, if one has)."""
        loop = asyncio.get_running_loop()
        if self._requests > seq:
            done: asyncio.Future[None] = loop.create_future()
            done.set_result(None)
            return done
        if self._next_request is None:
            self._next_request = loop.create_future()
        return self._next_request

    def _respond(self, ctx: RequestContext, version: int, result: Any) -> None:
        slot = _Slot()
        self.slots.append(slot)
        self._fill(slot, ctx, version, result, None)

    # ------------------------------------------------------------ authentication (SASL)
    respond = _respond

    def send_raw(self, data: bytes) -> None:
        """Queue bytes that are no Kafka response (SaslHandshake v0 tokens) in order."""
        slot = _Slot()
        slot.parts = [data]
        slot.ready = True
        self.slots.append(slot)
        if not self._dispatching:
            self._flush()

    def authenticated(self, principal: str, keep: bool) -> None:
        """SASL succeeded: later requests run as ``principal``; ``keep``: the authenticator
        stays for re-authentication and session expiry (KIP-368)."""
        self.principal = principal
        if not keep:
            self._auth = None

    def fail_later(self, ctx: RequestContext, version: int, answer: Any, delay_s: float, why: str) -> None:
        """An authentication failure: ``answer`` is sent and the connection closed after
        ``delay_s`` (Kafka's connection.failed.authentication.delay.ms, which slows down
        password guessing); the authenticator drops what arrives meanwhile."""
        slot = _Slot()
        self.slots.append(slot)

        def fire() -> None:
            if not self.closed:
                self._fill(slot, ctx, version, answer, None)
                self.close_after_sending(why)

        asyncio.get_running_loop().call_later(delay_s, fire)

    def close_after_sending(self, why: str) -> None:
        """Write the responses whose turn has come (an authentication failure's answer),
        then close (Kafka: the failure response is sent, then the channel closed)."""
        if self.closed:
            return
        self._flush()
        log.info("closing connection from %s: %s", self.peer, why)
        self.closed = True
        self._end_raw_mode()
        if self.transport is not None:
            self.transport.close()   # close, not abort: the buffered answer leaves first

    def _async_done(self, fut: asyncio.Future[Any], slot: _Slot, ctx: RequestContext,
                    request: Any) -> None:
        self.tasks.discard(fut)
        if self.closed or fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:
            self._handler_failed(slot, ctx, request, exc)
        else:
            self._fill(slot, ctx, ctx.api_version, fut.result(), request)
        self._release(ctx)   # answered (or failed): whatever it did has happened

    def _release(self, ctx: RequestContext) -> None:
        """``ctx``'s request has taken effect: dispatch the frames that waited behind it."""
        if self._holding is not ctx:
            return
        self._holding = None
        ctx.on_effect = None
        if self.closed or self._dispatching:   # (inside the loop: it goes on by itself)
            return
        self._dispatch_frames()

    def _fill(self, slot: _Slot, ctx: RequestContext, version: int, result: Any,
              request: Any) -> None:
        if self._quotas is not None and self._quotas.enabled and request is not None:   # kbroker/security/quotas.py
            busy = perf_counter() - slot.t0 if slot.t0 and self._dispatching else 0.0
            self.throttle(apply_quotas(ctx, request, None if result is NO_RESPONSE
                                       or type(result) is CloseConnection else result, busy))
        if type(result) is CloseConnection:
            self._close_at(slot, result.why)
            return
        if result is not NO_RESPONSE:
            try:
                slot.parts = encode_response(result, version, ctx.correlation_id)
            except WireError as exc:
                if request is None:   # an answer built here (KIP-511), not by a handler
                    log.exception("cannot encode the api key %d v%d response; closing %s",
                                  ctx.api_key, version, self.peer)
                    self._abort("encode error")
                    return
                self._handler_failed(slot, ctx, request, exc)
                return
        slot.ready = True
        if slot.t0:
            REQUEST_STATS.observe(ctx.api_key, perf_counter() - slot.t0)
        if not self._dispatching:
            self._flush()

    def _handler_failed(self, slot: _Slot, ctx: RequestContext, request: Any,
                        exc: BaseException) -> None:
        """Answer UNKNOWN_SERVER_ERROR in the API's layout in ``slot``; the traceback is
        logged here, once (Kafka: RequestHandlerHelper.handleError)."""
        log.error("handler for api key %d v%d from %s (correlation id %d) failed; "
                  "answering UNKNOWN_SERVER_ERROR", ctx.api_key, ctx.api_version, self.peer,
                  ctx.correlation_id, exc_info=exc)
        try:
            answer = error_response(ctx.api_key, ctx.api_version, request)
            parts = None if answer is CLOSE else encode_response(answer, ctx.api_version,
                                                                 ctx.correlation_id)
        except Exception:
            log.exception("cannot build the error response for api key %d v%d",
                          ctx.api_key, ctx.api_version)
            parts = None
        if parts is None:   # acks=0 Produce (Kafka closes too), or no error response could be built
            self._close_at(slot, "handler error with no response to carry it")
            return
        slot.parts = parts
        slot.ready = True
        if slot.t0:
            REQUEST_STATS.observe(ctx.api_key, perf_counter() - slot.t0)
        if not self._dispatching:
            self._flush()

    def _close_at(self, slot: _Slot, why: str) -> None:
        """``slot`` answers nothing and closes the connection in its turn: the responses
        before it are still sent, in order; nothing after it is read, dispatched or sent
        (Kafka handles one request of a connection at a time, so it never has any)."""
        slot.close_why = why
        slot.ready = True
        self._closing = True
        if not self._dispatching:
            self._flush()

    def _flush(self) -> None:
        """Write every response whose turn has come, in one writelines (a single writev)."""
        if self._close_when_sent is not None:
            return   # closing: what was before the close slot is being written; nothing more
        slots = self.slots
        parts: list[Any] = []
        while slots and slots[0].ready:
            slot = slots.popleft()
            if slot.parts is not None:
                parts += slot.parts
            if slot.close_why is not None:
                self._close_when_sent = slot.close_why
                for later in slots:   # never answered (their tasks are cancelled on close)
                    for p in later.parts or ():
                        if type(p) is PinnedSlice:
                            p.close()
                slots.clear()
                break
        transport = self.transport
        if parts and transport is not None and not self.closed:
            if self._tls and any(type(p) is PinnedSlice for p in parts):
                try:
                    parts = read_slices(parts)   # TLS encrypts in the transport: no sendfile
                except OSError as e:
                    self._abort(f"cannot read records to send: {e}")
                    return
            if self._out or any(type(p) is PinnedSlice for p in parts):
                self._out.extend(parts)
                self._pump()
            else:
                transport.writelines(parts)
        if self._close_when_sent is not None and not self._out:
            self.close_after_sending(self._close_when_sent)   # the transport's buffer leaves first
            return
        self._update_reading()

    # ------------------------------------------------------------ flow control / closing
    def _update_reading(self) -> None:
        t = self.transport
        if t is None or self.closed:
            return
        should_pause = self._write_paused or self._closing or bool(self._out) or len(self.slots) >= MAX_PENDING or (
            self._holding is not None) or (
            self._muted_until > 0 and self._muted_until > asyncio.get_running_loop().time())
        if should_pause and not self._read_paused:
            self._read_paused = True
            t.pause_reading()
        elif not should_pause and self._read_paused:
            self._read_paused = False
            t.resume_reading()

    def throttle(self, ms: int) -> None:
        """KIP-219: a client over its quota gets its response at once, with throttle_time_ms,
        and then nothing more is read from it for ``ms`` (Kafka mutes the channel)."""
        if ms <= 0 or self.closed:
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + ms / 1000.0
        if until > self._muted_until:
            self._muted_until = until
            loop.call_at(until, self._update_reading)
        self._update_reading()

    def _abort(self, why: str) -> None:
        if self.closed:
            return
        log.info("closing connection from %s: %s", self.peer, why)
        self.closed = True
        self._end_raw_mode()   # the dup is unwatched and closed before the transport closes
        if self.transport is not None:
            self.transport.abort()
