"""Fixtures for tests/cluster: one real ZooKeeper per module that asks for it."""

from __future__ import annotations

import pytest

from tests.support.zookeeper_process import JARS, ZooKeeperProcess


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    if not any(JARS.glob("zookeeper-*.jar")):
        pytest.fail("ZooKeeper jars missing: run `make zookeeper-jars` (make test does)")
    zk = ZooKeeperProcess(tmp_path_factory.mktemp("zookeeper")).start()
    yield zk
    zk.stop()
