"""/metrics (kbroker.metrics.port) on a real broker process during a confluent-kafka
produce/consume workload: the counters move by exactly what was sent and read."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import ROOT, free_port
from tests.support.metrics_scrape import scrape_labelled

pytestmark = [pytest.mark.compat, pytest.mark.timeout(300)]

TOPIC = "metrics-orders"
GROUP = "metrics-readers"


scrape = scrape_labelled


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def wait_until(predicate, timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def produce(bootstrap: str, start: int, count: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 37,
                  "enable.idempotence": True})
    delivered = []
    for i in range(start, start + count):
        p.produce(TOPIC, key=f"k{i % 7}".encode(), value=(f"order-{i}-" + "x" * (i % 50)).encode(),
                  headers=[("h", b"v")] if i % 3 == 0 else None,
                  on_delivery=lambda err, msg: delivered.append(err))
    assert p.flush(60) == 0
    assert delivered == [None] * count


def log_file_bytes(data_dir: Path) -> int:
    return sum(f.stat().st_size for d in data_dir.glob(f"{TOPIC}-*") for f in d.glob("*.log"))


def test_counters_move_by_exactly_the_records_and_bytes_produced_and_consumed(broker_factory):
    port = free_port()
    b = broker_factory(**{"kbroker.metrics.port": str(port)})
    assert f"metrics endpoint on http://127.0.0.1:{port}/metrics" in b.log_text()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 3, 1)])[TOPIC].result(30)

    before = scrape(port)
    assert value(before, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == 0
    produce(b.bootstrap, 0, 1000)

    after = scrape(port)
    assert value(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == 1000
    bytes_in = value(after, "kafka_server_brokertopicmetrics_bytesin_total", topic=TOPIC)
    # every appended batch is on disk as it was sent: the .log files hold exactly BytesIn
    assert bytes_in == log_file_bytes(b.data_dir) > 1000 * 10
    assert sum(value(after, "kafka_log_log_size", topic=TOPIC, partition=str(p)) for p in range(3)) == bytes_in
    assert sum(value(after, "kafka_log_log_logendoffset", topic=TOPIC, partition=str(p))
               for p in range(3)) == 1000
    produce_requests = value(after, "kafka_network_requestmetrics_requests_total", request="Produce")
    assert produce_requests >= 1000 / 37 / 3   # batches of at most 37 records, 3 partitions
    assert value(after, "kafka_network_requestmetrics_totaltime_seconds_count",
                 request="Produce") == produce_requests
    assert value(after, "kafka_network_requestmetrics_totaltime_seconds_bucket",
                 request="Produce", le="+Inf") == produce_requests
    assert value(after, "kafka_server_socketservermetrics_connection_count", listener="PLAINTEXT") >= 1
    assert value(after, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(after, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value(after, "kafka_server_brokertopicmetrics_bytesout_total", topic=TOPIC) == 0

    # one consumer reads everything once and commits: BytesOut is every stored byte, lag 0
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([TOPIC])
    seen = 0
    deadline = time.monotonic() + 120
    while seen < 1000 and time.monotonic() < deadline:
        for m in c.consume(500, 1.0):
            assert m.error() is None
            seen += 1
    assert seen == 1000
    c.commit(asynchronous=False)
    read = scrape(port)
    assert value(read, "kafka_server_brokertopicmetrics_bytesout_total", topic=TOPIC) == bytes_in
    for p in range(3):
        labels = {"consumergroup": GROUP, "topic": TOPIC, "partition": str(p)}
        assert value(read, "kafka_consumergroup_lag", **labels) == 0
        assert value(read, "kafka_consumergroup_current_offset", **labels) == \
            value(read, "kafka_log_log_logendoffset", topic=TOPIC, partition=str(p))
    assert value(read, "kafka_coordinator_group_groupmetadatamanager_numgroups", state="Stable") == 1

    # 50 more records while the consumer does not poll: the lag is exactly those 50
    produce(b.bootstrap, 1000, 50)
    lagged = scrape(port)
    assert value(lagged, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == 1050
    assert sum(value(lagged, "kafka_consumergroup_lag", consumergroup=GROUP, topic=TOPIC, partition=str(p))
               for p in range(3)) == 50
    c.close()
    # the member left: the group is Empty once the coordinator handled the LeaveGroup
    assert wait_until(lambda: value(scrape(port), "kafka_coordinator_group_groupmetadatamanager_numgroups",
                                    state="Empty") == 1)

    # a deleted topic's series leave the scrape (Kafka's BrokerTopicStats.removeMetrics)
    admin.delete_topics([TOPIC])[TOPIC].result(30)
    gone = scrape(port)
    assert not [k for k in gone if ("topic", TOPIC) in k[1] and not k[0].startswith("kafka_consumergroup_")]
    # (kbroker keeps a deleted topic's committed offsets: no lag is computed for them)
    assert not [k for k in gone if k[0] == "kafka_consumergroup_lag" and ("topic", TOPIC) in k[1]]


def test_metrics_endpoint_is_off_unless_a_port_is_configured(broker):
    assert "metrics endpoint" not in broker.log_text()


def test_every_metric_the_grafana_dashboard_queries_is_served(broker_factory):
    dashboard = json.loads((ROOT / "docs" / "grafana" / "kbroker.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if v.get("definition")]
    wanted = {n for e in exprs for n in re.findall(r"\b(?:kafka|process)_[a-z_]+", e)}
    assert len(wanted) >= 20
    port = free_port()
    b = broker_factory(**{"kbroker.metrics.port": str(port)})
    produce(b.bootstrap, 0, 10)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([TOPIC])
    seen, deadline = 0, time.monotonic() + 120
    while seen < 10 and time.monotonic() < deadline:
        seen += len([m for m in c.consume(10, 1.0) if m.error() is None])
    c.commit(asynchronous=False)
    served = {name for name, _ in scrape(port)}
    # a family with no sample yet (no follower fetched here) is still declared
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
        served |= set(re.findall(r"(?m)^# TYPE (\S+) ", resp.read().decode()))
    c.close()
    assert sorted(wanted - served) == []


def test_a_metrics_port_already_taken_stops_start_up_with_the_address_in_the_message(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "kbroker", "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                            "--override", f"log.dirs={tmp_path / 'data'}", "--override", f"kbroker.metrics.port={port}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert f"cannot start: [Errno 98] error while attempting to bind on address ('127.0.0.1', {port})" in r.stderr
    assert "shut down (kbroker id=1) cleanly" in r.stderr   # what had started was stopped first


def test_the_grafana_dashboard_is_importable_json_with_unique_panel_ids_and_no_overlapping_panels():
    dashboard = json.loads((ROOT / "docs" / "grafana" / "kbroker.json").read_text())
    assert dashboard["uid"] == "kbroker-overview"
    assert [i["name"] for i in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    cells = set()
    for p in dashboard["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24
        area = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & area, p["title"]
        cells |= area
