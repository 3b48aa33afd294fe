"""Broker configuration follows Kafka's names, defaults and validation rules."""

from __future__ import annotations

import pytest

from kbroker.configs.config import BrokerConfig, ConfigError, load_config
from kbroker.configs.properties import parse_properties


def test_with_no_file_the_broker_listens_on_localhost_9092_with_data_in_dot_data():
    c = BrokerConfig()
    assert [(x.name, x.host, x.port) for x in c.listeners] == [("PLAINTEXT", "localhost", 9092)]
    assert c.log_dirs == ["./data"]
    assert c.node_id == 1 and c["num.partitions"] == 1 and c["auto.create.topics.enable"] is True


def test_other_settings_take_kafkas_defaults():
    c = BrokerConfig()
    assert c["socket.request.max.bytes"] == 104857600
    assert c["message.max.bytes"] == 1048588
    assert c["log.segment.bytes"] == 1073741824
    assert c["offsets.topic.num.partitions"] == 50
    assert c["group.initial.rebalance.delay.ms"] == 3000
    lc = c.log_config
    assert lc.retention_ms == 168 * 3600 * 1000 and lc.segment_ms == 168 * 3600 * 1000
    assert lc.index_interval_bytes == 4096 and lc.segment_index_bytes == 10485760
    assert lc.max_message_bytes == 1048588 and lc.cleanup_policy == ("delete",)


def test_retention_ms_wins_over_minutes_which_wins_over_hours_as_in_kafka():
    assert BrokerConfig({"log.retention.hours": "2"}).log_config.retention_ms == 7_200_000
    assert BrokerConfig({"log.retention.hours": "2", "log.retention.minutes": "3"}).log_config.retention_ms == 180_000
    assert BrokerConfig({"log.retention.minutes": "3", "log.retention.ms": "5"}).log_config.retention_ms == 5


def test_broker_log_settings_become_topic_defaults():
    lc = BrokerConfig({"log.segment.bytes": "1000", "message.max.bytes": "2000",
                       "log.message.timestamp.type": "LogAppendTime"}).log_config
    assert (lc.segment_bytes, lc.max_message_bytes, lc.message_timestamp_type) == (1000, 2000, "LogAppendTime")
    assert lc.overrides == ()


@pytest.mark.parametrize(("name", "value"), [
    ("num.partitions", "zero"), ("num.partitions", "0"), ("auto.create.topics.enable", "yes"),
    ("listeners", "localhost:9092"), ("log.message.timestamp.type", "Wallclock"),
    ("log.cleanup.policy", "delete,shred"), ("socket.request.max.bytes", "99999999999"),
])
def test_an_invalid_value_is_refused_with_a_message_naming_the_property(name, value):
    with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
        BrokerConfig({name: value})


def test_an_unknown_property_is_warned_about_and_ignored(caplog):
    c = BrokerConfig({"no.such.thing": "1"})
    assert c.unknown == ["no.such.thing"]
    assert "no.such.thing" in caplog.text


def test_kraft_controller_settings_from_kafkas_own_files_are_accepted_silently(caplog):
    c = BrokerConfig({"process.roles": "broker,controller", "controller.quorum.voters": "1@localhost:9093",
                      "controller.listener.names": "CONTROLLER"})
    assert c.unknown == [] and caplog.text == ""


def test_overrides_win_over_the_properties_file(tmp_path):
    f = tmp_path / "server.properties"
    f.write_text("# a comment\nnum.partitions=3\nlog.dirs=/a,/b\n")
    c = load_config(str(f), ["num.partitions=5"])
    assert c["num.partitions"] == 5 and c.log_dirs == ["/a", "/b"]


def test_an_ephemeral_port_listener_is_accepted():
    assert BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0"}).listeners[0].port == 0


def test_java_properties_syntax_is_parsed_like_java_util_properties():
    text = "# c\n! also a comment\na=1\nb : 2\nc 3\nd=x\\\n    y\ne=\nf=tab\\there\ng=\\u0041\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "xy", "e": "", "f": "tab\there", "g": "A"}


def test_only_space_tab_and_form_feed_end_a_key_and_a_hash_after_a_continuation_is_data_as_in_java():
    assert parse_properties("a\u00a0b=1\nc\vd 2\n") == {"a\u00a0b": "1", "c\vd": "2"}
    assert parse_properties("\\\n#x=1\n") == {"#x": "1"}


def test_a_malformed_unicode_escape_in_server_properties_stops_the_broker_as_it_stops_kafka(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=3\nbad=\\u00zz\n")
    with pytest.raises(ConfigError, match=r"cannot read .*server.properties: .*\\u00zz"):
        load_config(str(path), [])
