"""The example pipeline: JSON click events in, per-page click counts per minute out.

* ``make_clicks`` / ``produce_clicks``: a generator of click events
  ``{"user": "u017", "page": "/cart", "ts": <epoch ms>}`` (keyed by user), produced with
  confluent-kafka; event times move forward with a little disorder (never more than
  ``MAX_DISORDER_MS``, well inside the watermark delay, so no event is ever late).
* ``start_click_counts``: a Structured Streaming job reading them with
  ``readStream.format("kafka")``, parsing the JSON, counting clicks per page in 1-minute
  event-time windows with a 1-minute watermark, and writing each finished window once, as
  JSON keyed by page, with ``writeStream.format("kafka")``; its state and offsets live in a
  checkpoint directory, so a restarted job continues where the stopped one ended.
* ``read_counts``: a batch query over the output topic by offset range.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

PAGES = ("/", "/search", "/product", "/cart", "/checkout", "/help")
WINDOW = "1 minute"
WATERMARK_DELAY = "1 minute"
MAX_DISORDER_MS = 10_000
CLICK_SCHEMA = "user STRING, page STRING, ts BIGINT"


def make_clicks(n: int, start_ms: int, step_ms: int = 250, seed: int = 1, users: int = 40) -> list[dict]:
    """``n`` click events from ``start_ms`` on, one every ``step_ms`` on average."""
    rng = random.Random(seed)
    weights = [8, 5, 4, 3, 2, 1]  # a plausible funnel: the home page most, help least
    out = []
    for i in range(n):
        ts = start_ms + i * step_ms + rng.randint(0, MAX_DISORDER_MS)
        out.append({"user": f"u{rng.randrange(users):03d}",
                    "page": rng.choices(PAGES, weights)[0], "ts": ts})
    return out


def produce_clicks(bootstrap: str, topic: str, clicks: list[dict], timeout_s: float = 60.0) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})
    for c in clicks:
        while True:
            try:
                p.produce(topic, key=c["user"].encode(), value=json.dumps(c).encode(),
                          timestamp=c["ts"])
                break
            except BufferError:  # local queue full: let deliveries drain it
                p.poll(0.1)
    left = p.flush(timeout_s)
    if left:
        raise RuntimeError(f"{left} click events not delivered in {timeout_s}s")


def start_click_counts(spark: SparkSession, bootstrap: str, source_topic: str, sink_topic: str,
                       checkpoint: str, *, processing_time: str | None = None,
                       max_offsets_per_trigger: int | None = None) -> StreamingQuery:
    """Start the counting job; ``trigger(availableNow=True)`` unless ``processing_time``
    is given (then it runs until stopped)."""
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source_topic)
              .option("startingOffsets", "earliest"))
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    counts = (reader.load()
              .select(F.from_json(F.col("value").cast("string"), CLICK_SCHEMA).alias("click"))
              .select("click.*")
              .withColumn("event_time", F.timestamp_millis("ts"))
              .withWatermark("event_time", WATERMARK_DELAY)
              .groupBy(F.window("event_time", WINDOW).alias("window"), "page")
              .count())
    out = counts.select(
        F.col("page").alias("key"),
        F.to_json(F.struct(F.unix_millis("window.start").alias("window_start"),
                           F.unix_millis("window.end").alias("window_end"),
                           "page", F.col("count").alias("clicks"))).alias("value"))
    writer = (out.writeStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("topic", sink_topic)
              .option("checkpointLocation", checkpoint)
              .outputMode("append"))  # each window once, when the watermark closes it
    writer = (writer.trigger(processingTime=processing_time) if processing_time
              else writer.trigger(availableNow=True))
    return writer.start()


def read_counts(spark: SparkSession, bootstrap: str, topic: str,
                starting_offsets: str = "earliest", ending_offsets: str = "latest") -> list[dict]:
    """The output topic's counts in the given offset range (Spark's JSON offsets or
    earliest/latest), as dicts ordered by window and page."""
    df = (spark.read.format("kafka")
          .option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic)
          .option("startingOffsets", starting_offsets)
          .option("endingOffsets", ending_offsets)
          .load())
    rows = [json.loads(r["value"]) for r in df.selectExpr("CAST(value AS STRING) AS value").collect()]
    return sorted(rows, key=lambda c: (c["window_start"], c["page"]))
