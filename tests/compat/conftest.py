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


@pytest.fixture
def fast_broker(broker_factory) -> BrokerProcess:
    """A broker whose consumer-group-protocol sessions are short enough for a test
    (tests/support/consumer_members.py's FAST)."""
    from tests.support.consumer_members import FAST

    return broker_factory(**FAST)


@pytest.fixture(params=["confluent", "java"])
def consumer_client(request) -> str:
    """A consumer-group-protocol test runs twice: with confluent-kafka and with Kafka's Java
    consumer (tests/support/consumer_members.py)."""
    return request.param
