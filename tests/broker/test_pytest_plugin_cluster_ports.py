"""The kafka_cluster fixture (kbroker/testing/pytest_plugin.py): a port taken by another process
between its choice and the bind does not fail the cluster; ZooKeeper or the broker is
started again on a new port."""

from __future__ import annotations

import shutil
import socket

from kbroker.testing import pytest_plugin
from kbroker.tools.client import Client
from tests.support.requirements_helper import needs_tool


def occupied() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


@needs_tool(shutil.which("java") is not None and any(pytest_plugin._zookeeper_jars().glob("zookeeper-*.jar")),
            "needs Java and the ZooKeeper jars (make zookeeper-jars)")
def test_zookeeper_and_a_broker_whose_ports_were_taken_start_on_new_ports(tmp_path, monkeypatch):
    zk_taken, broker_taken = occupied(), occupied()
    taken = [zk_taken.getsockname()[1], broker_taken.getsockname()[1]]
    first_choices = list(taken)
    real = pytest_plugin.free_port
    monkeypatch.setattr(pytest_plugin, "free_port", lambda: first_choices.pop(0) if first_choices else real())
    try:
        cluster = pytest_plugin.KafkaCluster(tmp_path, dict(pytest_plugin.DEFAULTS), size=1)
        try:
            assert first_choices == []   # both taken ports were handed out and refused
            assert cluster.zk_port != taken[0] and cluster.brokers[1] not in taken
            with Client(cluster.bootstrap_servers) as c:
                md = c.metadata([])
            assert [(b.node_id, b.port) for b in md.brokers] == [(1, cluster.brokers[1])]
        finally:
            cluster.stop()
    finally:
        zk_taken.close()
        broker_taken.close()
