"""The compaction topic configs and the cleaner's broker configs, with Kafka's names,
defaults and validators."""

import pytest

from log.config import (
    CLEANER_DEFAULTS,
    DEFAULTS,
    LONG_MAX,
    SERVER_SYNONYMS,
    CleanerConfig,
    LogConfig,
)


def test_compaction_topic_configs_have_kafkas_defaults_and_broker_synonyms():
    assert (DEFAULTS["min.compaction.lag.ms"], DEFAULTS["max.compaction.lag.ms"], DEFAULTS["min.cleanable.dirty.ratio"]) == (0, LONG_MAX, 0.5)
    assert SERVER_SYNONYMS["min.compaction.lag.ms"] == "log.cleaner.min.compaction.lag.ms"
    assert SERVER_SYNONYMS["max.compaction.lag.ms"] == "log.cleaner.max.compaction.lag.ms"
    assert SERVER_SYNONYMS["min.cleanable.dirty.ratio"] == "log.cleaner.min.cleanable.ratio"
    c = LogConfig.from_properties({"min.cleanable.dirty.ratio": "0.25", "min.compaction.lag.ms": "10",
                                   "max.compaction.lag.ms": "20"})
    assert (c.min_cleanable_dirty_ratio, c.min_compaction_lag_ms, c.max_compaction_lag_ms) == (0.25, 10, 20)
    assert isinstance(c.min_cleanable_dirty_ratio, float)
    assert c.to_properties()["min.cleanable.dirty.ratio"] == 0.25


@pytest.mark.parametrize("props, message", [
    ({"min.cleanable.dirty.ratio": "1.5"}, "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"min.cleanable.dirty.ratio": "-0.1"}, "Invalid value -0.1 for configuration min.cleanable.dirty.ratio: Value must be at least 0"),
    ({"min.compaction.lag.ms": "-1"}, "Invalid value -1 for configuration min.compaction.lag.ms: Value must be at least 0"),
    ({"max.compaction.lag.ms": "0"}, "Invalid value 0 for configuration max.compaction.lag.ms: Value must be at least 1"),
    ({"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "4"},
     "conflict topic config setting min.compaction.lag.ms (5) > max.compaction.lag.ms (4)"),
])
def test_out_of_range_compaction_configs_are_refused_with_kafkas_message(props, message):
    with pytest.raises(ValueError) as e:
        LogConfig.from_properties(props)
    assert str(e.value) == message


def test_the_cleaner_config_reads_kafkas_broker_names_and_keeps_kafkas_defaults():
    c = CleanerConfig()
    assert (c.num_threads, c.dedupe_buffer_size, c.io_buffer_size, c.backoff_ms, c.enable_cleaner) == (
        1, 128 * 1024 * 1024, 512 * 1024, 15000, True)
    assert c.dedupe_buffer_load_factor == 0.9 and c.max_io_bytes_per_second > 1e300
    assert set(CLEANER_DEFAULTS) >= {"log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.size",
                                     "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms", "log.cleaner.enable"}
    c = CleanerConfig.from_properties({"log.cleaner.threads": "4", "log.cleaner.dedupe.buffer.size": "4000000",
                                       "log.cleaner.io.max.bytes.per.second": "1048576.0", "log.cleaner.enable": "false",
                                       "unrelated.setting": "x"})
    assert (c.num_threads, c.dedupe_buffer_per_thread, c.max_io_bytes_per_second, c.enable_cleaner) == (4, 1_000_000, 1048576.0, False)
    assert c.io_buffer_per_thread == 512 * 1024 // 4 // 2
    with pytest.raises(ValueError, match="log.cleaner.threads: Value must be at least 0"):
        CleanerConfig(num_threads=-1)
