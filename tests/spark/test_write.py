"""Spark's Kafka sink (the Java producer, idempotent by default since kafka-clients 3.0)
writing to a real kbroker process, read back exactly with confluent-kafka.
"""

from __future__ import annotations

import time

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from tests.spark.streaming import by_partition
from tests.spark.workload import consume_all, create_topic, make_records
from wire.record_batch import iter_batches

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

QUERY_TIMEOUT_S = 180

SINK_SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("headers", ArrayType(StructType([StructField("key", StringType(), False),
                                                 StructField("value", BinaryType())]))),
    StructField("partition", IntegerType(), False),
])


def test_d_streaming_write_through_the_idempotent_sink_is_consumed_back_exactly(
        spark, broker, tmp_path):
    create_topic(broker.bootstrap, "out", 4)
    records = make_records(5_000, 4, seed=41)
    # One parquet file, so one Spark task writes the records in file order and the order
    # within each Kafka partition (hence every offset) is known in advance.
    source = tmp_path / "source"
    rows = [(r.key, r.value, [list(h) for h in r.headers] or None, r.partition) for r in records]
    spark.createDataFrame(rows, SINK_SCHEMA).coalesce(1).write.parquet(str(source))

    started_ms = int(time.time() * 1000)
    query = (spark.readStream.schema(SINK_SCHEMA).parquet(str(source))
             .writeStream.format("kafka")
             .option("kafka.bootstrap.servers", broker.bootstrap)
             .option("topic", "out")
             .option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), f"sink still running: {query.status}"
    finally:
        query.stop()
    finished_ms = int(time.time() * 1000)

    got = by_partition(consume_all(broker.bootstrap, "out", 4, expected=len(records)))
    for p, in_file_order in by_partition(
            [r._replace(offset=i) for i, r in enumerate(records)]).items():
        want = [(n, r.key, r.value, r.headers) for n, r in enumerate(in_file_order)]
        assert [(r.offset, r.key, r.value, r.headers) for r in got[p]] == want, f"partition {p}"
        # The sink has no timestamp column: the Java producer stamps CreateTime at send.
        assert all(r.timestamp_type == 0 and started_ms <= r.timestamp_ms <= finished_ms
                   for r in got[p])
    assert sum(len(rs) for rs in got.values()) == len(records)

    # Idempotence was really on: every stored batch carries a producer id, epoch and
    # base sequence (an acks=1, non-idempotent producer writes -1 in all three).
    broker.stop()
    batches = [b for p in range(4)
               for seg in sorted((broker.data_dir / f"out-{p}").glob("*.log"))
               for b in iter_batches(seg.read_bytes())]
    assert batches and all(b.producer_id >= 0 and b.producer_epoch >= 0 for b in batches)
    # ... and each partition's sequence numbers run 0, 1, 2, ... across its batches, per
    # producer: nothing was appended twice or skipped.
    for p in range(4):
        next_seq: dict[tuple[int, int], int] = {}
        for seg in sorted((broker.data_dir / f"out-{p}").glob("*.log")):
            for b in iter_batches(seg.read_bytes()):
                pid = (b.producer_id, b.producer_epoch)
                assert b.base_sequence == next_seq.get(pid, 0), (p, b)
                next_seq[pid] = b.base_sequence + b.record_count
