"""A real kbroker process per test module for the tool tests (tests/support/broker_process.py)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess


@pytest.fixture(scope="module")
def broker():
    # its own temp dir, not pytest's numbered basetemp, which pytest sessions running beside
    # this one (the machine is shared) may prune while the broker still uses it
    root = Path(tempfile.mkdtemp(prefix="kbroker-tools-"))
    b = BrokerProcess(root / "data").start()
    yield b
    b.stop()
    shutil.rmtree(root, ignore_errors=True)
    assert "Traceback" not in b.log_text(), b.log_text()
