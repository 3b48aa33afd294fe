"""Issue 14 with Kafka's own Java producer (kafka-clients, as `make test` has it for Spark):
an idempotent acks=all load over three partitions of a replication-factor-3 topic while the
leader of each partition in turn is killed -9 and restarted; then the checkers
(tests/support/replication_checker.py): every acknowledged record is read back once, at its
acknowledged offset, offsets contiguous, every replica byte-identical below the HW."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import faults
from tests.support.broker_process import ROOT
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.java_admin import java_client_classpath
from tests.support.replication_harness import (
    REPLICATION_OVERRIDES,
    create_topic,
    partition_state,
    verify,
    wait_for_full_isr,
    wait_for_leader,
)
from tests.support.zookeeper_process import JARS, ZooKeeperProcess

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def cluster(tmp_path):
    if not any(JARS.glob("zookeeper-*.jar")):
        pytest.fail("ZooKeeper jars missing: run `make zookeeper-jars` (make test does)")
    zk = ZooKeeperProcess(tmp_path / "zookeeper").start()
    c = Cluster(tmp_path / "cluster", zk, **REPLICATION_OVERRIDES)
    try:
        c.start()
        yield c
    finally:
        c.stop()
        zk.stop()


def acked(history: Path) -> int:
    if not history.exists():
        return 0
    return sum(1 for line in history.read_text().splitlines() if line.startswith('{"t":"ack"'))


def test_the_java_producer_loses_and_duplicates_nothing_while_each_partitions_leader_is_killed(
        cluster, tmp_path):
    topic, partitions = "java-load", 3
    create_topic(cluster, topic, partitions)
    history, stop = tmp_path / "java.jsonl", tmp_path / "stop"
    proc = subprocess.Popen(
        ["java", "-cp", java_client_classpath(), str(ROOT / "tests/support/java/AckedProducer.java"),
         cluster.bootstrap, topic, str(partitions), "1000000", str(history), str(stop)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: acked(history) > 200, "the Java producer's first acknowledgements", 120)
        for p in range(partitions):
            before = partition_state(cluster, topic, p)
            victim = before["leader"]
            seen = acked(history)
            faults.kill9(cluster.brokers[victim])
            wait_for_leader(cluster, topic, p, not_on=victim, above_epoch=before["leader_epoch"])
            wait_until(lambda seen=seen: acked(history) > seen + 200, f"acks after killing broker {victim}", 120)
            faults.restart(cluster.brokers[victim])
            wait_for_full_isr(cluster, topic, partitions)
        stop.touch()
        output, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and "done" in output, output[-3000:]
    errors = [json.loads(line) for line in history.read_text().splitlines() if line.startswith('{"t":"err"')]
    assert errors == []  # the Java producer retried every retriable error itself
    report, _ = verify(cluster, topic, partitions, [history], tmp_path)
    print(f"Java producer, 3 leader kills: {report.summary()}")
