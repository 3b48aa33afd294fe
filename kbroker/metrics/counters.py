"""The broker's hot-path counters: what request handling adds per request or per batch.

Everything here is plain Python integers and floats in dicts, written only from the event
loop's thread (handlers and connections run there), so there are no locks: a request adds
one ``perf_counter`` pair and :meth:`RequestStats.observe` (a bisect and three increments),
a produce or fetch adds one dict update per partition.  prometheus-client's own
``Counter``/``Histogram`` take a lock per update and are not used on this path: the
scrape-time collector (kbroker/app/metrics_collector.py) turns these dicts into Prometheus
families when ``/metrics`` is read.

Names follow Kafka's JMX beans (``kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,
topic=...``), counted as totals: Prometheus derives the rates.

* ``TOPIC_STATS``: per topic, messages and bytes in (records appended by Produce, counted from
  the append's ``LogAppendInfo.record_count`` / the batch's size: records are never decoded),
  bytes out to consumers and to followers (Kafka's BytesOutPerSec and
  ReplicationBytesOutPerSec).
* ``REQUEST_STATS``: per API key, requests and a latency histogram (seconds, from the request
  being decoded to its response being encoded; a parked Fetch counts its wait, as Kafka's
  TotalTimeMs does).
* ``ISR_STATS``: ISR shrink/expand proposals made by partitions this broker leads.
"""

from __future__ import annotations

from bisect import bisect_left

__all__ = ["ISR_STATS", "REQUEST_STATS", "TOPIC_STATS", "LATENCY_BUCKETS_S", "IsrStats",
           "RequestStats", "TopicStats"]

# Upper bounds (seconds) of the latency buckets; +Inf is implicit.  From 0.5 ms (a Metadata
# answered from memory) to 30 s (request.timeout.ms; a long-poll Fetch waits up to 0.5 s by default).
LATENCY_BUCKETS_S: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                        0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class TopicStats:
    """Per-topic totals since the process started (Kafka's BrokerTopicMetrics)."""

    __slots__ = ("messages_in", "bytes_in", "bytes_out", "replication_bytes_out")

    def __init__(self) -> None:
        self.messages_in: dict[str, int] = {}
        self.bytes_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}
        self.replication_bytes_out: dict[str, int] = {}

    def produced(self, topic: str, records: int, size_bytes: int) -> None:
        """A batch of ``records`` records and ``size_bytes`` bytes was appended to ``topic``."""
        self.messages_in[topic] = self.messages_in.get(topic, 0) + records
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size_bytes

    def fetched(self, topic: str, size_bytes: int, by_follower: bool) -> None:
        """``size_bytes`` record bytes of ``topic`` went out in a Fetch response."""
        d = self.replication_bytes_out if by_follower else self.bytes_out
        d[topic] = d.get(topic, 0) + size_bytes

    def forget_all_but(self, topics: object) -> None:
        """Drop the totals of topics not in ``topics`` (deleted ones: Kafka's
        BrokerTopicStats.removeMetrics; a scrape then no longer shows them)."""
        for name in self.__slots__:
            d = getattr(self, name)
            for topic in [t for t in d if t not in topics]:   # type: ignore[operator]
                del d[topic]

    def clear(self) -> None:
        for name in self.__slots__:
            getattr(self, name).clear()


class RequestStats:
    """Per API key one list: [count, sum of seconds, bucket 0 count, ..., +Inf count]
    (per-bucket counts; cumulative only on export).  One dict lookup per request."""

    __slots__ = ("by_key",)

    def __init__(self) -> None:
        self.by_key: dict[int, list] = {}

    def observe(self, api_key: int, seconds: float) -> None:
        e = self.by_key.get(api_key)
        if e is None:
            e = self.by_key[api_key] = [0, 0.0] + [0] * (len(LATENCY_BUCKETS_S) + 1)
        e[0] += 1
        e[1] += seconds
        e[2 + bisect_left(LATENCY_BUCKETS_S, seconds)] += 1

    def clear(self) -> None:
        self.by_key.clear()


class IsrStats:
    __slots__ = ("shrinks", "expands")

    def __init__(self) -> None:
        self.shrinks = 0
        self.expands = 0


TOPIC_STATS = TopicStats()
REQUEST_STATS = RequestStats()
ISR_STATS = IsrStats()
