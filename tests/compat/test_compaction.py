"""Log compaction in a real broker process, seen through confluent-kafka.

A topic is filled under ``cleanup.policy=delete`` (so the size before cleaning is known),
switched to ``compact`` with IncrementalAlterConfigs (a live config change), and the broker's
own cleaner threads do the rest.  Only non-active segments are cleaned, so each phase ends
with a *sentinel* record produced after ``segment.ms`` has passed: its append rolls the
segment, making everything before it cleanable.  Tombstones survive the first cleaning (it
sets their delete horizon, KIP-534) and are removed by a later cleaning once
``delete.retention.ms`` has passed; the second sentinel provides that later cleaning.

What a consumer from the beginning must then see, exactly: for every key its latest record
(key, value, headers, timestamp and original offset), no key whose latest record is a
tombstone, the sentinels; offsets strictly increasing with gaps.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from log.checkpoint import OffsetCheckpointFile
from log.cleaner_manager import CLEANER_OFFSET_CHECKPOINT_FILE
from tests.compat.test_confluent_kafka import Rec, consume_all, create_topic, produce_all
from tests.support.admin_helpers import wait_until

N_RECORDS = 100_000
N_KEYS = 1_000
SEGMENT_MS = 1500
DELETE_RETENTION_MS = 1000
TOPIC_CONFIGS = {
    "cleanup.policy": "delete",
    "retention.ms": "-1",
    "segment.bytes": str(256 * 1024),
    "segment.ms": str(SEGMENT_MS),
    "delete.retention.ms": str(DELETE_RETENTION_MS),
    "min.cleanable.dirty.ratio": "0",
}
BROKER = {"log.cleaner.backoff.ms": "100"}


def make_records(partitions: int, now_ms: int) -> list[Rec]:
    """100,000 records over 1,000 keys (key i always on partition i % partitions); about one in
    40 is a tombstone, so some keys end deleted and some are written again after one."""
    rng = random.Random(42)
    out = []
    for i in range(N_RECORDS):
        k = rng.randrange(N_KEYS)
        value = None if rng.random() < 0.025 else b"value-%d-" % i + b"x" * rng.randrange(60)
        out.append(Rec(k % partitions, b"key-%04d" % k, value, [("i", b"%d" % i)], now_ms + i // 100))
    return out


def latest_per_key(records: list[Rec], offsets: dict[int, list[int]]) -> dict[int, list[tuple[int, Rec]]]:
    """Per partition, the (offset, record) a fully compacted log keeps: each key's last record
    unless it is a tombstone, in offset order."""
    latest: dict[int, dict[bytes | None, tuple[int, Rec]]] = {}
    seen: dict[int, int] = {}
    for r in records:
        n = seen.get(r.partition, 0)
        seen[r.partition] = n + 1
        latest.setdefault(r.partition, {})[r.key] = (offsets[r.partition][n], r)
    return {p: sorted((o, r) for o, r in by_key.values() if r.value is not None) for p, by_key in latest.items()}


def log_bytes(data_dir: Path, topic: str) -> int:
    return sum(f.stat().st_size for f in data_dir.glob(f"{topic}-*/*.log"))


def alter(bootstrap: str, topic: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    assert admin.incremental_alter_configs([res])[res].result(timeout=15) is None


def produce_sentinels(bootstrap: str, topic: str, partitions: int, name: bytes) -> dict[int, tuple[int, Rec]]:
    """One record per partition, after ``segment.ms`` has passed so its append rolls; returns
    each partition's (offset, record)."""
    time.sleep(SEGMENT_MS / 1000 + 0.2)
    now = int(time.time() * 1000)
    recs = [Rec(p, name, b"sentinel", [], now) for p in range(partitions)]
    offsets = produce_all(bootstrap, topic, recs, {"acks": "all"})
    return {p: (offsets[p][0], recs[p]) for p in range(partitions)}


def wait_cleaned_to(data_dir: Path, topic: str, target: dict[int, int], timeout_s: float = 90.0) -> None:
    """Until the cleaner checkpoint says each partition is clean up to ``target`` (Kafka's
    ``cleaner-offset-checkpoint`` format: the first dirty offset of each compacted log)."""
    path = data_dir / CLEANER_OFFSET_CHECKPOINT_FILE

    def cleaned() -> dict:
        return OffsetCheckpointFile(str(path)).read() if path.exists() else {}

    got = wait_until(cleaned, lambda got: all(got.get((topic, p), -1) >= off for p, off in target.items()),
                     timeout_s)
    assert all(got.get((topic, p), -1) >= off for p, off in target.items()), \
        f"not cleaned to {target} within {timeout_s}s: checkpoint {got}"


