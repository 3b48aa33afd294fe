"""Fixtures for compat tests: each test gets its own real broker process and data dir."""

from __future__ import annotations

import pytest

from tests.support.broker_process import BrokerProcess


@pytest.fixture
def broker(tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    yield b
    b.stop()
    assert "Traceback" not in b.log_text(), b.log_text()


@pytest.fixture
def broker_factory(tmp_path):
    """Start brokers with extra overrides: ``broker_factory(**{"num.partitions": "4"})``;
    ``log_level="DEBUG"`` (not a broker property: no dot) is kbroker's ``--log-level``."""
    made: list[BrokerProcess] = []

    def make(log_level: str | None = None, **overrides: str) -> BrokerProcess:
        b = BrokerProcess(tmp_path / f"data{len(made)}", overrides=overrides, log_level=log_level).start()
        made.append(b)
        return b

    yield make
    for b in made:
        b.stop()
