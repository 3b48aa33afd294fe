"""Spark's Kafka source with ``kafka.isolation.level=read_committed`` over a topic written by
a transactional producer (tests/support/txn_workload.py's commits and aborts over three
partitions): a batch read and a streaming read see exactly the committed records at their
offsets, skipping aborted records and markers; the default (read_uncommitted) sees every
record."""

from __future__ import annotations

import pytest

from tests.spark.streaming import run_available_now, to_recs
from tests.support.txn_workload import (
    confluent_transactions,
    create_topic,
    expected,
    read_all,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

QUERY_TIMEOUT_S = 180
TOPIC = "txn-spark"


def _write_transactions(bootstrap: str) -> None:
    create_topic(bootstrap, TOPIC)
    confluent_transactions(bootstrap, TOPIC, "spark-txn", "s")
    # the last markers are written after commit_transaction returns: wait until a
    # read_committed consumer reaches the end (the LSO is the log end offset then)
    read_all(bootstrap, TOPIC, "read_committed")


def _reader(spark, bootstrap: str, stream: bool, **options: str):
    reader = (spark.readStream if stream else spark.read).format("kafka") \
        .option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC) \
        .option("startingOffsets", "earliest").option("includeHeaders", "true")
    if not stream:
        reader = reader.option("endingOffsets", "latest")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _tuples(recs) -> list[tuple[int, int, bytes, bytes]]:
    return [(r.partition, r.offset, r.key, r.value) for r in recs]


def test_spark_reads_only_committed_records_with_read_committed(spark, broker, tmp_path):
    _write_transactions(broker.bootstrap)
    committed = expected("s", committed_only=True)

    batch = to_recs(_reader(spark, broker.bootstrap, False,
                            **{"kafka.isolation.level": "read_committed"}))
    assert _tuples(batch) == committed

    df = _reader(spark, broker.bootstrap, True, **{"kafka.isolation.level": "read_committed"},
                 maxOffsetsPerTrigger="7")
    got, _ = run_available_now(spark, df, "txn_read_committed", tmp_path / "ckpt", QUERY_TIMEOUT_S)
    assert _tuples(got) == committed

    everything = to_recs(_reader(spark, broker.bootstrap, False))
    assert _tuples(everything) == expected("s", committed_only=False)
