"""The README's confluent-kafka example works as printed against a broker started the way
`make run` starts it (localhost:9092, Kafka's defaults)."""

from __future__ import annotations

import contextlib
import io
import re
import socket
from pathlib import Path

import pytest

from tests.support.broker_process import ROOT, BrokerProcess


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return next(b for b in blocks if "confluent_kafka" in b and "localhost:9092" in b)


def _port_9092_free() -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", 9092))
            return True
        except OSError:
            return False


def test_the_readme_example_prints_what_the_readme_says(tmp_path: Path):
    if not _port_9092_free():
        pytest.fail("port 9092 is taken: the README example needs a broker on localhost:9092")
    code = _readme_example()
    expected = re.search(r"#\s*(.+)$", code.strip().splitlines()[-2]).group(1).strip()
    b = BrokerProcess(tmp_path / "data", port=9092, overrides={"listeners": "PLAINTEXT://localhost:9092"}).start()
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})
    finally:
        b.stop()
    assert out.getvalue().strip() == expected
