"""Moved to tests/support/broker_process.py (issue 29).  This name stays only for bench/,
whose modules still import it; remove it once they import tests.support.broker_process."""

from tests.support.broker_process import ROOT, BrokerProcess, free_port

__all__ = ["ROOT", "BrokerProcess", "free_port"]
