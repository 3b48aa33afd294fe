"""The consumer group protocol's broker settings (KIP-848): Kafka's names, defaults and the
bounds GroupCoordinatorConfig requires, with its messages."""

from __future__ import annotations

import pytest

from groups.config import GroupConfig
from kbroker.configs.config import BrokerConfig, ConfigError


def test_the_defaults_are_kafkas():
    c = BrokerConfig({})
    assert [c[k] for k in ("group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
                           "group.consumer.max.session.timeout.ms", "group.consumer.heartbeat.interval.ms",
                           "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms",
                           "group.consumer.assignors", "group.consumer.migration.policy")] == \
        [45_000, 45_000, 60_000, 5_000, 5_000, 15_000, ["uniform", "range"], "bidirectional"]


@pytest.mark.parametrize("props,message", [
    ({"group.consumer.session.timeout.ms": "1000"},
     "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
    ({"group.consumer.session.timeout.ms": "70000"},
     "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"),
    ({"group.consumer.heartbeat.interval.ms": "1000"},
     "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
    ({"group.consumer.heartbeat.interval.ms": "50000", "group.consumer.max.heartbeat.interval.ms": "60000"},
     "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"),
    ({"group.consumer.assignors": "uniform,sticky"}, "Class sticky cannot be found"),
    ({"group.consumer.migration.policy": "sideways"}, "String must be one of"),
])
def test_settings_out_of_kafkas_bounds_stop_the_broker_with_kafkas_message(props, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig(props)


def test_kafkas_assignor_class_names_name_the_builtin_assignors():
    cfg = GroupConfig.from_properties({"group.consumer.assignors":
                                       "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform"})
    assert cfg.consumer_assignors == ("range", "uniform")
