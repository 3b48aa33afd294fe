"""Spark's Kafka source (spark-sql-kafka, its Java Admin client on the driver and Java
consumer on the executors) reading from a real kbroker process: every record exactly,
and every way of saying where to start and stop landing exactly where Kafka would.
"""

from __future__ import annotations

import json

import pytest
from pyspark.errors import StreamingQueryException

from tests.spark.streaming import by_partition, run_available_now, to_recs
from tests.spark.workload import (
    BASE_TIMESTAMP_MS,
    create_topic,
    first_offset_at_or_after,
    make_records,
    produce,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

QUERY_TIMEOUT_S = 180


def read_stream(spark, bootstrap: str, topic: str, **options: str):
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic)
              .option("includeHeaders", "true"))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_a_streaming_read_from_earliest_returns_every_record_exactly(spark, broker, tmp_path):
    create_topic(broker.bootstrap, "events", 4)
    expected = produce(broker.bootstrap, "events", make_records(20_000, 4))
    assert {r.partition for r in expected} == {0, 1, 2, 3}

    # maxOffsetsPerTrigger splits the backlog into several micro-batches, so the offsets
    # each batch ends at are carried from one to the next as in a long-running job.
    df = read_stream(spark, broker.bootstrap, "events", startingOffsets="earliest",
                     maxOffsetsPerTrigger="6000")
    got, progress = run_available_now(spark, df, "read_earliest", tmp_path / "ckpt", QUERY_TIMEOUT_S)

    assert len(got) == 20_000
    assert got == sorted(expected, key=lambda r: (r.partition, r.offset))
    batches = [p for p in progress if p["numInputRows"] > 0]
    assert len(batches) >= 4 and sum(p["numInputRows"] for p in batches) == 20_000


def test_b_batch_read_with_per_partition_offsets_returns_exactly_that_range(spark, broker):
    create_topic(broker.bootstrap, "ranges", 4)
    records = produce(broker.bootstrap, "ranges", make_records(3_000, 4, seed=11))
    ends = {p: len(rs) for p, rs in by_partition(records).items()}
    # -2 is earliest and -1 latest, as in Spark's JSON; partition 3 asks for an empty range.
    starting = {"0": 17, "1": -2, "2": 100, "3": ends[3]}
    ending = {"0": 250, "1": -1, "2": 101, "3": -1}
    df = (spark.read.format("kafka")
          .option("kafka.bootstrap.servers", broker.bootstrap)
          .option("subscribe", "ranges")
          .option("includeHeaders", "true")
          .option("startingOffsets", json.dumps({"ranges": starting}))
          .option("endingOffsets", json.dumps({"ranges": ending}))
          .load())

    got = to_recs(df)

    bounds = {0: (17, 250), 1: (0, ends[1]), 2: (100, 101), 3: (ends[3], ends[3])}
    want = [r for r in sorted(records, key=lambda r: (r.partition, r.offset))
            if bounds[r.partition][0] <= r.offset < bounds[r.partition][1]]
    assert len(want) == 233 + ends[1] + 1
    assert got == want


def test_c_starting_offsets_by_timestamp_start_at_the_first_offset_at_or_after_each_timestamp(
        spark, broker, tmp_path):
    create_topic(broker.bootstrap, "times", 4)
    records = produce(broker.bootstrap, "times", make_records(4_000, 4, seed=23))
    parts = by_partition(records)
    # p0: the timestamp of a record that an earlier offset already reaches (timestamps
    # step back), so the answer is that earlier offset, not the record's own;
    # p1: one past a record's timestamp; p2: before every record (offset 0); p3: after
    # every record (no match: Kafka answers offset -1, which the "latest" strategy turns
    # into the end of the partition).
    stepped_back = next(r for r in parts[0][len(parts[0]) // 2:]
                        if any(q.offset < r.offset and q.timestamp_ms >= r.timestamp_ms
                               for q in parts[0]))
    targets = {0: stepped_back.timestamp_ms,
               1: parts[1][len(parts[1]) // 3].timestamp_ms + 1,
               2: BASE_TIMESTAMP_MS - 60_000,
               3: BASE_TIMESTAMP_MS + 3_600_000}
    starts = {p: first_offset_at_or_after(records, p, t) for p, t in targets.items()}
    assert starts[0] < stepped_back.offset and starts[2] == 0 and starts[3] is None

    df = read_stream(spark, broker.bootstrap, "times",
                     startingOffsetsByTimestamp=json.dumps({"times": {str(p): t for p, t in targets.items()}}),
                     startingOffsetsByTimestampStrategy="latest")
    got, _ = run_available_now(spark, df, "read_by_timestamp", tmp_path / "ckpt", QUERY_TIMEOUT_S)

    want = [r for r in sorted(records, key=lambda r: (r.partition, r.offset))
            if starts[r.partition] is not None and r.offset >= starts[r.partition]]
    assert got == want


def test_c_starting_timestamp_starts_every_partition_at_its_first_offset_at_or_after_it(
        spark, broker, tmp_path):
    create_topic(broker.bootstrap, "since", 4)
    records = produce(broker.bootstrap, "since", make_records(4_000, 4, seed=31))
    target = sorted(r.timestamp_ms for r in records)[2_500]
    starts = {p: first_offset_at_or_after(records, p, target) for p in range(4)}
    assert all(s is not None and s > 0 for s in starts.values())

    df = read_stream(spark, broker.bootstrap, "since", startingTimestamp=str(target))
    got, _ = run_available_now(spark, df, "read_since", tmp_path / "ckpt", QUERY_TIMEOUT_S)

    want = [r for r in sorted(records, key=lambda r: (r.partition, r.offset))
            if r.offset >= starts[r.partition]]
    assert got == want


def test_c_starting_timestamp_after_every_record_fails_the_query_under_the_error_strategy(
        spark, broker, tmp_path):
    """Kafka answers a lookup past the last timestamp with offset -1; Spark's default
    strategy ("error") must then refuse to start rather than silently start at the end."""
    create_topic(broker.bootstrap, "late", 4)
    records = produce(broker.bootstrap, "late", make_records(400, 4, seed=37))
    target = max(r.timestamp_ms for r in records) + 1

    df = read_stream(spark, broker.bootstrap, "late", startingTimestamp=str(target))
    with pytest.raises(StreamingQueryException,
                       match=rf"No offset matched from request of topic-partition late-\d and timestamp {target}\."):
        run_available_now(spark, df, "read_late", tmp_path / "ckpt", QUERY_TIMEOUT_S)
