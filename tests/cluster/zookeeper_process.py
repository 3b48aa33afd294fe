"""Moved to tests/support/zookeeper_process.py (issue 29).  This name stays only for bench/,
whose modules still import it; remove it once they import tests.support.zookeeper_process."""

from tests.support.zookeeper_process import ZooKeeperProcess

__all__ = ["ZooKeeperProcess"]
