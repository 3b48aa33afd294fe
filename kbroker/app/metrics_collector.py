"""Prometheus families for ``/metrics``, built when the endpoint is scraped.

Nothing here runs per request: the hot-path totals are plain dicts (kbroker/metrics/counters.py) and
everything else is read from the broker's in-memory state at scrape time (partitions' sizes
and offsets, the ISR, the controller, groups and their committed offsets).  No file is read.
A scrape is two steps: :meth:`BrokerCollector.snapshot` copies plain numbers on the event
loop (about 8 ms for 2,000 partitions and 2,000 committed offsets on this project's 2-core
machine), :meth:`BrokerCollector.families` builds the Prometheus families from them in any
thread (kbroker/app/metrics_server.py runs it and the text encoding in a worker thread).

Names follow Kafka's JMX beans as the Prometheus JMX exporter's Kafka rules lower-case them
(``kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec, topic=t>`` ->
``kafka_server_brokertopicmetrics_messagesin_total{topic="t"}``; a ``...PerSec`` meter
becomes a ``_total`` counter, Prometheus takes the rate).  Consumer lag uses
kafka_exporter's names (``kafka_consumergroup_lag{consumergroup,topic,partition}``), which
Grafana dashboards for Kafka expect.  Latencies are seconds (Prometheus' base unit), not
Kafka's ``TotalTimeMs``.

Groups of both types (Kafka's GroupCoordinatorMetrics, ``kafka.server:type=group-coordinator-metrics``,
whose attributes the JMX exporter names ``kafka_server_group_coordinator_metrics_<attribute>``
with the bean's other keys as labels): ``group_count{protocol="classic"|"consumer"}``, the
consumer groups (KIP-848) per state ``consumer_group_count{state}`` (Kafka's five:
Empty, Assigning, Reconciling, Stable, Dead), and ``consumer_group_rebalance_count``, the
consumer groups' group-epoch bumps since start (Kafka's consumer-group-rebalance sensor; a
total, exported untyped as the JMX exporter exports it, so that its name stays Kafka's).
The classic groups per state keep the older yammer gauge, ``..._groupmetadatamanager_numgroups{state}``.

What a broker reports, as Kafka: under-replicated partitions among those it leads;
OfflinePartitionsCount and ActiveControllerCount only on the active controller (a single
node is always its own controller, with no offline partitions); consumer lag for the groups
it coordinates, per partition it hosts (lag = high watermark - committed offset, never < 0).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    UnknownMetricFamily,
)
from prometheus_client.registry import Collector

from kbroker.metrics.counters import ISR_STATS, LATENCY_BUCKETS_S, REQUEST_STATS, TOPIC_STATS
from wire.schema import REQUESTS

if TYPE_CHECKING:
    from kbroker.app.wiring import Node
    from kbroker.configs.config import BrokerConfig
    from kbroker.replica.broker_state import BrokerState
    from kbroker.server.server_state import ServerState
    from kbroker.zk.cluster_runtime import ClusterRuntime


class MetricsSource(Protocol):
    """What a scrape reads of the broker (kbroker/app/broker.py's ``Broker`` provides it): its
    state and coordinators while running (None before start and after stop), its ZooKeeper
    runtime in cluster mode, its server's connections, its config, and the log cleaner's
    finished cleanings."""

    state: BrokerState | None
    node: Node | None
    cluster: ClusterRuntime | None
    server: ServerState
    config: BrokerConfig

    @property
    def cleanings(self) -> int: ...


def request_name(api_key: int) -> str:
    """Kafka's ApiKeys name ("Produce", "Fetch", "ListOffsets", ...) for the ``request`` label."""
    spec = REQUESTS.get(api_key)
    if spec is None:
        return str(api_key)
    return spec.name[:-len("Request")] if spec.name.endswith("Request") else spec.name


def _counter(name: str, doc: str, label: str, values: dict[str, int]) -> CounterMetricFamily:
    fam = CounterMetricFamily(name, doc, labels=[label])
    for key in sorted(values):
        fam.add_metric([key], values[key])
    return fam


@dataclass
class Snapshot:
    """Plain numbers copied from the broker on the event loop; turning them into Prometheus
    families and text (the costly part: ~14,000 samples for 2,000 partitions and as many
    committed offsets) then runs in a worker thread, off the loop."""

    messages_in: dict[str, int]
    bytes_in: dict[str, int]
    bytes_out: dict[str, int]
    replication_bytes_out: dict[str, int]
    requests: dict[int, list]                      # api key -> [count, sum, buckets...]
    isr_shrinks: int
    isr_expands: int
    running: bool = False                          # False: stopping, only the totals above
    partitions: int = 0
    leaders: int = 0
    under_replicated: int = 0
    under_min_isr: int = 0
    active_controller: int = 0
    offline: int = 0
    # (topic, partition, size, log end offset, log start offset, segments, high watermark)
    logs: list[tuple[str, int, int, int, int, int, int]] = field(default_factory=list)
    retention_passes: int = 0
    cleanings: int = 0
    groups_by_state: dict[str, int] = field(default_factory=dict)
    # consumer groups (KIP-848) per state, and their group-epoch bumps since start
    consumer_groups_by_state: dict[str, int] = field(default_factory=dict)
    consumer_group_rebalances: int = 0
    offsets: int = 0
    # (group, topic, partition, committed offset, lag or -1 when the partition is not here)
    lags: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    connections: dict[str, int] = field(default_factory=dict)
    # KIP-227 (kbroker/replica/fetch_session.py): sessions, partitions cached, evictions, incremental
    # fetches served, session partitions not read because nothing changed
    fetch_sessions: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)


