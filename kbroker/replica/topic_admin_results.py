"""What CreateTopics answers per topic, the same in both modes: a refused topic's result and
a created topic's configs (v5+).  Used by the two ``TopicAdmin`` implementations
(kbroker/replica/local_topic_admin.py, kbroker/zk/zk_topic_admin.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbroker.configs.config import to_config_string
from kbroker.configs.dynamic_broker_configs import broker_config_synonyms
from log.config import DEFAULTS as TOPIC_DEFAULTS
from log.config import SERVER_SYNONYMS
from wire.error_codes import ErrorCode
from wire.messages import ZERO_UUID, CreateTopicsResponse

if TYPE_CHECKING:
    from kbroker.replica.broker_state import BrokerState

__all__ = ["Result", "created_topic_configs", "failed"]

Result = CreateTopicsResponse.CreatableTopicResult
# DescribeConfigs config sources
SOURCE_TOPIC, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER = 1, 2, 3
SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 4, 5

# Broker synonyms in hours or minutes give a topic config in milliseconds
# (ServerTopicConfigSynonyms' HOURS_TO_MILLISECONDS / MINUTES_TO_MILLISECONDS converters).
_TO_MS = {"log.retention.minutes": 60_000, "log.retention.hours": 3_600_000,
          "log.roll.hours": 3_600_000, "log.roll.jitter.hours": 3_600_000}


def failed(name: str, code: ErrorCode, message: str) -> Result:
    """A topic CreateTopics refused: no id, partition count, replication factor or configs."""
    return Result(name=name, topic_id=ZERO_UUID, error_code=code, error_message=message,
                  num_partitions=-1, replication_factor=-1, configs=None)


def created_topic_configs(state: BrokerState, configs: dict[str, str]) -> list:
    """The created topic's configs as Kafka's controller reports them
    (KafkaConfigSchema.resolveEffectiveTopicConfigs): a config given at creation, as sent,
    DYNAMIC_TOPIC_CONFIG; else the first broker synonym set per broker, then cluster-wide,
    then statically (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG), converted to the topic config's unit; else the topic config's
    own default, DEFAULT_CONFIG.  (Unlike DescribeConfigs there is no dropWhile quirk:
    log.retention.minutes alone gives retention.ms STATIC_BROKER_CONFIG here.)  ``state``
    gives this broker's config levels (its dynamic ones and its static file)."""
    levels = [(state.dynamic_configs.level(str(state.node_id)), SOURCE_DYNAMIC_BROKER),
              (state.dynamic_configs.level(""), SOURCE_DYNAMIC_DEFAULT_BROKER),
              (state.static_config.originals, SOURCE_STATIC_BROKER)]
    out = []
    for name, default in sorted(TOPIC_DEFAULTS.items()):
        value, source = to_config_string(default), SOURCE_DEFAULT
        server = SERVER_SYNONYMS.get(name)
        synonyms = broker_config_synonyms(server) if server is not None else []
        if name in configs:
            value, source = configs[name], SOURCE_TOPIC
        else:
            found = next(((values[s], level, s) for values, level in levels for s in synonyms if s in values), None)
            if found is not None:
                raw, source, synonym = found
                value = str(int(raw) * _TO_MS[synonym]) if synonym in _TO_MS else raw
        out.append(CreateTopicsResponse.CreatableTopicConfigs(
            name=name, value=value, read_only=False, config_source=source, is_sensitive=False))
    return out
