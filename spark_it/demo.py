"""``make spark-demo``: the click-count pipeline of spark_it.clicks against a running broker.

    make run          # terminal 1: the broker on localhost:9092
    make spark-demo   # terminal 2

One run: produce a few minutes of JSON click events to ``clicks``; run the Structured
Streaming job over everything not yet processed (``trigger(availableNow=True)``, state and
offsets in the checkpoint directory); then read what this run wrote to ``click-counts``
by offset range with a batch query, and print it.  Windows still open at the watermark
are counted by a later run: each run's clicks continue where the previous run's ended.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from spark_it.clicks import PAGES, make_clicks, produce_clicks, read_counts, start_click_counts

SOURCE, SINK = "clicks", "click-counts"
STEP_MS = 250


def ensure_topics(bootstrap: str) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(SOURCE, 4, 1), NewTopic(SINK, 1, 1)], request_timeout=15)
    for topic, future in futures.items():
        try:
            future.result(20)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise SystemExit(f"cannot create {topic} on {bootstrap} ({e}); is `make run` running?") from e


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-demo-offsets"})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=15, cached=False)[1]
                for p in range(partitions)}
    finally:
        c.close()


def last_click_ms(bootstrap: str) -> int | None:
    """The latest event time already in ``clicks`` (the last record of each partition)."""
    from confluent_kafka import Consumer, TopicPartition

    ends = end_offsets(bootstrap, SOURCE, 4)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-demo-offsets"})
    try:
        c.assign([TopicPartition(SOURCE, p, end - 1) for p, end in ends.items() if end > 0])
        latest, deadline = None, time.monotonic() + 15
        wanted = sum(1 for end in ends.values() if end > 0)
        while wanted and time.monotonic() < deadline:
            msg = c.poll(1.0)
            if msg is not None and not msg.error():
                latest = max(latest or 0, json.loads(msg.value())["ts"])
                wanted -= 1
        return latest
    finally:
        c.close()


def print_table(counts: list[dict]) -> None:
    by_window: dict[int, dict[str, int]] = {}
    for c in counts:
        by_window.setdefault(c["window_start"], {})[c["page"]] = c["clicks"]
    print(f"{'window (UTC)':<13}" + "".join(f"{p:>10}" for p in PAGES) + f"{'total':>8}")
    for start, pages in sorted(by_window.items()):
        hhmm = time.strftime("%H:%M", time.gmtime(start / 1000))
        end = time.strftime("%H:%M", time.gmtime(start / 1000 + 60))
        print(f"{hhmm}-{end:<7}" + "".join(f"{pages.get(p, 0):>10}" for p in PAGES)
              + f"{sum(pages.values()):>8}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", default="localhost:9092")
    ap.add_argument("--clicks", type=int, default=2_400, help="events to produce (one per 250 ms of event time)")
    ap.add_argument("--checkpoint", default="build/spark-demo/checkpoint")
    args = ap.parse_args(argv)

    ensure_topics(args.bootstrap)
    previous = last_click_ms(args.bootstrap)
    now = int(time.time() * 1000)
    start = previous + STEP_MS if previous else now - args.clicks * STEP_MS
    clicks = make_clicks(args.clicks, start, STEP_MS, seed=start)
    produce_clicks(args.bootstrap, SOURCE, clicks)
    print(f"produced {len(clicks)} clicks to {SOURCE}, event times "
          f"{time.strftime('%H:%M:%S', time.gmtime(start / 1000))}-"
          f"{time.strftime('%H:%M:%S', time.gmtime(max(c['ts'] for c in clicks) / 1000))} UTC")

    from spark_it.session import local_session

    before = end_offsets(args.bootstrap, SINK, 1)
    spark = local_session("kbroker-spark-demo")
    try:
        Path(args.checkpoint).parent.mkdir(parents=True, exist_ok=True)
        query = start_click_counts(spark, args.bootstrap, SOURCE, SINK, args.checkpoint)
        if not query.awaitTermination(300):
            query.stop()
            raise SystemExit("the streaming job did not finish in 300 s")
        progress = query.lastProgress or {}
        print(f"streaming job done; watermark {progress.get('eventTime', {}).get('watermark')}")
        counts = read_counts(spark, args.bootstrap, SINK,
                             starting_offsets=json.dumps({SINK: {str(p): o for p, o in before.items()}}))
    finally:
        spark.stop()
    print(f"{len(counts)} window counts written to {SINK} by this run (offsets "
          f"{before[0]}..{before[0] + len(counts)}):")
    print_table(counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
