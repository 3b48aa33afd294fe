"""``subscribePattern``: a running query picks up a topic created after it started (Spark's
driver lists topics through the Java Admin client on every trigger) and reads it from its
first offset, exactly; topics outside the pattern are never read.
"""

from __future__ import annotations

import time

import pytest

from tests.spark.streaming import to_recs
from tests.spark.workload import create_topic, make_records, produce

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def wait_for_rows(spark, table: str, n: int, query, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while (count := spark.table(table).count()) < n:
        assert query.exception() is None, query.exception()
        assert time.monotonic() < deadline, f"{table}: {count} of {n} rows after {timeout_s}s"
        time.sleep(0.5)


def test_subscribe_pattern_reads_a_topic_created_after_the_query_started_from_its_first_offset(
        spark, broker, tmp_path):
    create_topic(broker.bootstrap, "clicks-a", 2)
    create_topic(broker.bootstrap, "views", 1)
    first = produce(broker.bootstrap, "clicks-a", make_records(1_000, 2, seed=51))
    produce(broker.bootstrap, "views", make_records(100, 1, seed=52))

    query = (spark.readStream.format("kafka")
             .option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribePattern", "clicks-.*")
             .option("startingOffsets", "earliest")
             .option("includeHeaders", "true")
             .load()
             .writeStream.format("memory").queryName("pattern")
             .option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="1 second").start())
    try:
        wait_for_rows(spark, "pattern", len(first), query, 120)
        # Created and filled while the query runs: Spark discovers it on a later trigger
        # and, as for any partition it did not know at start, reads it from earliest.
        create_topic(broker.bootstrap, "clicks-b", 3)
        second = produce(broker.bootstrap, "clicks-b", make_records(1_500, 3, seed=53))
        wait_for_rows(spark, "pattern", len(first) + len(second), query, 120)
        # One more record, read by a later micro-batch: everything Spark read twice by then
        # would be in the table and fail the exact comparisons below.
        second += produce(broker.bootstrap, "clicks-b", make_records(1, 3, seed=54))
        wait_for_rows(spark, "pattern", len(first) + len(second), query, 120)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()

    table = spark.table("pattern")
    assert sorted(r["topic"] for r in table.select("topic").distinct().collect()) == ["clicks-a", "clicks-b"]
    assert to_recs(table.where("topic = 'clicks-a'")) == sorted(first, key=lambda r: (r.partition, r.offset))
    assert to_recs(table.where("topic = 'clicks-b'")) == sorted(second, key=lambda r: (r.partition, r.offset))
