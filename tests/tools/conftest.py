"""A real kbroker process per test module for the tool tests (tests/compat/broker_process.py)."""

from __future__ import annotations

import pytest

from tests.compat.broker_process import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("tools") / "data").start()
    yield b
    b.stop()
    assert "Traceback" not in b.log_text(), b.log_text()
