"""The broker's listeners: names, security protocols and per-listener security settings.

Kafka's rules (KafkaConfig / ListenerName / JaasContext):

* ``listeners`` is a list of ``NAME://host:port``; each NAME must appear in
  ``listener.security.protocol.map`` (``NAME:PROTOCOL,...``; default
  ``PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL``), else
  start-up fails with "No security protocol defined for listener NAME".
* A security setting may be given for one listener as
  ``listener.name.<name in lower case>.<setting>``; that wins over the plain setting.
  SASL's JAAS configuration is per listener *and* mechanism:
  ``listener.name.<l>.<mechanism lower case>.sasl.jaas.config`` (kbroker also accepts
  ``listener.name.<l>.sasl.jaas.config`` and ``sasl.jaas.config``).
* The inter-broker listener is ``inter.broker.listener.name``, else the listener whose
  protocol is ``security.inter.broker.protocol``; unset both: the first listener (kbroker's
  single-node default, where no broker-to-broker traffic exists).

A JAAS entry is ``<LoginModule class> required key="value" key2="value2";``.  PLAIN's users
are its ``user_<name>="<password>"`` options (PlainLoginModule); ``username``/``password`` are
the credentials this broker itself uses as a client on that listener (inter-broker).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kbroker.configs.config import KEYS, BrokerConfig, ConfigError, Listener, parse_value

if TYPE_CHECKING:
    import ssl

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
SSL_PROTOCOLS = ("SSL", "SASL_SSL")
# The mechanisms kbroker can serve (Kafka also has GSSAPI and OAUTHBEARER).
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

_JAAS_ENTRY = re.compile(r'^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)'
                         r'(?P<options>.*?);?\s*$', re.S)
_JAAS_OPTION = re.compile(r'\s*([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))', re.S)


@dataclass(frozen=True, slots=True)
class JaasEntry:
    login_module: str
    options: dict[str, str]


def parse_jaas(text: str, prop: str = "sasl.jaas.config") -> JaasEntry:
    """One JAAS login-module entry (the value of a ``sasl.jaas.config``)."""
    m = _JAAS_ENTRY.match(text)
    if m is None:
        raise ConfigError(f"Invalid value for configuration {prop}: expected "
                          "'<LoginModule> required key=\"value\" ...;'")
    options: dict[str, str] = {}
    rest = m.group("options").strip()
    pos = 0
    while pos < len(rest):
        om = _JAAS_OPTION.match(rest, pos)
        if om is None:
            raise ConfigError(f"Invalid value for configuration {prop}: cannot parse "
                              f"options at {rest[pos:pos + 20]!r}")
        value = om.group(2) if om.group(2) is not None else om.group(3)
        options[om.group(1)] = re.sub(r"\\(.)", r"\1", value)
        pos = om.end()
        while pos < len(rest) and rest[pos].isspace():
            pos += 1
    return JaasEntry(m.group("module"), options)


def parse_protocol_map(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, sep, proto = item.partition(":")
        proto = proto.strip().upper()
        if not sep or proto not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise ConfigError(f"Invalid value {text} for configuration listener.security.protocol.map: "
                              f"'{item}' is not NAME:PROTOCOL")
        out[name.strip().upper()] = proto
    return out


@dataclass(slots=True)
class ListenerSpec:
    """One listener with everything its connections need (built once at start-up)."""

    name: str
    host: str
    port: int
    protocol: str
    sasl_mechanisms: tuple[str, ...] = ()
    plain_users: dict[str, str] = field(default_factory=dict)
    max_reauth_ms: int = 0
    max_receive_size: int = 524288
    failed_auth_delay_ms: int = 100        # connection.failed.authentication.delay.ms
    ssl_context: ssl.SSLContext | None = None
    principal_rules: Any = None          # kbroker/security/tls.py PrincipalMapper, on SSL listeners

    @property
    def is_sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS

    @property
    def is_ssl(self) -> bool:
        return self.protocol in SSL_PROTOCOLS

    @property
    def bind_host(self) -> str | None:
        return self.host.strip("[]") or None


def listener_setting(config: BrokerConfig, listener: str, key: str) -> Any:
    """``listener.name.<listener>.<key>`` when set (parsed as ``key``), else ``key``."""
    raw = config.originals.get(f"listener.name.{listener.lower()}.{key}")
    if raw is not None:
        return parse_value(KEYS[key], raw)
    return config[key]


def jaas_for(config: BrokerConfig, listener: str, mechanism: str) -> JaasEntry | None:
    """The JAAS entry of ``mechanism`` on ``listener`` (most specific setting first)."""
    lname = listener.lower()
    for prop in (f"listener.name.{lname}.{mechanism.lower()}.sasl.jaas.config",
                 f"listener.name.{lname}.sasl.jaas.config", "sasl.jaas.config"):
        raw = config.originals.get(prop)
        if raw:
            return parse_jaas(raw, prop)
    return None


def protocol_map(config: BrokerConfig) -> dict[str, str]:
    return parse_protocol_map(config["listener.security.protocol.map"])


def inter_broker_listener_name(config: BrokerConfig) -> str:
    """Kafka's interBrokerListenerName (see the module docstring)."""
    named = config["inter.broker.listener.name"]
    if named:
        return named.upper()
    wanted = config["security.inter.broker.protocol"]
    protocols = protocol_map(config)
    if "security.inter.broker.protocol" in config.originals:
        for lst in config.listeners:
            if protocols.get(lst.name) == wanted:
                return lst.name
        raise ConfigError(f"security.inter.broker.protocol {wanted} must be the protocol of "
                          "one of the listeners")
    return config.listeners[0].name


