"""Broker configuration: Kafka's property names, types and defaults (KafkaConfig).

Built from a server.properties file plus ``--override key=value`` pairs, like
``kafka-server-start.sh``.  Our defaults differ from Kafka's in five places only, so
that ``kbroker serve`` with no file is a useful single-node broker:
``listeners=PLAINTEXT://localhost:9092``, ``log.dirs=./data``, ``node.id=1``,
``num.partitions=1`` (Kafka's too) and ``auto.create.topics.enable=true`` (Kafka's too).
An unknown property is warned about and ignored; an invalid value raises ConfigError
naming the property, and startup stops.  KRaft controller settings (process.roles,
controller.quorum.voters, ...) are accepted so Kafka's own files load unchanged.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass
from typing import Any

from log.config import SERVER_SYNONYMS, LogConfig

log = logging.getLogger("kbroker.config")

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1


class ConfigError(ValueError):
    """An invalid configuration value; the message names the property."""


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: str            # boolean, short, int, long, double, string, list, password
    default: Any         # parsed value, or None for "no default"
    valid: tuple[str, ...] | None = None   # allowed values for strings/lists
    at_least: int | None = None


def _k(name: str, type_: str, default: Any, valid: tuple[str, ...] | None = None,
       at_least: int | None = None) -> ConfigKey:
    return ConfigKey(name, type_, default, valid, at_least)


_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

KEYS: dict[str, ConfigKey] = {k.name: k for k in [
    # ---- server basics
    _k("listeners", "list", ["PLAINTEXT://localhost:9092"]),
    _k("advertised.listeners", "list", None),
    _k("listener.security.protocol.map", "string",
       "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"),
    _k("inter.broker.listener.name", "string", None),
    _k("node.id", "int", 1, at_least=0),
    _k("broker.id", "int", -1),
    _k("broker.rack", "string", None),
    _k("process.roles", "list", []),
    _k("controller.quorum.voters", "list", []),
    _k("controller.quorum.bootstrap.servers", "list", []),
    _k("controller.listener.names", "list", []),
    _k("log.dirs", "list", ["./data"]),
    _k("log.dir", "string", "/tmp/kafka-logs"),
    _k("num.network.threads", "int", 3, at_least=1),
    _k("num.io.threads", "int", 8, at_least=1),
    _k("background.threads", "int", 10, at_least=1),
    _k("queued.max.requests", "int", 500, at_least=1),
    _k("socket.send.buffer.bytes", "int", 102400),
    _k("socket.receive.buffer.bytes", "int", 102400),
    _k("socket.request.max.bytes", "int", 104857600, at_least=1),
    _k("connections.max.idle.ms", "long", 600000),
    _k("request.timeout.ms", "int", 30000, at_least=0),
    # ---- authorization and quotas (issue 17; kbroker/security/authorizer.py, kbroker/security/quotas.py)
    _k("authorizer.class.name", "string", ""),
    _k("super.users", "string", None),
    _k("allow.everyone.if.no.acl.found", "boolean", False),
    _k("quota.window.num", "int", 11, at_least=1),
    _k("quota.window.size.seconds", "int", 1, at_least=1),
    # ---- listeners' security (issue 17; kbroker/security/listeners.py): each may be given per
    # listener as listener.name.<listener lower case>.<key> (Kafka's ListenerName prefix)
    _k("security.inter.broker.protocol", "string", "PLAINTEXT", _PROTOCOLS),
    _k("sasl.enabled.mechanisms", "list", ["GSSAPI"]),
    _k("sasl.mechanism.inter.broker.protocol", "string", "GSSAPI"),
    _k("sasl.jaas.config", "password", None),
    _k("sasl.server.max.receive.size", "int", 524288),
    _k("connection.failed.authentication.delay.ms", "int", 100, at_least=0),
    _k("connections.max.reauth.ms", "long", 0),
    _k("ssl.protocol", "string", "TLSv1.3"),
    _k("ssl.enabled.protocols", "list", ["TLSv1.2", "TLSv1.3"]),
    _k("ssl.cipher.suites", "list", []),
    _k("ssl.client.auth", "string", "none", ("required", "requested", "none")),
    _k("ssl.keystore.type", "string", "JKS"),
    _k("ssl.keystore.location", "string", None),
    _k("ssl.keystore.password", "password", None),
    _k("ssl.key.password", "password", None),
    _k("ssl.keystore.certificate.chain", "password", None),
    _k("ssl.keystore.key", "password", None),
    _k("ssl.truststore.type", "string", "JKS"),
    _k("ssl.truststore.location", "string", None),
    _k("ssl.truststore.password", "password", None),
    _k("ssl.truststore.certificates", "password", None),
    _k("ssl.endpoint.identification.algorithm", "string", "https"),
    _k("ssl.principal.mapping.rules", "string", "DEFAULT"),
    # ---- cluster mode (issue 13): set zookeeper.connect to join a cluster
    _k("zookeeper.connect", "string", None),
    _k("zookeeper.session.timeout.ms", "int", 18000),
    _k("zookeeper.connection.timeout.ms", "int", None),
    _k("controlled.shutdown.enable", "boolean", True),
    _k("controlled.shutdown.max.retries", "int", 3),
    _k("controlled.shutdown.retry.backoff.ms", "long", 5000),
    _k("auto.leader.rebalance.enable", "boolean", True),
    _k("leader.imbalance.check.interval.seconds", "long", 300, at_least=1),
    _k("leader.imbalance.per.broker.percentage", "int", 10),
    _k("num.recovery.threads.per.data.dir", "int", 2, at_least=1),
    # ---- replication (issue 14; Kafka's ReplicationConfigs names and defaults)
    _k("replica.lag.time.max.ms", "long", 30000, at_least=1),
    _k("replica.fetch.wait.max.ms", "int", 500, at_least=0),
    _k("replica.fetch.min.bytes", "int", 1, at_least=0),
    _k("replica.fetch.max.bytes", "int", 1048576, at_least=0),
    _k("replica.fetch.response.max.bytes", "int", 10485760, at_least=0),
    _k("replica.fetch.backoff.ms", "int", 1000, at_least=0),
    _k("replica.socket.timeout.ms", "int", 30000),
    _k("num.replica.fetchers", "int", 1, at_least=1),
    _k("replica.high.watermark.checkpoint.interval.ms", "long", 5000, at_least=1),
    # KIP-392 fetch from follower: null = consumers read from leaders only (Kafka's default);
    # the one class accepted is Kafka's rack-aware selector (kbroker/replica/replica_selector.py)
    _k("replica.selector.class", "string", None),
    # KIP-227 fetch sessions (kbroker/replica/fetch_session.py; Kafka's ServerConfigs names and defaults)
    _k("max.incremental.fetch.session.cache.slots", "int", 1000, at_least=0),
    _k("min.incremental.fetch.session.eviction.ms", "int", 120000, at_least=0),
    # ---- topics
    _k("auto.create.topics.enable", "boolean", True),
    _k("delete.topic.enable", "boolean", True),
    _k("num.partitions", "int", 1, at_least=1),
    _k("default.replication.factor", "int", 1, at_least=1),
    _k("min.insync.replicas", "int", 1, at_least=1),
    _k("unclean.leader.election.enable", "boolean", False),
    _k("message.max.bytes", "int", 1048588, at_least=0),
    _k("compression.type", "string", "producer",
       ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _k("compression.gzip.level", "int", -1),
    _k("compression.lz4.level", "int", 9),
    _k("compression.zstd.level", "int", 3),
    # ---- log (topic-config synonyms, see log.config.SERVER_SYNONYMS)
    _k("log.segment.bytes", "int", 1073741824, at_least=14),
    _k("log.roll.ms", "long", None, at_least=1),
    _k("log.roll.hours", "int", 168, at_least=1),
    _k("log.roll.jitter.ms", "long", None, at_least=0),
    _k("log.roll.jitter.hours", "int", 0, at_least=0),
    _k("log.retention.ms", "long", None),
    _k("log.retention.minutes", "int", None),
    _k("log.retention.hours", "int", 168),
    _k("log.retention.bytes", "long", -1),
    _k("log.retention.check.interval.ms", "long", 300000, at_least=1),
    _k("log.index.size.max.bytes", "int", 10485760, at_least=4),
    _k("log.index.interval.bytes", "int", 4096, at_least=0),
    _k("log.flush.interval.messages", "long", LONG_MAX, at_least=1),
    _k("log.flush.interval.ms", "long", None),
    _k("log.flush.scheduler.interval.ms", "long", LONG_MAX),
    _k("log.flush.offset.checkpoint.interval.ms", "int", 60000, at_least=0),
    _k("log.flush.start.offset.checkpoint.interval.ms", "int", 60000, at_least=0),
    _k("log.segment.delete.delay.ms", "long", 60000, at_least=0),
    _k("log.message.timestamp.type", "string", "CreateTime", ("CreateTime", "LogAppendTime")),
    _k("log.message.timestamp.before.max.ms", "long", LONG_MAX, at_least=0),
    _k("log.message.timestamp.after.max.ms", "long", 3600000, at_least=0),
    _k("log.cleanup.policy", "list", ["delete"], ("delete", "compact")),
    _k("log.cleaner.enable", "boolean", True),
    _k("log.cleaner.threads", "int", 1, at_least=0),
    _k("log.cleaner.delete.retention.ms", "long", 86400000, at_least=0),
    _k("log.cleaner.min.compaction.lag.ms", "long", 0, at_least=0),
    _k("log.cleaner.min.cleanable.ratio", "double", 0.5),
    _k("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, at_least=1),
    _k("log.cleaner.dedupe.buffer.size", "long", 134217728),
    _k("log.cleaner.io.buffer.size", "int", 524288, at_least=0),
    _k("log.cleaner.io.buffer.load.factor", "double", 0.9),
    _k("log.cleaner.io.max.bytes.per.second", "double", 1.7976931348623157e308),
    _k("log.cleaner.backoff.ms", "long", 15000, at_least=0),
    _k("log.preallocate", "boolean", False),
    _k("log.local.retention.ms", "long", -2, at_least=-2),
    _k("log.local.retention.bytes", "long", -2, at_least=-2),
    # ---- groups and offsets (issue 5)
    _k("offsets.topic.num.partitions", "int", 50, at_least=1),
    _k("offsets.topic.replication.factor", "short", 3, at_least=1),
    _k("offsets.topic.segment.bytes", "int", 104857600, at_least=1),
    _k("offsets.retention.minutes", "int", 10080, at_least=1),
    _k("offsets.retention.check.interval.ms", "long", 600000, at_least=1),
    _k("offsets.commit.timeout.ms", "int", 5000, at_least=1),
    _k("offsets.load.buffer.size", "int", 5242880, at_least=1),
    _k("group.initial.rebalance.delay.ms", "int", 3000),
    _k("group.min.session.timeout.ms", "int", 6000),
    _k("group.max.session.timeout.ms", "int", 1800000),
    _k("group.max.size", "int", INT_MAX, at_least=1),
    # the consumer group protocol (KIP-848), Kafka 4's GroupCoordinatorConfig names and defaults
    _k("group.consumer.session.timeout.ms", "int", 45000, at_least=1),
    _k("group.consumer.min.session.timeout.ms", "int", 45000, at_least=1),
    _k("group.consumer.max.session.timeout.ms", "int", 60000, at_least=1),
    _k("group.consumer.heartbeat.interval.ms", "int", 5000, at_least=1),
    _k("group.consumer.min.heartbeat.interval.ms", "int", 5000, at_least=1),
    _k("group.consumer.max.heartbeat.interval.ms", "int", 15000, at_least=1),
    _k("group.consumer.max.size", "int", INT_MAX, at_least=1),
    _k("group.consumer.assignment.interval.ms", "int", 1000, at_least=0),
    _k("group.consumer.min.assignment.interval.ms", "int", 0, at_least=0),
    _k("group.consumer.max.assignment.interval.ms", "int", 15000, at_least=0),
    _k("group.consumer.assignors", "list", ["uniform", "range"]),
    _k("group.consumer.migration.policy", "string", "bidirectional",
       valid=("disabled", "upgrade", "downgrade", "bidirectional")),
    _k("group.coordinator.rebalance.protocols", "list", ["classic", "consumer", "streams"]),
    # ---- producers and transactions
    _k("producer.id.expiration.ms", "int", 86400000, at_least=1),
    _k("transactional.id.expiration.ms", "int", 604800000, at_least=1),
    _k("transaction.max.timeout.ms", "int", 900000, at_least=1),
    _k("transaction.state.log.num.partitions", "int", 50, at_least=1),
    _k("transaction.state.log.replication.factor", "short", 3, at_least=1),
    _k("transaction.state.log.min.isr", "int", 2, at_least=1),
    _k("transaction.state.log.segment.bytes", "int", 104857600, at_least=1),
    _k("transaction.state.log.load.buffer.size", "int", 5242880, at_least=1),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000, at_least=1),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600000, at_least=1),
    _k("transaction.partition.verification.enable", "boolean", True),
    # ---- operations (issue 18; kbroker's own, not Kafka's): both off unless set
    # Prometheus /metrics on this port (0: a free one), on the first listener's host
    _k("kbroker.metrics.port", "int", None, at_least=0),
    # the web console, e.g. http://127.0.0.1:9080 (kbroker/console/)
    _k("kbroker.console.listener", "string", None),
    # full garbage collections skip the broker's long-lived objects (kbroker/app/gc_freeze.py);
    # false: the interpreter's default collector (for measuring the difference)
    _k("kbroker.gc.freeze.enable", "boolean", True),
]}


_INT_BOUNDS = {"short": (-(1 << 15), (1 << 15) - 1), "int": (-(1 << 31), INT_MAX),
               "long": (-(1 << 63), LONG_MAX)}
_LISTENER = re.compile(r"^([A-Za-z0-9_]+)://(\[[0-9a-fA-F:.]+\]|[^:/\s]*):(\d+)$")


_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")  # what Integer.parseInt / Long.parseLong accept


def parse_value(key: ConfigKey, raw: str) -> Any:
    """One property as Kafka's ConfigDef parses and validates it (value trimmed).  A bad value
    raises ConfigError with the text of Kafka's ConfigException ("Invalid value abc for
    configuration log.retention.ms: Not a number of type LONG"), which start-up prints and
    AlterConfigs on a broker resource hands back to the client."""
    text = raw.strip()
    t = key.type

    def invalid(why: str) -> ConfigError:
        return ConfigError(f"Invalid value {raw} for configuration {key.name}: {why}")

    if t == "boolean":
        if text.lower() not in ("true", "false"):
            raise invalid("Expected value to be either true or false")
        return text.lower() == "true"
    if t in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[t]
        if not _JAVA_INTEGER.fullmatch(text) or not lo <= int(text) <= hi:
            raise invalid(f"Not a number of type {t.upper()}")
        value = int(text)
        if key.at_least is not None and value < key.at_least:
            raise invalid(f"Value must be at least {key.at_least}")  # ConfigDef.Range.atLeast
        return value
    if t == "double":
        try:
            return float(text)
        except ValueError:
            raise invalid("Not a number of type DOUBLE") from None
    if t == "list":
        items = [p.strip() for p in text.split(",") if p.strip()]
        if key.valid is not None:
            for item in items:
                if item not in key.valid:  # ConfigDef.ValidList
                    raise invalid(f"String must be one of: {', '.join(key.valid)}")
        return items
    if key.valid is not None and text not in key.valid:  # ConfigDef.ValidString
        raise invalid(f"String must be one of: {', '.join(key.valid)}")
    return text


@dataclass(frozen=True, slots=True)
class Listener:
    name: str        # listener name, e.g. PLAINTEXT
    host: str        # "" binds every interface (Kafka: empty host = default interface)
    port: int

    @property
    def bind_host(self) -> str | None:
        return self.host.strip("[]") or None


def parse_listeners(items: list[str], prop: str) -> list[Listener]:
    out = []
    for item in items:
        m = _LISTENER.match(item)
        if not m:
            raise ConfigError(f"Invalid value {item!r} for configuration {prop}: "
                              "expected NAME://host:port")
        port = int(m.group(3))
        if port > 65535:
            raise ConfigError(f"Invalid value {item!r} for configuration {prop}: port out of range")
        out.append(Listener(m.group(1).upper(), m.group(2), port))
    return out


# The replica.selector.class values kbroker implements (Kafka's class names).
REPLICA_SELECTORS = ("org.apache.kafka.common.replica.RackAwareReplicaSelector",)


class BrokerConfig:
    """Parsed, validated broker settings.  ``cfg["log.dirs"]`` gives a typed value.

    ``replica.selector.class``: unset (consumers read from leaders only) or
    ``org.apache.kafka.common.replica.RackAwareReplicaSelector``; any other class raises
    ConfigError at start-up (kbroker cannot load Java classes)."""

    def __init__(self, props: dict[str, str] | None = None):
        self.originals = dict(props or {})
        self.values: dict[str, Any] = {k.name: k.default for k in KEYS.values()}
        self.unknown: list[str] = []
        for name, raw in self.originals.items():
            key = KEYS.get(name)
            if key is None and name.startswith("listener.name."):
                continue   # per-listener settings, read by kbroker/security/listeners.py
            if key is None:
                self.unknown.append(name)
                log.warning("The configuration '%s' was supplied but isn't a known config.", name)
                continue
            self.values[name] = parse_value(key, raw)
        self.listeners = parse_listeners(self.values["listeners"], "listeners")
        if not self.listeners:
            raise ConfigError("Invalid value '' for configuration listeners: no listener")
        adv = self.values["advertised.listeners"]
        self.advertised_listeners = parse_listeners(adv, "advertised.listeners") if adv else None
        if not self.values["log.dirs"]:
            raise ConfigError("Invalid value '' for configuration log.dirs: no directory")
        if self.values["group.min.session.timeout.ms"] > self.values["group.max.session.timeout.ms"]:
            raise ConfigError("group.min.session.timeout.ms must not exceed group.max.session.timeout.ms")
        # GroupCoordinatorConfig's requirements for the consumer group protocol, Kafka's messages
        v = self.values
        for kind in ("session.timeout", "heartbeat.interval", "assignment.interval"):
            value, lo, hi = (v[f"group.consumer.{kind}.ms"], v[f"group.consumer.min.{kind}.ms"],
                             v[f"group.consumer.max.{kind}.ms"])
            if value < lo:
                raise ConfigError(f"group.consumer.{kind}.ms must be greater than or equal to "
                                  f"group.consumer.min.{kind}.ms")
            if value > hi:
                raise ConfigError(f"group.consumer.{kind}.ms must be less than or equal to "
                                  f"group.consumer.max.{kind}.ms")
        for name in v["group.consumer.assignors"]:   # Kafka instantiates them at start-up
            if name not in ("uniform", "range", "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
                            "org.apache.kafka.coordinator.group.assignor.RangeAssignor"):
                raise ConfigError(f"Class {name} cannot be found")
        if v["group.consumer.heartbeat.interval.ms"] >= v["group.consumer.session.timeout.ms"]:
            raise ConfigError("group.consumer.heartbeat.interval.ms must be less than "
                              "group.consumer.session.timeout.ms")
        # KafkaConfig.validateValues' replication checks, with Kafka's messages.
        if self.values["replica.fetch.wait.max.ms"] > self.values["replica.socket.timeout.ms"]:
            raise ConfigError("replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms "
                              "to prevent unnecessary socket timeouts")
        if self.values["replica.fetch.wait.max.ms"] > self.values["replica.lag.time.max.ms"]:
            raise ConfigError("replica.fetch.wait.max.ms should always be less than or equal to "
                              "replica.lag.time.max.ms to prevent frequent changes in ISR")
        selector = self.values["replica.selector.class"]
        if selector is not None and selector not in REPLICA_SELECTORS:
            raise ConfigError(f"Invalid value {selector} for configuration replica.selector.class: "
                              f"only {', '.join(REPLICA_SELECTORS)} is supported")
        self._resolve_broker_id()
        self.log_config = self._default_log_config()

    def _resolve_broker_id(self) -> None:
        """``broker.id`` is a synonym of ``node.id`` (Kafka: "broker.id must be equal to
        node.id" when both are set); either one names this broker."""
        broker_id = self.values["broker.id"]
        if broker_id < 0:
            return
        if "node.id" in self.originals and self.values["node.id"] != broker_id:
            raise ConfigError(f"broker.id ({broker_id}) must be equal to node.id "
                              f"({self.values['node.id']}) when both are set")
        self.values["node.id"] = broker_id

    @property
    def cluster_mode(self) -> bool:
        """Cluster mode starts when ``zookeeper.connect`` is set."""
        return bool(self.values["zookeeper.connect"])

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    @property
    def node_id(self) -> int:
        return self.values["node.id"]

    @property
    def log_dirs(self) -> list[str]:
        return list(self.values["log.dirs"])

    def _broker_value(self, prop: str) -> Any:
        """The broker-level value behind a topic config, with Kafka's ms/minutes/hours rules."""
        v = self.values
        if prop == "log.retention.ms":
            if v["log.retention.ms"] is not None:
                return v["log.retention.ms"]
            if v["log.retention.minutes"] is not None:
                return v["log.retention.minutes"] * 60_000
            return v["log.retention.hours"] * 3_600_000
        if prop == "log.roll.ms":
            return v["log.roll.ms"] if v["log.roll.ms"] is not None else v["log.roll.hours"] * 3_600_000
        if prop == "log.roll.jitter.ms":
            j = v["log.roll.jitter.ms"]
            return j if j is not None else v["log.roll.jitter.hours"] * 3_600_000
        if prop == "log.flush.interval.ms":
            f = v["log.flush.interval.ms"]
            return f if f is not None else v["log.flush.scheduler.interval.ms"]
        if prop == "log.cleanup.policy":
            return ",".join(v[prop])
        return v.get(prop)

    def _default_log_config(self) -> LogConfig:
        """The LogConfig every topic starts from: Kafka's topic defaults overridden by the
        broker's ``log.*`` synonyms."""
        props: dict[str, object] = {}
        for topic_prop, server_prop in SERVER_SYNONYMS.items():
            if server_prop not in KEYS:
                continue
            value = self._broker_value(server_prop)
            if value is not None:
                props[topic_prop] = value
        try:
            base = LogConfig.from_properties(props)
        except (ValueError, KeyError) as e:
            raise ConfigError(f"Invalid log configuration: {e}") from None
        # Server-level values are defaults, not topic overrides.
        return dataclasses.replace(base, overrides=())


def load_config(path: str | None, overrides: list[str]) -> BrokerConfig:
    """server.properties (optional) plus ``key=value`` overrides, later ones winning."""
    from kbroker.configs.properties import MalformedPropertiesError, parse_properties

    props: dict[str, str] = {}
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                props.update(parse_properties(f.read()))
        except OSError as e:
            raise ConfigError(f"cannot read {path}: {e.strerror}") from None
        except MalformedPropertiesError as e:
            raise ConfigError(f"cannot read {path}: {e}") from None
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"Invalid override {item!r}: expected key=value")
        k, v = item.split("=", 1)
        props[k.strip()] = v
    return BrokerConfig(props)


def to_config_string(value: Any) -> str | None:
    """Kafka's ConfigDef.convertToString: lists comma-joined, booleans lower case."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)
