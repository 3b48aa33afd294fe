"""How this broker opens a connection to another broker's inter-broker listener.

Kafka's brokers are clients of each other on ``inter.broker.listener.name`` with that
listener's security: TLS with its ssl.* settings (kbroker/security/tls.py client_context), and SASL
with ``sasl.mechanism.inter.broker.protocol`` using the ``username``/``password`` options of
``listener.name.<l>.<mechanism>.sasl.jaas.config`` (kbroker/security/listeners.py).  ``configure`` is
called once at start-up (cluster mode); ``open_connection`` then opens kbroker.client's
AsyncConnection with those settings for the controller's links, ControlledShutdown,
AlterPartition and the replica fetchers.  A failed SASL exchange raises ConnectionError
(SaslAuthenticationFailed; the callers' retry paths handle it).
Sessions are not re-authenticated: with ``connections.max.reauth.ms`` set on that listener the
peer closes the link when the session ends and the caller reconnects.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from kbroker.client import AsyncConnection, SaslCredentials
from kbroker.configs.config import BrokerConfig, ConfigError
from kbroker.security.listeners import (
    SASL_PROTOCOLS,
    SSL_PROTOCOLS,
    jaas_for,
    listener_setting,
    protocol_map,
)


@dataclass(slots=True)
class _Settings:
    listener: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslCredentials | None = None


_settings = _Settings()


def configure(config: BrokerConfig, listener: str) -> None:
    global _settings
    protocol = protocol_map(config).get(listener, "PLAINTEXT")
    settings = _Settings(listener)
    if protocol in SSL_PROTOCOLS:
        from kbroker.security.tls import client_context

        settings.ssl_context = client_context(lambda key: listener_setting(config, listener, key))
    if protocol in SASL_PROTOCOLS:
        mechanism = config["sasl.mechanism.inter.broker.protocol"].upper()
        jaas = jaas_for(config, listener, mechanism)
        if jaas is None or "username" not in jaas.options or "password" not in jaas.options:
            raise ConfigError(f"inter-broker listener {listener} uses SASL {mechanism}: set username and password "
                              f"in listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config")
        settings.sasl = SaslCredentials(mechanism, jaas.options["username"], jaas.options["password"])
    _settings = settings


async def open_connection(host: str, port: int, client_id: str) -> AsyncConnection:
    """A connection to another broker's inter-broker listener, authenticated; no ApiVersions
    (the callers send the versions they were written for) and no deadline of its own (the
    callers wrap their sends in theirs)."""
    s = _settings
    return await AsyncConnection.open(host, port, client_id=client_id, timeout_s=None, ssl_context=s.ssl_context,
                                      sasl=s.sasl, negotiate=False)
