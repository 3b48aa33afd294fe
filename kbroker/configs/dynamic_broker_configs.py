"""Dynamic broker configs (KIP-226): broker settings changed at run time with
AlterConfigs / IncrementalAlterConfigs on a BROKER resource, persisted across restarts.

Two levels, as in Kafka: the cluster-wide default (resource name "") and this broker's own
(resource name = its node id).  A value's precedence, highest first: per-broker dynamic,
cluster-default dynamic, static (server.properties / --override), Kafka's default.  They
live in ``kbroker-broker-configs.json`` in the first log dir:
``{"": {"log.retention.ms": "1000"}, "1": {...}}`` (strings, as sent).  In cluster mode
that file is a mirror: ZooKeeper's ``/config/brokers/<default>`` and ``/config/brokers/<id>``
are the truth (kbroker/zk/broker_config_sync.py).

Which names are dynamic: the broker-level synonyms of topic configs (Kafka's
DynamicLogConfig: ``log.retention.ms``, ``log.segment.bytes``, ``message.max.bytes``,
``compression.type`` ...), since those change the defaults of every topic without an
override at once.  Anything else is read-only; Kafka answers an attempt to change it with
INVALID_REQUEST "Cannot update these configs dynamically".
"""

from __future__ import annotations

import os
from concurrent.futures import Future

from kbroker.configs.config import KEYS, BrokerConfig, ConfigError, parse_value
from kbroker.configs.json_file import JsonFileWriter, read_json
from log.config import SERVER_SYNONYMS

FILE_NAME = "kbroker-broker-configs.json"

# Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the names that set the same value,
# most specific first (ms before minutes before hours).
_ALIASES: list[list[str]] = [
    ["log.roll.ms", "log.roll.hours"],
    ["log.roll.jitter.ms", "log.roll.jitter.hours"],
    ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
    ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
]


def broker_config_synonyms(name: str) -> list[str]:
    for group in _ALIASES:
        if name in group:
            return list(group)
    return [name]


DYNAMIC_CONFIGS: frozenset[str] = frozenset(
    alias for server in SERVER_SYNONYMS.values() for alias in broker_config_synonyms(server)
    if alias in KEYS)


def usable(props: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The entries of a level read from elsewhere (ZooKeeper) this broker can apply, and the
    sorted names of the others: not dynamic here, or a value that does not parse."""
    kept, dropped = {}, []
    for name, raw in props.items():
        try:
            if name not in DYNAMIC_CONFIGS:
                raise ConfigError(name)
            parse_value(KEYS[name], raw)
        except (ConfigError, ValueError):
            dropped.append(name)
            continue
        kept[name] = raw
    return kept, sorted(dropped)


class DynamicBrokerConfigs:
    def __init__(self, log_dir: str, node_id: int):
        self.path = os.path.join(log_dir, FILE_NAME)
        self.node_id = node_id
        data = read_json(self.path, {})
        self.cluster_default: dict[str, str] = {k: str(v) for k, v in data.get("", {}).items()}
        self.per_broker: dict[str, str] = {k: str(v) for k, v in data.get(str(node_id), {}).items()}
        self._writer = JsonFileWriter(self.path)

    def level(self, resource_name: str) -> dict[str, str]:
        """The stored overrides of one level ("" = cluster default, else this node)."""
        return dict(self.cluster_default if resource_name == "" else self.per_broker)

    def effective(self, static: BrokerConfig) -> BrokerConfig:
        """The broker config with the dynamic levels applied over the static one."""
        return BrokerConfig({**static.originals, **self.cluster_default, **self.per_broker})

    def validate(self, static: BrokerConfig, resource_name: str, props: dict[str, str]) -> BrokerConfig:
        """The effective config if ``props`` became the level's whole set; ConfigError with
        Kafka's message for a name that cannot change at run time or a bad value."""
        fixed = sorted(n for n in props if n not in DYNAMIC_CONFIGS)
        if fixed:
            raise ConfigError(f"Cannot update these configs dynamically: Set({', '.join(fixed)})")
        for name, raw in props.items():
            parse_value(KEYS[name], raw)
        default = props if resource_name == "" else self.cluster_default
        mine = props if resource_name != "" else self.per_broker
        return BrokerConfig({**static.originals, **default, **mine})

    def set(self, resource_name: str, props: dict[str, str]) -> Future[None]:
        """Replace one level now; the future is done once the file holds it (written by the
        file's writer thread, json_file.py: never on the caller's thread)."""
        if resource_name == "":
            self.cluster_default = dict(props)
        else:
            self.per_broker = dict(props)
        data = {}
        if self.cluster_default:
            data[""] = self.cluster_default
        if self.per_broker:
            data[str(self.node_id)] = self.per_broker
        return self._writer.write(data)

    def durable(self) -> Future[None]:
        """Done once every change made so far is in the file."""
        return self._writer.durable()

    def close(self) -> None:
        """Finish the queued writes (shutdown)."""
        self._writer.close()
