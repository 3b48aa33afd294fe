"""``kbroker topics`` on a three-broker cluster with a replica down: ``--under-replicated-partitions``
lists exactly the partitions whose ISR lost the broker, as Kafka's TopicCommand does on the same
cluster (when `make kafka-jars` has fetched it)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.cluster_processes import Cluster, wait_until
from tests.tools.helpers import TOPIC_COMMAND, kafka_jars_present, kafka_tool, kbroker


@pytest.fixture(scope="module")
def cluster(zookeeper):
    root = Path(tempfile.mkdtemp(prefix="kbroker-tools-cluster-"))
    c = Cluster(root, zookeeper, **{"replica.lag.time.max.ms": "3000"}).start()
    yield c
    c.stop()
    shutil.rmtree(root, ignore_errors=True)


def _describe(c: Cluster, *args: str) -> str:
    r = kbroker("topics", "--bootstrap-server", c.bootstrap, "--describe", "--topic", "urp", *args)
    assert r.rc == 0, r
    return r.out


def test_under_replicated_partitions_appear_when_a_replica_is_down(cluster):
    r = kbroker("topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", "urp",
                "--partitions", "3", "--replication-factor", "3")
    assert r.rc == 0, r
    wait_until(lambda: _describe(cluster).count("\tIsr: ") == 3 and all(
        len(line.split("\tIsr: ")[1].split("\t")[0].split(",")) == 3
        for line in _describe(cluster).splitlines()[1:]), "every partition's ISR to hold all three")
    assert _describe(cluster, "--under-replicated-partitions") == ""

    cluster.brokers[3].kill()
    out = wait_until(lambda: (o := _describe(cluster, "--under-replicated-partitions")).count("\n") == 3 and o,
                     "the three partitions to show as under-replicated")
    for line in out.splitlines():
        fields = dict(f.split(": ", 1) for f in line.strip("\t").split("\t"))
        assert sorted(fields["Replicas"].split(",")) == ["1", "2", "3"]
        assert sorted(fields["Isr"].split(",")) == ["1", "2"]
        assert fields["Leader"] in ("1", "2")
    assert _describe(cluster, "--unavailable-partitions") == ""
    if kafka_jars_present():
        theirs = kafka_tool(TOPIC_COMMAND, "--bootstrap-server", cluster.bootstrap, "--describe",
                            "--topic", "urp", "--under-replicated-partitions")
        assert theirs.out == out
