"""Running Spark queries against the broker with bounded time, and turning rows into Recs."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from tests.spark.workload import Rec

# Spark's Kafka source columns, with the timestamp as epoch milliseconds (Spark's
# TimestampType holds microseconds; Kafka's are milliseconds, so this is exact).
KAFKA_COLUMNS = ("partition", "offset", "key", "value", "headers",
                 "unix_millis(timestamp) AS timestamp_ms", "timestampType")


def to_recs(df: DataFrame) -> list[Rec]:
    """Collect a Kafka source DataFrame as Recs ordered by (partition, offset).

    Spark returns a record without headers as a null ``headers`` array
    (KafkaRecordToRowConverter), which is () here, as confluent-kafka's None is.
    """
    rows = df.selectExpr(*KAFKA_COLUMNS).collect()
    recs = [Rec(r["partition"], r["offset"],
                None if r["key"] is None else bytes(r["key"]),
                None if r["value"] is None else bytes(r["value"]),
                tuple((h["key"], None if h["value"] is None else bytes(h["value"]))
                      for h in (r["headers"] or ())),
                r["timestamp_ms"], r["timestampType"]) for r in rows]
    return sorted(recs, key=lambda r: (r.partition, r.offset))


def run_available_now(spark: SparkSession, df: DataFrame, name: str, checkpoint: Path,
                      timeout_s: float) -> tuple[list[Rec], list[dict]]:
    """Run ``df`` as a streaming query with ``trigger(availableNow=True)`` into a memory
    sink; return what it wrote and its progress reports.  The query must finish within
    ``timeout_s`` (it is stopped either way); a failed query raises Spark's exception."""
    query = (df.writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        finished = query.awaitTermination(timeout_s)
        assert finished, f"query {name} still running after {timeout_s}s: {query.status}"
        progress = list(query.recentProgress)
    finally:
        query.stop()
    return to_recs(spark.table(name)), progress


def by_partition(recs: list[Rec]) -> dict[int, list[Rec]]:
    out: dict[int, list[Rec]] = {}
    for r in sorted(recs, key=lambda r: (r.partition, r.offset)):
        out.setdefault(r.partition, []).append(r)
    return out
