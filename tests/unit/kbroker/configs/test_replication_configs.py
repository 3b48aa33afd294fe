"""Replication settings: Kafka's names, defaults and validators (ReplicationConfigs,
KafkaConfig.validateValues, LogConfig's min.insync.replicas)."""

from __future__ import annotations

import pytest

from kbroker.configs.config import BrokerConfig, ConfigError
from kbroker.configs.topic_configs import TopicConfigStore


def test_the_replication_settings_have_kafkas_defaults():
    c = BrokerConfig()
    assert {k: c[k] for k in (
        "min.insync.replicas", "unclean.leader.election.enable", "replica.lag.time.max.ms",
        "replica.fetch.wait.max.ms", "replica.fetch.min.bytes", "replica.fetch.max.bytes",
        "replica.fetch.response.max.bytes", "replica.fetch.backoff.ms", "num.replica.fetchers",
        "replica.high.watermark.checkpoint.interval.ms", "default.replication.factor",
        "offsets.topic.replication.factor", "transaction.state.log.replication.factor")} == {
        "min.insync.replicas": 1, "unclean.leader.election.enable": False,
        "replica.lag.time.max.ms": 30000, "replica.fetch.wait.max.ms": 500,
        "replica.fetch.min.bytes": 1, "replica.fetch.max.bytes": 1048576,
        "replica.fetch.response.max.bytes": 10485760, "replica.fetch.backoff.ms": 1000,
        "num.replica.fetchers": 1, "replica.high.watermark.checkpoint.interval.ms": 5000,
        "default.replication.factor": 1, "offsets.topic.replication.factor": 3,
        "transaction.state.log.replication.factor": 3}


@pytest.mark.parametrize("props, message", [
    ({"replica.fetch.wait.max.ms": "40000"},
     "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms"),
    ({"replica.lag.time.max.ms": "400"},
     "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms"),
    ({"min.insync.replicas": "0"}, "min.insync.replicas"),
    ({"num.replica.fetchers": "0"}, "num.replica.fetchers"),
])
def test_inconsistent_replication_settings_stop_start_up_with_kafkas_message(props, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig(props)


def test_a_topic_min_insync_replicas_override_is_validated_as_kafkas_log_config_does():
    defaults = BrokerConfig().log_config
    assert TopicConfigStore.validate({"min.insync.replicas": "2"}, defaults).min_insync_replicas == 2
    with pytest.raises(ValueError, match="Invalid value 0 for configuration min.insync.replicas: "
                                         "Value must be at least 1"):
        TopicConfigStore.validate({"min.insync.replicas": "0"}, defaults)
    assert TopicConfigStore.validate({"unclean.leader.election.enable": "true"},
                                     defaults).unclean_leader_election_enable is True