def build_listeners(config: BrokerConfig) -> list[ListenerSpec]:
    """Every listener of ``config`` with its settings; ConfigError names what is wrong."""
    protocols = protocol_map(config)
    seen: set[str] = set()
    specs = []
    for lst in config.listeners:
        if lst.name in seen:
            raise ConfigError(f"Each listener must have a different name, listeners: "
                              f"{','.join(config['listeners'])}")
        seen.add(lst.name)
        proto = protocols.get(lst.name)
        if proto is None:
            raise ConfigError(f"No security protocol defined for listener {lst.name}")
        specs.append(_spec(config, lst, proto))
    return specs


def _spec(config: BrokerConfig, lst: Listener, proto: str) -> ListenerSpec:
    spec = ListenerSpec(lst.name, lst.host, lst.port, proto)
    if spec.is_sasl:
        mechs = tuple(m.strip().upper() for m in
                      listener_setting(config, lst.name, "sasl.enabled.mechanisms"))
        bad = [m for m in mechs if m not in SUPPORTED_MECHANISMS]
        if bad or not mechs:
            raise ConfigError(f"Invalid value {','.join(mechs)} for configuration "
                              f"listener.name.{lst.name.lower()}.sasl.enabled.mechanisms: kbroker serves "
                              f"{', '.join(SUPPORTED_MECHANISMS)} only")
        spec.sasl_mechanisms = mechs
        if "PLAIN" in mechs:
            jaas = jaas_for(config, lst.name, "PLAIN")
            if jaas is None:
                raise ConfigError(f"Could not find a 'KafkaServer' or "
                                  f"'{lst.name.lower()}.KafkaServer' entry in the JAAS configuration: "
                                  f"set listener.name.{lst.name.lower()}.plain.sasl.jaas.config")
            spec.plain_users = {k[5:]: v for k, v in jaas.options.items() if k.startswith("user_")}
        spec.max_reauth_ms = listener_setting(config, lst.name, "connections.max.reauth.ms")
        spec.max_receive_size = listener_setting(config, lst.name, "sasl.server.max.receive.size")
        spec.failed_auth_delay_ms = config["connection.failed.authentication.delay.ms"]
    if spec.is_ssl:
        from kbroker.security.tls import PrincipalMapper, server_context

        spec.ssl_context = server_context(lambda key: listener_setting(config, lst.name, key))
        spec.principal_rules = PrincipalMapper.parse(
            listener_setting(config, lst.name, "ssl.principal.mapping.rules"))
    return spec
