"""Moved to tests/support/cluster_processes.py (issue 29).  This name stays only for bench/,
whose modules still import it; remove it once they import tests.support.cluster_processes."""

from tests.support.cluster_processes import Cluster, wait_until

__all__ = ["Cluster", "wait_until"]
