"""What the three admin compat suites (test_admin_confluent.py, test_admin_kafka_python.py,
test_admin_aiokafka.py) share: the topic config names Kafka 4 describes, the
DescribeConfigs source ids, the broker overrides that make retention observable within a
second, and a look at a partition's segment files on disk.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# Every topic config of Kafka 4's LogConfig (TopicConfig names): DescribeConfigs on a topic
# answers all of them, overridden or not (ConfigHelper.createResponseConfig over the whole
# LogConfig), which AdminClient read-modify-write flows rely on.
TOPIC_CONFIG_NAMES = frozenset({
    "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages",
    "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
    "max.compaction.lag.ms", "max.message.bytes", "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms", "min.insync.replicas", "preallocate", "remote.log.copy.disable",
    "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes", "retention.ms",
    "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable"})

# DescribeConfigsResponse.ConfigSource ids on the wire (TOPIC_CONFIG is what the Java and
# librdkafka admin clients call DYNAMIC_TOPIC_CONFIG).
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5

# Kafka's defaults for the values the tests look at.
DEFAULT_MAX_MESSAGE_BYTES = 1048588
DEFAULT_RETENTION_MS = 604800000
DEFAULT_SEGMENT_BYTES = 1073741824

# Broker overrides for the admin tests: retention passes every 200 ms and deleted segment
# files go at once, so a lowered retention.ms shows within a second.  Start such a broker
# with broker_factory(log_level="DEBUG", **FAST_RETENTION) to wait on its retention passes
# (BrokerProcess.wait_for_retention_pass) before asserting that retention deleted nothing.
FAST_RETENTION = {"log.retention.check.interval.ms": "200", "log.segment.delete.delay.ms": "0"}

# An hour ago: older than any retention.ms the tests lower to, newer than Kafka's
# message.timestamp.after/before limits would ever refuse.
OLD_TIMESTAMP_MS = int(time.time() * 1000) - 3600 * 1000


def segment_base_offsets(data_dir: Path, topic: str, partition: int) -> list[int]:
    """The base offsets of a partition's live segments (``.log`` files, not yet ``.deleted``)."""
    return sorted(int(p.name.split(".")[0]) for p in (data_dir / f"{topic}-{partition}").glob("*.log"))


def wait_until(probe: Callable[[], T], done: Callable[[T], bool], timeout_s: float = 60.0,
               interval_s: float = 0.1) -> T:
    """Call ``probe`` until ``done`` accepts its answer; the last answer either way (the
    caller asserts on it, so a timeout fails with the value that was seen).  The deadline is
    generous because a busy machine is slow; a wait that succeeds returns at once."""
    deadline = time.monotonic() + timeout_s
    value = probe()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(interval_s)
        value = probe()
    return value