class BrokerCollector(Collector):
    """Everything ``/metrics`` shows for one broker (``broker``: kbroker.app.broker.Broker).
    :meth:`snapshot` reads the broker (call it on the event loop); :meth:`families` builds
    the Prometheus families from a snapshot (any thread)."""

    def __init__(self, broker: MetricsSource) -> None:
        self.broker = broker

    def collect(self) -> Iterator[Metric]:
        return self.families(self.snapshot())

    # ------------------------------------------------------------ on the loop: copy numbers
    def snapshot(self) -> Snapshot:
        t = TOPIC_STATS
        state, node = self.broker.state, self.broker.node
        if state is not None:
            t.forget_all_but(state.topics)
        snap = Snapshot(dict(t.messages_in), dict(t.bytes_in), dict(t.bytes_out),
                        dict(t.replication_bytes_out),
                        {k: list(v) for k, v in REQUEST_STATS.by_key.items()},
                        ISR_STATS.shrinks, ISR_STATS.expands)
        if state is None or node is None:
            return snap
        snap.running = True
        self._replicas(state, snap, self.broker.cluster)
        for (topic, index), p in state.partitions.items():
            snap.logs.append((topic, index, p.size_in_bytes, p.log_end_offset, p.log_start_offset,
                              p.number_of_segments, p.high_watermark))
        snap.logs.sort()
        snap.retention_passes = state.log_manager.retention_passes
        fs = state.fetch_sessions
        snap.fetch_sessions = (len(fs), fs.num_partitions, fs.evictions, fs.incremental_fetches,
                               fs.partitions_skipped)
        snap.cleanings = self.broker.cleanings
        coordinator = node.groups.coordinator
        for g in coordinator.groups.values():
            snap.groups_by_state[str(g.state)] = snap.groups_by_state.get(str(g.state), 0) + 1
        for cg in coordinator.consumer.groups.values():
            snap.consumer_groups_by_state[cg.state] = snap.consumer_groups_by_state.get(cg.state, 0) + 1
        snap.consumer_group_rebalances = coordinator.consumer.rebalances
        for group_id, by_tp in coordinator.offsets.offsets.items():
            snap.offsets += len(by_tp)
            for (topic, index), om in by_tp.items():
                p = state.partitions.get((topic, index))
                lag = max(0, p.high_watermark - om.offset) if p is not None else -1
                snap.lags.append((group_id, topic, index, om.offset, lag))
        snap.lags.sort()
        for conn in list(self.broker.server.connections):
            name = conn.listener_name
            snap.connections[name] = snap.connections.get(name, 0) + 1
        for listener in self.broker.config.listeners:
            snap.connections.setdefault(listener.name, 0)
        return snap

    @staticmethod
    def _replicas(state: BrokerState, snap: Snapshot, cluster: ClusterRuntime | None) -> None:
        snap.partitions = len(state.partitions)
        for p in state.partitions.values():
            rep = p.replication
            if cluster is None:
                snap.leaders += 1      # a single node leads every partition, fully replicated
                continue
            if rep is None or rep.leader_epoch < 0 or state.node_id not in rep.isr:
                continue               # not leading it: its leader reports it
            snap.leaders += 1
            if len(rep.isr) < len(rep.replicas):
                snap.under_replicated += 1
            if rep.is_under_min_isr(p.min_insync_replicas):
                snap.under_min_isr += 1
        snap.active_controller = 1
        if cluster is not None:
            snap.active_controller = 1 if cluster.runner.is_active else 0
            if snap.active_controller:
                image = cluster.cache.image
                snap.offline = sum(1 for t in image.topics.values() for index in t.partitions
                                   if image.leader(t.name, index) < 0)

    # ------------------------------------------------------------ anywhere: build families
    def families(self, s: Snapshot) -> Iterator[Metric]:
        yield _counter("kafka_server_brokertopicmetrics_messagesin",
                       "Records appended by Produce, per topic (MessagesInPerSec)", "topic", s.messages_in)
        yield _counter("kafka_server_brokertopicmetrics_bytesin",
                       "Record batch bytes appended by Produce, per topic (BytesInPerSec)", "topic", s.bytes_in)
        yield _counter("kafka_server_brokertopicmetrics_bytesout",
                       "Record bytes sent to consumers in Fetch responses, per topic (BytesOutPerSec)",
                       "topic", s.bytes_out)
        yield _counter("kafka_server_brokertopicmetrics_replicationbytesout",
                       "Record bytes sent to follower replicas, per topic (ReplicationBytesOutPerSec)",
                       "topic", s.replication_bytes_out)
        yield from _request_families(s.requests)
        if not s.running:   # stopping: only the process-wide totals
            return
        yield GaugeMetricFamily("kafka_server_replicamanager_partitioncount",
                                "Partitions with a replica on this broker", value=s.partitions)
        yield GaugeMetricFamily("kafka_server_replicamanager_leadercount",
                                "Partitions this broker leads", value=s.leaders)
        yield GaugeMetricFamily("kafka_server_replicamanager_underreplicatedpartitions",
                                "Partitions led here whose ISR is smaller than their replica set",
                                value=s.under_replicated)
        yield GaugeMetricFamily("kafka_server_replicamanager_underminisrpartitioncount",
                                "Partitions led here whose ISR is below min.insync.replicas",
                                value=s.under_min_isr)
        yield CounterMetricFamily("kafka_server_replicamanager_isrshrinks",
                                  "ISR shrinks proposed by partitions led here (IsrShrinksPerSec)",
                                  value=s.isr_shrinks)
        yield CounterMetricFamily("kafka_server_replicamanager_isrexpands",
                                  "ISR expansions proposed by partitions led here (IsrExpandsPerSec)",
                                  value=s.isr_expands)
        sessions, cached, evictions, incremental, skipped = s.fetch_sessions
        yield GaugeMetricFamily("kafka_server_fetchsessioncache_numincrementalfetchsessions",
                                "Fetch sessions (KIP-227) in the cache", value=sessions)
        yield GaugeMetricFamily("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
                                "Partitions of the cached fetch sessions", value=cached)
        yield CounterMetricFamily("kafka_server_fetchsessioncache_incrementalfetchsessionevictions",
                                  "Fetch sessions evicted to make room (IncrementalFetchSessionEvictionsPerSec)",
                                  value=evictions)
        yield CounterMetricFamily("kbroker_fetchsessioncache_incrementalfetches",
                                  "Incremental fetches served (kbroker's)", value=incremental)
        yield CounterMetricFamily("kbroker_fetchsessioncache_partitionsskipped",
                                  "Session partitions an incremental fetch did not read: nothing changed (kbroker's)",
                                  value=skipped)
        yield GaugeMetricFamily("kafka_controller_kafkacontroller_activecontrollercount",
                                "1 on the active controller, else 0", value=s.active_controller)
        yield GaugeMetricFamily("kafka_controller_kafkacontroller_offlinepartitionscount",
                                "Partitions without a live leader (reported by the controller)",
                                value=s.offline)
        yield from _log_families(s)
        groups = GaugeMetricFamily("kafka_coordinator_group_groupmetadatamanager_numgroups",
                                   "Classic groups this coordinator holds, per state", labels=["state"])
        for name in ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"):
            groups.add_metric([name], s.groups_by_state.get(name, 0))
        yield groups
        yield from _group_coordinator_families(s)
        yield GaugeMetricFamily("kafka_coordinator_group_groupmetadatamanager_numoffsets",
                                "Committed offsets this coordinator holds", value=s.offsets)
        labels = ["consumergroup", "topic", "partition"]
        current = GaugeMetricFamily("kafka_consumergroup_current_offset",
                                    "Committed offset of a group on a partition", labels=labels)
        lag = GaugeMetricFamily("kafka_consumergroup_lag",
                                "High watermark minus the committed offset (0 when ahead)", labels=labels)
        for group_id, topic, index, offset, behind in s.lags:
            lv = [group_id, topic, str(index)]
            current.add_metric(lv, offset)
            if behind >= 0:
                lag.add_metric(lv, behind)
        yield current
        yield lag
        conns = GaugeMetricFamily("kafka_server_socketservermetrics_connection_count",
                                  "Open client connections, per listener", labels=["listener"])
        for name in sorted(s.connections):
            conns.add_metric([name], s.connections[name])
        yield conns


