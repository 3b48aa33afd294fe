"""DescribeConfigs answers for TOPIC and BROKER resources, entry by entry as Kafka's
``ConfigHelper`` builds them.

A topic entry's value is the effective one (topic override, else the broker's value for
the topic config's server synonym, else Kafka's default).  Its source is the first of its
synonyms: the topic override (TOPIC_CONFIG), then the broker synonym as set dynamically
per broker, dynamically cluster-wide, statically, or by default.  Kafka keeps only the
synonyms from the first one named exactly like the server synonym on (``dropWhile``), so
``retention.ms`` with ``log.retention.ms`` unset lists none and reports DEFAULT_CONFIG even
though ``log.retention.hours`` has a default: the same quirk is kept here.

Reads the ports (kbroker/server/services.py) ``config_admin`` (the stored levels and overrides),
``config`` (the static and effective broker config) and ``node_id``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbroker.configs.config import KEYS, to_config_string
from kbroker.configs.dynamic_broker_configs import DYNAMIC_CONFIGS, broker_config_synonyms
from log.config import INT_CONFIGS, SERVER_SYNONYMS
from wire.error_codes import ErrorCode
from wire.messages import DescribeConfigsResponse

if TYPE_CHECKING:
    from kbroker.server.services import Services

Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym
DescribeResult = DescribeConfigsResponse.DescribeConfigsResult

# ConfigResource.Type ids
RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER = 2, 4, 8
# DescribeConfigsResponse.ConfigSource ids
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5
# DescribeConfigsResponse.ConfigType ids
_TYPES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7,
          "class": 8, "password": 9}


class DescribeError(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None):
        super().__init__(message)
        self.error = error
        self.message = message


def topic_config_type(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, tuple):
        return "list"
    if isinstance(value, float):
        return "double"
    if isinstance(value, int):
        return "int" if name in INT_CONFIGS else "long"
    return "string"


def _config_synonyms(services: Services, name: str) -> list[Synonym]:
    """Kafka's ConfigHelper.configSynonyms for a broker config name."""
    names = broker_config_synonyms(name)
    admin = services.config_admin
    levels = [
        (admin.broker_level(str(services.node_id)), DYNAMIC_BROKER_CONFIG),
        (admin.broker_level(""), DYNAMIC_DEFAULT_BROKER_CONFIG),
        ({k: v for k, v in services.config.static_config.originals.items() if k in KEYS}, STATIC_BROKER_CONFIG),
        ({k: to_config_string(key.default) for k, key in KEYS.items() if key.default is not None},
         DEFAULT_CONFIG),
    ]
    found = [Synonym(name=n, value=values[n], source=source)
             for values, source in levels for n in names if n in values]
    while found and found[0].name != name:
        found.pop(0)
    return found


def _entry(name: str, value: str | None, synonyms: list[Synonym], type_: str, read_only: bool,
           include_synonyms: bool) -> Entry:
    source = synonyms[0].source if synonyms else DEFAULT_CONFIG
    sensitive = type_ == "password"   # Kafka: a PASSWORD config's value is never described
    if sensitive:
        value = None
        synonyms = [Synonym(name=s.name, value=None, source=s.source) for s in synonyms]
    return Entry(name=name, value=value, read_only=read_only, is_default=source == DEFAULT_CONFIG,
                 config_source=source, is_sensitive=sensitive,
                 synonyms=synonyms if include_synonyms else [], config_type=_TYPES[type_],
                 documentation=None)


def describe_topic(services: Services, topic: str, keys: list[str] | None,
                   include_synonyms: bool) -> list[Entry]:
    admin = services.config_admin
    if not admin.topic_exists(topic):   # cluster mode: any topic of the cluster
        raise DescribeError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    overrides = admin.topic_overrides(topic)
    effective = admin.topic_config(topic).to_properties()
    out = []
    for name in sorted(effective):
        if keys and name not in keys:
            continue
        value = effective[name]
        text = to_config_string(value)
        server = SERVER_SYNONYMS.get(name)
        synonyms = _config_synonyms(services, server) if server in KEYS else []
        if name in overrides:
            synonyms.insert(0, Synonym(name=name, value=text, source=TOPIC_CONFIG))
        out.append(_entry(name, text, synonyms, topic_config_type(name, value), False, include_synonyms))
    return out


def describe_broker(services: Services, resource_name: str, keys: list[str] | None,
                    include_synonyms: bool) -> list[Entry]:
    """Resource name "" = the cluster-wide dynamic defaults only; this node's id = every
    broker config; anything else INVALID_REQUEST (Kafka's messages)."""
    per_broker = resource_name != ""
    if per_broker:
        try:
            node = int(resource_name)
        except ValueError:
            raise DescribeError(ErrorCode.INVALID_REQUEST,
                                f"Broker id must be an integer, but it is: {resource_name}") from None
        if node != services.node_id:
            raise DescribeError(ErrorCode.INVALID_REQUEST,
                                f"Unexpected broker id, expected {services.node_id} or empty string, "
                                f"but received {resource_name}")
        config = services.config.config
        values = {name: to_config_string(config[name]) for name in KEYS}
    else:
        values = services.config_admin.broker_level("")
    out = []
    for name in sorted(values):
        if keys and name not in keys:
            continue
        synonyms = _config_synonyms(services, name)
        if not per_broker:
            synonyms = [s for s in synonyms if s.source == DYNAMIC_DEFAULT_BROKER_CONFIG]
        out.append(_entry(name, values[name], synonyms, KEYS[name].type, name not in DYNAMIC_CONFIGS,
                          include_synonyms))
    return out


def describe(services: Services, resource_type: int, resource_name: str, keys: list[str] | None,
             include_synonyms: bool) -> DescribeResult:
    """One resource's answer.  ``keys`` null or empty means every config: Kafka filters by
    the requested names only when there are some (ConfigHelperUtils.buildConfigEntries),
    and kafka-python sends an empty list for a resource described without names."""
    try:
        if resource_type == RESOURCE_TOPIC:
            configs = describe_topic(services, resource_name, keys, include_synonyms)
        elif resource_type == RESOURCE_BROKER:
            configs = describe_broker(services, resource_name, keys, include_synonyms)
        else:
            raise DescribeError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {resource_type}")
    except DescribeError as e:
        return DescribeResult(error_code=e.error, error_message=e.message, resource_type=resource_type,
                              resource_name=resource_name, configs=[])
    return DescribeResult(error_code=0, error_message=None, resource_type=resource_type,
                          resource_name=resource_name, configs=configs)
