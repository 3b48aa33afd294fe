"""``kbroker console --bootstrap-server`` as its own process, against a kbroker process and
against Apache Kafka (the jars of ``make kafka-jars``): it reads either cluster through the
Kafka protocol, so the same pages show the same facts (partitions, ISR, message contents,
a group's lag per partition)."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.compat.broker_process import ROOT, BrokerProcess, free_port

pytestmark = [pytest.mark.compat, pytest.mark.timeout(600)]

_LISTENING = re.compile(r"console on (http://\S+/)")
TOPIC, GROUP = "console-cli", "console-cli-group"


class ConsoleProcess:
    def __init__(self, bootstrap: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kbroker", "console", "--bootstrap-server", bootstrap,
             "--listen", f"http://127.0.0.1:{free_port()}"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def url(self, timeout_s: float = 120.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                m = _LISTENING.search(line)
                if m:
                    return m.group(1)
            assert self.proc.poll() is None, "".join(self.lines)
            time.sleep(0.1)
        raise AssertionError("the console did not say where it listens:\n" + "".join(self.lines))

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(60)


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as resp:
        assert resp.status == 200
        return html.unescape(resp.read().decode())


def cells(page: str, table_id: str) -> list[list[str]]:
    """The text of each body row of one table of a page."""
    body = page.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0].split("<tbody>", 1)[1]
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


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
    from bench.kafka_dist import JARS, KafkaProcess
    if not any(JARS.glob("kafka-server-*.jar")) and not any(JARS.glob("kafka_*.jar")):
        pytest.skip("Apache Kafka jars missing: run `make kafka-jars`")
    kafka = KafkaProcess(tmp_path / "kafka").start()
    try:
        consumer = prepare(kafka.bootstrap)
        check_pages(console_for(kafka.bootstrap))
        consumer.close()
    finally:
        kafka.stop()
