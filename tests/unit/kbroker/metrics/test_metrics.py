"""kbroker/metrics/counters.py and kbroker/app/metrics_collector.py without a broker process: where a
latency lands in the histogram, what a scrape reports from in-memory state."""

from __future__ import annotations

from types import SimpleNamespace

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kbroker.app.metrics_collector import BrokerCollector, request_name
from kbroker.metrics.counters import LATENCY_BUCKETS_S, RequestStats, TopicStats


def test_a_latency_is_counted_in_the_first_bucket_whose_bound_is_not_below_it():
    r = RequestStats()
    r.observe(0, 0.0005)   # exactly a bound: that bucket (le means <=)
    r.observe(0, 0.0006)
    r.observe(0, 100.0)    # past every bound: +Inf
    count, total, *buckets = r.by_key[0]
    assert count == 3 and abs(total - 100.0011) < 1e-9
    assert buckets[0] == 1 and buckets[1] == 1 and buckets[len(LATENCY_BUCKETS_S)] == 1
    assert sum(buckets) == 3


def test_produced_and_fetched_bytes_add_up_per_topic_and_followers_count_apart():
    t = TopicStats()
    t.produced("a", 3, 100)
    t.produced("a", 2, 50)
    t.fetched("a", 150, by_follower=False)
    t.fetched("a", 150, by_follower=True)
    assert (t.messages_in, t.bytes_in) == ({"a": 5}, {"a": 150})
    assert (t.bytes_out, t.replication_bytes_out) == ({"a": 150}, {"a": 150})


def test_request_names_are_kafkas_api_key_names():
    assert [request_name(k) for k in (0, 1, 2, 3, 8, 9, 10, 18)] == [
        "Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator",
        "ApiVersions"]
    assert request_name(30000) == "30000"


def test_a_broker_that_is_stopping_still_serves_the_process_wide_totals():
    reg = CollectorRegistry(auto_describe=False)
    reg.register(BrokerCollector(SimpleNamespace(state=None, node=None, cluster=None, config=None)))  # type: ignore[arg-type]
    names = {f.name for f in text_string_to_metric_families(generate_latest(reg).decode())}
    assert "kafka_server_brokertopicmetrics_messagesin" in names
    assert "kafka_network_requestmetrics_totaltime_seconds" in names
    assert "kafka_server_replicamanager_underreplicatedpartitions" not in names


def test_the_totals_of_a_deleted_topic_are_forgotten():
    t = TopicStats()
    t.produced("kept", 1, 10)
    t.produced("gone", 1, 10)
    t.fetched("gone", 10, by_follower=True)
    t.forget_all_but({"kept": object()})
    assert (t.messages_in, t.bytes_in, t.replication_bytes_out) == ({"kept": 1}, {"kept": 10}, {})
