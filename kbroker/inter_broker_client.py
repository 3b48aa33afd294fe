"""How this broker opens a connection to another broker's inter-broker listener.

Kafka's brokers are clients of each other on ``inter.broker.listener.name`` with that
listener's security: TLS with its ssl.* settings (kbroker/tls.py client_context), and SASL
with ``sasl.mechanism.inter.broker.protocol`` using the ``username``/``password`` options of
``listener.name.<l>.<mechanism>.sasl.jaas.config`` (kbroker/listeners.py).  ``configure`` is
called once at start-up (cluster mode); ``open_connection`` then replaces
``asyncio.open_connection`` for the controller's links, ControlledShutdown and the replica
fetchers.  A failed SASL exchange raises ConnectionError (the callers' retry paths handle it).
Sessions are not re-authenticated: with ``connections.max.reauth.ms`` set on that listener the
peer closes the link when the session ends and the caller reconnects.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
from dataclasses import dataclass

from kbroker.client.sasl import PlainClient, SaslClientError, ScramClient
from kbroker.config import BrokerConfig, ConfigError
from kbroker.listeners import (
    SASL_PROTOCOLS,
    SSL_PROTOCOLS,
    jaas_for,
    listener_setting,
    protocol_map,
)
from wire.headers import decode_response, encode_request
from wire.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)


@dataclass(slots=True)
class _Settings:
    listener: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""


_settings = _Settings()
_correlation = itertools.count(1)


def configure(config: BrokerConfig, listener: str) -> None:
    global _settings
    protocol = protocol_map(config).get(listener, "PLAINTEXT")
    settings = _Settings(listener)
    if protocol in SSL_PROTOCOLS:
        from kbroker.tls import client_context

        settings.ssl_context = client_context(lambda key: listener_setting(config, listener, key))
    if protocol in SASL_PROTOCOLS:
        mechanism = config["sasl.mechanism.inter.broker.protocol"].upper()
        jaas = jaas_for(config, listener, mechanism)
        if jaas is None or "username" not in jaas.options or "password" not in jaas.options:
            raise ConfigError(f"inter-broker listener {listener} uses SASL {mechanism}: set username and password "
                              f"in listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config")
        settings.mechanism = mechanism
        settings.username, settings.password = jaas.options["username"], jaas.options["password"]
    _settings = settings


async def open_connection(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    s = _settings
    reader, writer = await asyncio.open_connection(
        host, port, ssl=s.ssl_context, server_hostname=host if s.ssl_context is not None else None)
    if s.mechanism is not None:
        try:
            await _authenticate(reader, writer, s)
        except BaseException:
            writer.close()
            raise
    return reader, writer


async def _roundtrip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, message: object,
                     version: int, cls: type) -> object:
    corr = next(_correlation) & 0x7FFFFFFF
    writer.write(encode_request(message, version, corr, "kbroker-inter-broker"))
    await writer.drain()
    size = int.from_bytes(await reader.readexactly(4), "big")
    return decode_response(cls, await reader.readexactly(size), version)[1]


async def _authenticate(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: _Settings) -> None:
    hs = await _roundtrip(reader, writer, SaslHandshakeRequest(mechanism=s.mechanism), 1, SaslHandshakeResponse)
    if hs.error_code != 0:  # type: ignore[attr-defined]
        raise ConnectionError(f"SASL handshake with {s.mechanism} refused (error {hs.error_code}, "  # type: ignore[attr-defined]
                              f"enabled: {hs.mechanisms})")  # type: ignore[attr-defined]
    client = PlainClient(s.username, s.password) if s.mechanism == "PLAIN" else \
        ScramClient(s.mechanism, s.username, s.password)  # type: ignore[arg-type]
    challenge: bytes | None = None
    while True:
        try:
            token = client.step(challenge)
        except SaslClientError as e:
            raise ConnectionError(f"SASL {s.mechanism}: {e}") from None
        if token is None:
            return
        answer = await _roundtrip(reader, writer, SaslAuthenticateRequest(auth_bytes=token), 2,
                                  SaslAuthenticateResponse)
        if answer.error_code != 0:  # type: ignore[attr-defined]
            raise ConnectionError(f"SASL {s.mechanism} authentication as {s.username} failed: "
                                  f"{answer.error_message}")  # type: ignore[attr-defined]
        challenge = bytes(answer.auth_bytes)  # type: ignore[attr-defined]
        if client.complete:
            return