# Kafka's ConsumerGroupState names, in its order
CONSUMER_GROUP_STATES = ("Empty", "Assigning", "Reconciling", "Stable", "Dead")
_GROUP_COORDINATOR = "kafka_server_group_coordinator_metrics_"


def _group_coordinator_families(s: Snapshot) -> Iterator[Metric]:
    """GroupCoordinatorMetrics' group-count{protocol}, consumer-group-count{state} and
    consumer-group-rebalance-count."""
    count = GaugeMetricFamily(_GROUP_COORDINATOR + "group_count",
                              "Groups per rebalance protocol: classic, consumer (KIP-848) (group-count)",
                              labels=["protocol"])
    count.add_metric(["classic"], sum(s.groups_by_state.values()))
    count.add_metric(["consumer"], sum(s.consumer_groups_by_state.values()))
    yield count
    by_state = GaugeMetricFamily(_GROUP_COORDINATOR + "consumer_group_count",
                                 "Consumer groups (KIP-848) per state (consumer-group-count)", labels=["state"])
    for name in CONSUMER_GROUP_STATES:
        by_state.add_metric([name], s.consumer_groups_by_state.get(name, 0))
    yield by_state
    yield UnknownMetricFamily(_GROUP_COORDINATOR + "consumer_group_rebalance_count",
                              "Consumer group (KIP-848) rebalances, i.e. group epoch bumps, since start "
                              "(consumer-group-rebalance-count)", value=s.consumer_group_rebalances)