def assert_view(bootstrap: str, topic: str, partitions: int, want: dict[int, list[tuple[int, Rec]]]) -> None:
    got = consume_all(bootstrap, topic, partitions, sum(len(v) for v in want.values()))
    for p in range(partitions):
        msgs = got[p]
        offsets = [m.offset() for m in msgs]
        assert offsets == [o for o, _ in want[p]], f"partition {p}: offsets"
        assert all(b - a >= 1 for a, b in zip(offsets, offsets[1:], strict=False))
        assert any(b - a > 1 for a, b in zip(offsets, offsets[1:], strict=False)), "no gaps: nothing was compacted"
        assert [(m.key(), m.value(), m.headers() or [], m.timestamp()) for m in msgs] == [
            (r.key, r.value, r.headers, (TIMESTAMP_CREATE_TIME, r.timestamp)) for _, r in want[p]], f"partition {p}"


def fill(bootstrap: str, topic: str, partitions: int) -> tuple[list[Rec], dict[int, list[int]]]:
    create_topic(bootstrap, topic, partitions, **TOPIC_CONFIGS)
    records = make_records(partitions, int(time.time() * 1000))
    offsets = produce_all(bootstrap, topic, records, {"acks": "all", "enable.idempotence": True,
                                                      "batch.num.messages": 500}, timeout_s=120)
    return records, offsets


def compact(b, topic: str, partitions: int) -> list[dict[int, tuple[int, Rec]]]:
    """Switch to compact, roll, wait for the first cleaning; wait out delete.retention.ms,
    roll again, wait for the cleaning that drops the tombstones.  Returns both sentinels."""
    alter(b.bootstrap, topic, cleanup_policy="compact")
    s1 = produce_sentinels(b.bootstrap, topic, partitions, b"~s1")
    wait_cleaned_to(b.data_dir, topic, {p: off for p, (off, _) in s1.items()})
    time.sleep(DELETE_RETENTION_MS / 1000)
    s2 = produce_sentinels(b.bootstrap, topic, partitions, b"~s2")
    wait_cleaned_to(b.data_dir, topic, {p: off for p, (off, _) in s2.items()})
    return [s1, s2]


def expected(records: list[Rec], offsets: dict[int, list[int]],
             sentinels: list[dict[int, tuple[int, Rec]]]) -> dict[int, list[tuple[int, Rec]]]:
    want = latest_per_key(records, offsets)
    return {p: v + [s[p] for s in sentinels] for p, v in want.items()}


@pytest.mark.timeout(240)
def test_a_compacted_topic_keeps_exactly_the_latest_record_per_key_and_drops_tombstones(broker_factory):
    b = broker_factory(**BROKER)
    topic, partitions = "compacted", 2
    records, offsets = fill(b.bootstrap, topic, partitions)
    before = log_bytes(b.data_dir, topic)

    sentinels = compact(b, topic, partitions)

    assert_view(b.bootstrap, topic, partitions, expected(records, offsets, sentinels))
    after = log_bytes(b.data_dir, topic)
    assert after < before / 20, (before, after)


@pytest.mark.timeout(240)
def test_a_kill_9_in_the_middle_of_a_cleaning_loses_nothing_and_the_restarted_broker_completes_it(broker_factory):
    # The cleaner is throttled so the kill lands while it writes its .cleaned segments.
    b = broker_factory(**BROKER, **{"log.cleaner.io.max.bytes.per.second": "300000"})
    topic, partitions = "compacted-kill", 1
    records, offsets = fill(b.bootstrap, topic, partitions)
    alter(b.bootstrap, topic, cleanup_policy="compact")
    part_dir = b.data_dir / f"{topic}-0"
    assert wait_until(lambda: any(part_dir.glob("*.cleaned")), bool, 60, 0.01), "the cleaner never started"
    b.kill()

    del b.overrides["log.cleaner.io.max.bytes.per.second"]
    b.start()
    sentinels = compact(b, topic, partitions)
    assert_view(b.bootstrap, topic, partitions, expected(records, offsets, sentinels))
    assert not list(part_dir.glob("*.cleaned")) and not list(part_dir.glob("*.swap"))


@pytest.mark.timeout(180)
def test_consumer_offsets_is_compacted_and_the_last_commit_survives_a_kill_9(broker_factory):
    b = broker_factory(**BROKER, **{"offsets.topic.num.partitions": "1", "offsets.topic.segment.bytes": "16384"})
    create_topic(b.bootstrap, "committed", 1)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "enable.auto.commit": False})
    try:
        for i in range(3000):
            c.commit(offsets=[TopicPartition("committed", 0, i, metadata=f"m{i}")], asynchronous=False)
    finally:
        c.close()
    written = 3000 * 100  # at least: each commit is one batch of one OffsetCommit record
    size = wait_until(lambda: log_bytes(b.data_dir, "__consumer_offsets"), lambda n: n <= 3 * 16384, 60)
    assert size <= 3 * 16384, f"__consumer_offsets still {size} bytes (>= {written} written)"

    b.restart(clean=False)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "enable.auto.commit": False})
    try:
        [got] = c.committed([TopicPartition("committed", 0)], timeout=15)
    finally:
        c.close()
    # confluent-kafka-python sends the metadata with its C terminator (tests/compat/FINDINGS.md)
    assert (got.offset, got.metadata.rstrip("\x00"), got.error) == (2999, "m2999", None)
