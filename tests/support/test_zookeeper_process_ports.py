"""tests/support/zookeeper_process.py: a client port taken by another process before
ZooKeeper bound it is chosen again (first start only); a port the caller fixed is not."""

from __future__ import annotations

import socket

import pytest

from tests.support import zookeeper_process
from tests.support.requirements_helper import needs_tool
from tests.support.zookeeper_process import ZooKeeperProcess, four_letter_word

pytestmark = needs_tool(any(zookeeper_process.JARS.glob("zookeeper-*.jar")),
                        "needs the ZooKeeper jars (make zookeeper-jars)")


def occupied() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def test_a_chosen_port_taken_before_zookeeper_binds_it_is_replaced(tmp_path, monkeypatch):
    with occupied() as holder:
        taken = holder.getsockname()[1]
        real = zookeeper_process.free_port
        choices = [taken]
        monkeypatch.setattr(zookeeper_process, "free_port", lambda: choices.pop() if choices else real())
        zk = ZooKeeperProcess(tmp_path).start()
        try:
            assert zk.port != taken and b"Mode:" in four_letter_word(zk.port, b"srvr")
        finally:
            zk.stop()


def test_a_port_the_caller_fixed_is_not_replaced(tmp_path):
    with occupied() as holder:
        taken = holder.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"ZooKeeper's port {taken} is taken"):
            ZooKeeperProcess(tmp_path, port=taken).start()