def _request_families(requests: dict[int, list]) -> Iterator[Metric]:
    count = CounterMetricFamily("kafka_network_requestmetrics_requests",
                                "Requests answered, per API (RequestsPerSec)", labels=["request"])
    hist = HistogramMetricFamily(
        "kafka_network_requestmetrics_totaltime_seconds",
        "Time from a request being read to its response being ready, per API (TotalTimeMs)",
        labels=["request"])
    bounds = [repr(b) for b in LATENCY_BUCKETS_S] + ["+Inf"]
    for key, e in sorted(requests.items()):
        name = request_name(key)
        count.add_metric([name], e[0])
        cumulative, buckets = 0, []
        for bound, n in zip(bounds, e[2:], strict=True):
            cumulative += n
            buckets.append((bound, cumulative))
        hist.add_metric([name], buckets, e[1])
    yield count
    yield hist


def _log_families(s: Snapshot) -> Iterator[Metric]:
    labels = ["topic", "partition"]
    size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the partition's segments", labels=labels)
    end = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset", labels=labels)
    start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset", labels=labels)
    segments = GaugeMetricFamily("kafka_log_log_numlogsegments", "Segments in the log", labels=labels)
    hw = GaugeMetricFamily("kafka_cluster_partition_highwatermark", "High watermark", labels=labels)
    for topic, index, nbytes, leo, lso, nseg, high in s.logs:
        lv = [topic, str(index)]
        size.add_metric(lv, nbytes)
        end.add_metric(lv, leo)
        start.add_metric(lv, lso)
        segments.add_metric(lv, nseg)
        hw.add_metric(lv, high)
    yield from (size, end, start, segments, hw)
    yield CounterMetricFamily("kafka_log_logmanager_retentionpasses",
                              "Retention passes over every log (kafka-log-retention)", value=s.retention_passes)
    yield CounterMetricFamily("kafka_log_logcleaner_cleanings",
                              "Log cleanings (compactions) run by the cleaner threads", value=s.cleanings)
