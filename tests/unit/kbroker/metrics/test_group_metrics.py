"""kbroker/app/metrics_collector.py's group families from a snapshot: Kafka's
GroupCoordinatorMetrics names for both group types."""

from __future__ import annotations

from types import SimpleNamespace

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kbroker.app.metrics_collector import BrokerCollector, Snapshot

PREFIX = "kafka_server_group_coordinator_metrics_"


class Fixed(BrokerCollector):
    """The collector scraping one given snapshot."""

    def __init__(self, snap: Snapshot) -> None:
        super().__init__(SimpleNamespace())  # type: ignore[arg-type]
        self.snap = snap

    def snapshot(self) -> Snapshot:
        return self.snap


def scraped(snap: Snapshot) -> tuple[dict[tuple[str, tuple], float], dict[str, str]]:
    """(samples by name and labels, family types by name) of a scrape of ``snap``."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(Fixed(snap))
    families = list(text_string_to_metric_families(generate_latest(reg).decode()))
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}
    return samples, {f.name: f.type for f in families}


def test_groups_are_counted_per_protocol_and_consumer_groups_per_state_under_kafkas_names():
    snap = Snapshot({}, {}, {}, {}, {}, 0, 0, running=True,
                    groups_by_state={"Stable": 2, "Empty": 1},
                    consumer_groups_by_state={"Stable": 3, "Reconciling": 1, "Empty": 2},
                    consumer_group_rebalances=17)
    samples, types = scraped(snap)
    assert samples[(PREFIX + "group_count", (("protocol", "classic"),))] == 3
    assert samples[(PREFIX + "group_count", (("protocol", "consumer"),))] == 6
    assert {labels[0][1]: v for (name, labels), v in samples.items() if name == PREFIX + "consumer_group_count"} == \
        {"Empty": 2, "Assigning": 0, "Reconciling": 1, "Stable": 3, "Dead": 0}
    # the JMX exporter's name for consumer-group-rebalance-count, untyped as it exports it
    assert samples[(PREFIX + "consumer_group_rebalance_count", ())] == 17
    assert types[PREFIX + "consumer_group_rebalance_count"] == "unknown"
    # the classic groups' older per-state gauge is still there
    assert samples[("kafka_coordinator_group_groupmetadatamanager_numgroups", (("state", "Stable"),))] == 2


def test_a_broker_without_groups_reports_zero_of_each():
    samples, _ = scraped(Snapshot({}, {}, {}, {}, {}, 0, 0, running=True))
    assert {k: v for k, v in samples.items() if k[0].startswith(PREFIX)} == {
        (PREFIX + "group_count", (("protocol", "classic"),)): 0,
        (PREFIX + "group_count", (("protocol", "consumer"),)): 0,
        **{(PREFIX + "consumer_group_count", (("state", s),)): 0
           for s in ("Empty", "Assigning", "Reconciling", "Stable", "Dead")},
        (PREFIX + "consumer_group_rebalance_count", ()): 0}
