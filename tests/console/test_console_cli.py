"""``kbroker console --bootstrap-server`` as its own process, against a kbroker process and
against Apache Kafka (the jars of ``make kafka-jars``): it reads either cluster through the
Kafka protocol, so the same pages show the same facts (partitions, ISR, message contents,
a group's lag per partition)."""

from __future__ import annotations

import re
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.console.helpers import ConsoleProcess, cells, get
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.requirements_helper import missing_tool

pytestmark = [pytest.mark.compat, pytest.mark.timeout(600)]

TOPIC, GROUP = "console-cli", "console-cli-group"


def prepare(bootstrap: str) -> Consumer:
    """2 partitions of 6 JSON records each; the group commits offsets 4 and 1 (lag 2 and 5)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(60)
    p = Producer({"bootstrap.servers": bootstrap})
    for part in range(2):
        for i in range(6):
            p.produce(TOPIC, partition=part, key=f"k{i}".encode(), value=b'{"i": %d, "p": %d}' % (i, part),
                      headers=[("kind", b"test")])
    assert p.flush(60) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                  "client.id": "cli-reader"})
    c.subscribe([TOPIC])
    deadline = time.monotonic() + 120
    while len(c.assignment()) < 2 and time.monotonic() < deadline:
        c.poll(0.5)
    assert len(c.assignment()) == 2
    while time.monotonic() < deadline:   # Apache Kafka answers NOT_COORDINATOR while it creates __consumer_offsets
        try:
            c.commit(offsets=[TopicPartition(TOPIC, 0, 4), TopicPartition(TOPIC, 1, 1)], asynchronous=False)
            break
        except Exception:   # noqa: BLE001 - retried until the deadline
            time.sleep(0.5)
    return c


def check_pages(base: str) -> None:
    topic = get(f"{base}topics/{TOPIC}")
    assert [r[:8] for r in cells(topic, "partitions")] == [
        ["0", "1", "1", "1", "-", "ok", "0", "6"], ["1", "1", "1", "1", "-", "ok", "0", "6"]]
    messages = get(f"{base}topics/{TOPIC}/messages?partition=1&offset=3&limit=2")
    got = cells(messages, "messages")
    assert [(r[0], r[2], r[4]) for r in got] == [("3", "k3", "kind: test"), ("4", "k4", "kind: test")]
    assert got[0][3].split() == ["{", '"i":', "3,", '"p":', "1", "}"]
    group = get(f"{base}groups/{GROUP}")
    assert [r[:5] for r in cells(group, "offsets")] == [[TOPIC, "0", "4", "6", "2"], [TOPIC, "1", "1", "6", "5"]]
    assert cells(group, "members")[0][2] == "cli-reader"
    brokers = get(f"{base}brokers")
    assert cells(brokers, "brokers")[0][4] == "controller"


@pytest.fixture
def console_for() -> Iterator:
    started: list[ConsoleProcess] = []

    def start(bootstrap: str) -> str:
        started.append(ConsoleProcess(bootstrap))
        return started[-1].url()

    yield start
    for c in started:
        assert c.stop() == 0, "".join(c.lines)
        assert "Traceback" not in "".join(c.lines), "".join(c.lines)


def test_console_command_shows_a_kbroker_clusters_topics_messages_and_lag(tmp_path: Path, console_for):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        consumer = prepare(broker.bootstrap)
        check_pages(console_for(broker.bootstrap))
        consumer.close()
    finally:
        broker.stop()


def test_console_command_shows_the_same_for_apache_kafka(tmp_path: Path, console_for):
    from bench.harness.kafka_dist import JARS, KafkaProcess
    if not any(JARS.glob("kafka-server-*.jar")) and not any(JARS.glob("kafka_*.jar")):
        missing_tool("Apache Kafka jars missing: run `make kafka-jars`")
    kafka = KafkaProcess(tmp_path / "kafka").start()
    try:
        consumer = prepare(kafka.bootstrap)
        check_pages(console_for(kafka.bootstrap))
        consumer.close()
    finally:
        kafka.stop()


def test_a_page_of_an_unreachable_cluster_answers_502_with_the_reason(console_for):
    base = console_for(f"127.0.0.1:{free_port()}")   # nothing listens there
    with pytest.raises(urllib.error.HTTPError) as err:
        get(base + "topics")
    assert err.value.code == 502
    assert "The cluster did not answer" in err.value.read().decode()


def test_a_brokers_own_console_reads_through_its_plaintext_listener_when_the_first_needs_sasl(tmp_path: Path):
    from tests.support.security_helpers import PLAIN_JAAS

    sasl_port, plain_port, console_port, metrics_port = free_port(), free_port(), free_port(), free_port()
    broker = BrokerProcess(tmp_path / "data", port=sasl_port, overrides={
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{sasl_port},PLAINTEXT://127.0.0.1:{plain_port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "kbroker.console.listener": f"http://127.0.0.1:{console_port}",
        "kbroker.metrics.port": str(metrics_port)}).start()
    try:
        rows = cells(get(f"http://127.0.0.1:{console_port}/brokers"), "brokers")
        assert [r[:3] for r in rows] == [["1", "127.0.0.1", str(plain_port)]]
        # the console's connections are on PLAINTEXT; /metrics counts per listener
        metrics = get(f"http://127.0.0.1:{metrics_port}/metrics")
        counts = dict(re.findall(r'kafka_server_socketservermetrics_connection_count\{listener="(\w+)"\} (\S+)', metrics))
        assert counts["SASL_PLAINTEXT"] == "0.0" and float(counts["PLAINTEXT"]) >= 1
    finally:
        broker.stop()
    assert "Traceback" not in broker.log_text(), broker.log_text()
