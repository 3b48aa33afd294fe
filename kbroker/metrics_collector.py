"""Prometheus families for ``/metrics``, built when the endpoint is scraped.

Nothing here runs per request: the hot-path totals are plain dicts (kbroker/metrics.py) and
everything else is read from the broker's in-memory state at scrape time (partitions' sizes
and offsets, the ISR, the controller, groups and their committed offsets).  No file is read
and nothing blocks: a scrape of a broker with N partitions and G groups costs O(N + offsets).

Names follow Kafka's JMX beans as the Prometheus JMX exporter's Kafka rules lower-case them
(``kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec, topic=t>`` ->
``kafka_server_brokertopicmetrics_messagesin_total{topic="t"}``; a ``...PerSec`` meter
becomes a ``_total`` counter, Prometheus takes the rate).  Consumer lag uses
kafka_exporter's names (``kafka_consumergroup_lag{consumergroup,topic,partition}``), which
Grafana dashboards for Kafka expect.  Latencies are seconds (Prometheus' base unit), not
Kafka's ``TotalTimeMs``.

What a broker reports, as Kafka: under-replicated partitions among those it leads;
OfflinePartitionsCount and ActiveControllerCount only on the active controller (a single
node is always its own controller, with no offline partitions); consumer lag for the groups
it coordinates, per partition it hosts (lag = high watermark - committed offset, never < 0).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from kbroker.metrics import ISR_STATS, LATENCY_BUCKETS_S, REQUEST_STATS, TOPIC_STATS
from wire.schema import REQUESTS

if TYPE_CHECKING:
    from kbroker.broker import Broker


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


class BrokerCollector(Collector):
    """Everything ``/metrics`` shows for one broker (``broker``: kbroker.broker.Broker)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def collect(self) -> Iterator[Metric]:
        yield from self._topic_metrics()
        yield from self._request_metrics()
        state = self.broker.state
        if state is None:   # stopping: only the process-wide totals
            return
        yield from self._replica_metrics(state)
        yield from self._log_metrics(state)
        yield from self._group_metrics(state)
        yield from self._socket_metrics(state)

    # ------------------------------------------------------------ BrokerTopicMetrics
    def _topic_metrics(self) -> Iterator[Metric]:
        s = TOPIC_STATS
        yield _counter("kafka_server_brokertopicmetrics_messagesin",
                       "Records appended by Produce, per topic (MessagesInPerSec)", "topic",
                       s.messages_in)
        yield _counter("kafka_server_brokertopicmetrics_bytesin",
                       "Record batch bytes appended by Produce, per topic (BytesInPerSec)", "topic",
                       s.bytes_in)
        yield _counter("kafka_server_brokertopicmetrics_bytesout",
                       "Record bytes sent to consumers in Fetch responses, per topic (BytesOutPerSec)",
                       "topic", s.bytes_out)
        yield _counter("kafka_server_brokertopicmetrics_replicationbytesout",
                       "Record bytes sent to follower replicas, per topic (ReplicationBytesOutPerSec)",
                       "topic", s.replication_bytes_out)

    # ------------------------------------------------------------ RequestMetrics
    def _request_metrics(self) -> Iterator[Metric]:
        r = REQUEST_STATS
        count = CounterMetricFamily("kafka_network_requestmetrics_requests",
                                    "Requests answered, per API (RequestsPerSec)", labels=["request"])
        hist = HistogramMetricFamily(
            "kafka_network_requestmetrics_totaltime_seconds",
            "Time from a request being read to its response being ready, per API (TotalTimeMs)",
            labels=["request"])
        for key, e in sorted(r.by_key.items()):
            name = request_name(key)
            count.add_metric([name], e[0])
            cumulative, buckets = 0, []
            for bound, n in zip((*LATENCY_BUCKETS_S, float("inf")), e[2:], strict=True):
                cumulative += n
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
            hist.add_metric([name], buckets, e[1])
        yield count
        yield hist

    # ------------------------------------------------------------ ReplicaManager / KafkaController
    def _replica_metrics(self, state: Any) -> Iterator[Metric]:
        cluster = state.cluster
        leaders = under = under_min = 0
        for p in state.partitions.values():
            rep = getattr(p, "replication", None)
            if cluster is None:
                leaders += 1           # a single node leads every partition, fully replicated
                continue
            if rep is None or rep.leader_epoch < 0 or state.node_id not in rep.isr:
                continue               # not leading it: its leader reports it
            leaders += 1
            if len(rep.isr) < len(rep.replicas):
                under += 1
            if rep.is_under_min_isr(p.min_insync_replicas):
                under_min += 1
        yield GaugeMetricFamily("kafka_server_replicamanager_partitioncount",
                                "Partitions with a replica on this broker", value=len(state.partitions))
        yield GaugeMetricFamily("kafka_server_replicamanager_leadercount",
                                "Partitions this broker leads", value=leaders)
        yield GaugeMetricFamily("kafka_server_replicamanager_underreplicatedpartitions",
                                "Partitions led here whose ISR is smaller than their replica set",
                                value=under)
        yield GaugeMetricFamily("kafka_server_replicamanager_underminisrpartitioncount",
                                "Partitions led here whose ISR is below min.insync.replicas",
                                value=under_min)
        yield CounterMetricFamily("kafka_server_replicamanager_isrshrinks",
                                  "ISR shrinks proposed by partitions led here (IsrShrinksPerSec)",
                                  value=ISR_STATS.shrinks)
        yield CounterMetricFamily("kafka_server_replicamanager_isrexpands",
                                  "ISR expansions proposed by partitions led here (IsrExpandsPerSec)",
                                  value=ISR_STATS.expands)
        active, offline = 1, 0
        if cluster is not None:
            active = 1 if cluster.runner.is_active else 0
            if active:
                image = cluster.cache.image
                offline = sum(1 for t in image.topics.values() for index in t.partitions
                              if image.leader(t.name, index) < 0)
        yield GaugeMetricFamily("kafka_controller_kafkacontroller_activecontrollercount",
                                "1 on the active controller, else 0", value=active)
        yield GaugeMetricFamily("kafka_controller_kafkacontroller_offlinepartitionscount",
                                "Partitions without a live leader (reported by the controller)",
                                value=offline)

    # ------------------------------------------------------------ Log / LogManager / LogCleaner
    def _log_metrics(self, state: Any) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the partition's segments", labels=labels)
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset", labels=labels)
        start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset", labels=labels)
        segments = GaugeMetricFamily("kafka_log_log_numlogsegments", "Segments in the log", labels=labels)
        hw = GaugeMetricFamily("kafka_cluster_partition_highwatermark", "High watermark", labels=labels)
        for (topic, index), p in sorted(state.partitions.items()):
            lg = p.log
            lv = [topic, str(index)]
            size.add_metric(lv, lg.size())
            end.add_metric(lv, lg.log_end_offset)
            start.add_metric(lv, lg.log_start_offset)
            segments.add_metric(lv, lg.number_of_segments())
            hw.add_metric(lv, lg.high_watermark)
        yield from (size, end, start, segments, hw)
        yield CounterMetricFamily("kafka_log_logmanager_retentionpasses",
                                  "Retention passes over every log (kafka-log-retention)",
                                  value=state.log_manager.retention_passes)
        cleaner = getattr(self.broker, "_cleaner", None)
        yield CounterMetricFamily("kafka_log_logcleaner_cleanings",
                                  "Log cleanings (compactions) run by the cleaner threads",
                                  value=getattr(cleaner, "jobs", 0))

    # ------------------------------------------------------------ group coordinator, lag
    def _group_metrics(self, state: Any) -> Iterator[Metric]:
        coordinator = state.groups.coordinator
        by_state: dict[str, int] = {}
        for g in coordinator.groups.values():
            by_state[str(g.state)] = by_state.get(str(g.state), 0) + 1
        groups = GaugeMetricFamily("kafka_coordinator_group_groupmetadatamanager_numgroups",
                                   "Classic groups this coordinator holds, per state", labels=["state"])
        for name in ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"):
            groups.add_metric([name], by_state.get(name, 0))
        yield groups
        offsets_by_group = coordinator.offsets.offsets
        yield GaugeMetricFamily("kafka_coordinator_group_groupmetadatamanager_numoffsets",
                                "Committed offsets this coordinator holds",
                                value=sum(len(v) for v in offsets_by_group.values()))
        labels = ["consumergroup", "topic", "partition"]
        current = GaugeMetricFamily("kafka_consumergroup_current_offset",
                                    "Committed offset of a group on a partition", labels=labels)
        lag = GaugeMetricFamily("kafka_consumergroup_lag",
                                "High watermark minus the committed offset (0 when ahead)", labels=labels)
        for group_id in sorted(offsets_by_group):
            for (topic, index), om in sorted(offsets_by_group[group_id].items()):
                lv = [group_id, topic, str(index)]
                current.add_metric(lv, om.offset)
                p = state.partitions.get((topic, index))
                if p is not None:
                    lag.add_metric(lv, max(0, p.log.high_watermark - om.offset))
        yield current
        yield lag

    # ------------------------------------------------------------ SocketServer
    def _socket_metrics(self, state: Any) -> Iterator[Metric]:
        counts: dict[str, int] = {}
        for conn in list(state.connections):
            name = getattr(conn, "listener_name", None) or "PLAINTEXT"
            counts[name] = counts.get(name, 0) + 1
        for listener in self.broker.config.listeners:
            counts.setdefault(listener.name, 0)
        fam = GaugeMetricFamily("kafka_server_socketservermetrics_connection_count",
                                "Open client connections, per listener", labels=["listener"])
        for name in sorted(counts):
            fam.add_metric([name], counts[name])
        yield fam
