"""Faults a replication scenario injects into a broker process (tests/support/broker_process.py's
BrokerProcess, as tests/support/cluster_processes.py's Cluster runs them).

- ``kill9``: SIGKILL, an unclean stop (nothing flushed by the broker; the page cache keeps
  what it wrote, as after a process crash, not a power loss);
- ``pause`` / ``resume``: SIGSTOP / SIGCONT, a process frozen in the middle of whatever it was
  doing (a zombie leader when the pause outlasts its ZooKeeper session); ``Paused`` resumes
  on exit whatever happens;
- ``terminate``: SIGTERM and wait, a controlled shutdown; returns the exit status;
- ``wipe``: delete a stopped broker's data dir (a replaced disk);
- ``restart``: start a stopped broker again on the same port and data dir.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import time

from tests.support.broker_process import BrokerProcess


def pid(broker: BrokerProcess) -> int:
    assert broker.proc is not None and broker.proc.poll() is None, "the broker is not running"
    return broker.proc.pid


def kill9(broker: BrokerProcess) -> None:
    broker.kill()


def pause(broker: BrokerProcess) -> None:
    os.kill(pid(broker), signal.SIGSTOP)


def resume(broker: BrokerProcess) -> None:
    if broker.proc is not None and broker.proc.poll() is None:
        os.kill(broker.proc.pid, signal.SIGCONT)


class Paused:
    """``with Paused(broker): ...`` freezes the broker for the block and always thaws it."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker

    def __enter__(self) -> BrokerProcess:
        pause(self.broker)
        return self.broker

    def __exit__(self, *exc: object) -> None:
        resume(self.broker)


def terminate(broker: BrokerProcess, timeout_s: float = 120.0) -> int:
    return broker.stop(timeout_s)


def wipe(broker: BrokerProcess) -> None:
    assert not broker.alive(), "wipe a stopped broker's data dir only"
    shutil.rmtree(broker.data_dir, ignore_errors=True)
    broker.data_dir.mkdir(parents=True)


def restart(broker: BrokerProcess, timeout_s: float = 90.0) -> BrokerProcess:
    """Start a stopped (killed, terminated) broker again with the same port and data dir."""
    assert not broker.alive(), "restart a stopped broker"
    host = broker.overrides["listeners"].split("://", 1)[1].rsplit(":", 1)[0]
    if host in ("127.0.0.1", "localhost"):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # a killed process's socket may linger a moment
            try:
                with socket.socket() as s:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind(("127.0.0.1", broker.port))
                break
            except OSError:
                time.sleep(0.1)
    return broker.start(timeout_s)
