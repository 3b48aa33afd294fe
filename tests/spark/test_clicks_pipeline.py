"""The example pipeline (spark_it.clicks) stopped and restarted from its checkpoint: no
input lost, no output duplicated, ``failOnDataLoss`` (on by default) never fires.

Each run is a ``trigger(availableNow=True)`` query, so the job stops between micro-batches
and the second run, a new query on the same checkpoint, has to resume from the offsets
and the window state the first one left.  (Stopping a query in the middle of a batch is a
different matter: Spark's Kafka sink is at-least-once, so that batch may be written twice.)
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime

import pytest

from spark_it.clicks import make_clicks, produce_clicks, start_click_counts
from tests.spark.workload import consume_all, create_topic

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

MINUTE_MS = 60_000
QUERY_TIMEOUT_S = 180


def closed_windows(clicks: list[dict], watermark_ms: int) -> dict[tuple[int, str], int]:
    """Brute force: clicks per (1-minute window start, page) for the windows that end at or
    before the watermark (the ones append mode has emitted)."""
    counts = Counter((c["ts"] // MINUTE_MS * MINUTE_MS, c["page"]) for c in clicks)
    return {k: n for k, n in counts.items() if k[0] + MINUTE_MS <= watermark_ms}


def run_once(spark, bootstrap: str, checkpoint: str) -> int:
    """One availableNow run of the job to completion; return the watermark it reached."""
    query = start_click_counts(spark, bootstrap, "clicks", "click-counts", checkpoint,
                               max_offsets_per_trigger=1_500)
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), f"job still running: {query.status}"
        watermarks = [p["eventTime"]["watermark"] for p in query.recentProgress
                      if "watermark" in p.get("eventTime", {})]
    finally:
        query.stop()
    # Spark reports the watermark as an ISO-8601 UTC string with milliseconds.
    return max(round(datetime.fromisoformat(w).timestamp() * 1000) for w in watermarks)


def output(bootstrap: str, n: int) -> list[tuple[tuple[int, str], int]]:
    recs = consume_all(bootstrap, "click-counts", 2, expected=n)
    rows = [json.loads(r.value) for r in recs]
    assert all(r.key == row["page"].encode() and row["window_end"] - row["window_start"] == MINUTE_MS
               for r, row in zip(recs, rows, strict=True))
    return [((row["window_start"], row["page"]), row["clicks"]) for row in rows]


def test_click_counts_restarted_from_its_checkpoint_lose_no_input_and_duplicate_no_output(
        spark, broker, tmp_path):
    create_topic(broker.bootstrap, "clicks", 4)
    create_topic(broker.bootstrap, "click-counts", 2)
    checkpoint = str(tmp_path / "checkpoint")
    # An hour ago, on a minute: inside retention, and window boundaries fall on round minutes.
    base = (int(time.time()) // 60 - 60) * MINUTE_MS

    first = make_clicks(2_000, base, seed=1)  # ~8.5 minutes of clicks
    produce_clicks(broker.bootstrap, "clicks", first)
    watermark = run_once(spark, broker.bootstrap, checkpoint)
    assert watermark == max(c["ts"] for c in first) - MINUTE_MS
    emitted_first = closed_windows(first, watermark)
    assert len(emitted_first) >= 20
    assert sorted(output(broker.bootstrap, len(emitted_first))) == sorted(emitted_first.items())

    # More clicks, starting where the first ones ended (the open windows continue), then one
    # click well after the rest that moves the watermark past every other window.
    second = make_clicks(2_000, base + 500_000, seed=2)
    last = max(c["ts"] for c in second) // MINUTE_MS * MINUTE_MS + 3 * MINUTE_MS + 30_000
    second.append({"user": "u000", "page": "/", "ts": last})
    produce_clicks(broker.bootstrap, "clicks", second)
    watermark = run_once(spark, broker.bootstrap, checkpoint)
    assert watermark == last - MINUTE_MS

    everything = first + second
    want = closed_windows(everything, watermark)
    got = output(broker.bootstrap, len(want))
    assert len(got) == len(set(k for k, _ in got)), "a window was written twice"
    assert sorted(got) == sorted(want.items())
    # Every click but the final one is in a closed window: nothing was lost.
    assert sum(want.values()) == len(everything) - 1
