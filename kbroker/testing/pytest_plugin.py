"""The pytest plugin that installing kbroker registers (entry point ``pytest11``: ``kbroker``).

Fixtures:

* ``kafka_broker`` (session): a real kbroker in its own temp dir, on a free port of
  127.0.0.1, started in this process on its own event-loop thread (tens of ms), stopped
  and its directory removed at the end of the session.  Has ``bootstrap_servers``,
  ``data_dir``, and ``broker`` (the :class:`kbroker.Broker`).
* ``kafka_broker_function``: the same, a fresh one per test (nothing left from other tests).
* ``kafka_bootstrap_servers`` (session): ``kafka_broker.bootstrap_servers``, e.g.
  ``"127.0.0.1:40123"``.
* ``kafka_cluster`` (session): three kbroker processes in cluster mode with a ZooKeeper,
  ``bootstrap_servers`` listing all three; skipped, with the reason, when Java or the
  ZooKeeper jars are missing (``KBROKER_ZOOKEEPER_JARS``, default ``zookeeper/jars`` of a
  kbroker checkout after ``make zookeeper-jars``).

Broker properties: Kafka's defaults, except ``group.initial.rebalance.delay.ms=0`` (a test's
consumer joins at once) and ``num.partitions=1``; add or override any with the ini option
``kafka_broker_properties`` (one ``key=value`` a line) or ``--kafka-broker-property key=value``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbroker.testing.free_ports import bind_conflict, free_port

DEFAULTS = {"num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}
_LISTENING = re.compile(r"started \(kbroker id=(\d+)\) listening on ([^\s:]+):(\d+)")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kbroker", "kbroker's Kafka broker fixtures")
    group.addoption("--kafka-broker-property", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker property for the kafka_broker / kafka_cluster fixtures")
    parser.addini("kafka_broker_properties", "broker properties (key=value, one a line) for the kafka_* fixtures",
                  type="linelist", default=[])


def _properties(config: pytest.Config) -> dict[str, str]:
    props = dict(DEFAULTS)
    for line in [*config.getini("kafka_broker_properties"), *config.getoption("kafka_broker_property")]:
        k, sep, v = line.partition("=")
        if not sep:
            raise pytest.UsageError(f"kafka broker property {line!r} is not key=value")
        props[k.strip()] = v.strip()
    return props


class KafkaBroker:
    """One in-process kbroker: ``bootstrap_servers``, ``data_dir``, ``broker``; ``stop()``."""

    def __init__(self, data_dir: Path, properties: dict[str, str]) -> None:
        from kbroker import Broker  # the broker is imported only when a fixture needs one
        self.data_dir = data_dir
        self._sync = Broker.start({**properties, "listeners": "PLAINTEXT://127.0.0.1:0",
                                   "log.dirs": str(data_dir)})
        self.broker = self._sync.broker
        self.bootstrap_servers: str = self._sync.bootstrap_servers

    def stop(self) -> None:
        self._sync.stop()


def _start_broker(config: pytest.Config) -> KafkaBroker:
    return KafkaBroker(Path(tempfile.mkdtemp(prefix="kafka-broker-")), _properties(config))


def _cleanup(b: KafkaBroker) -> None:
    b.stop()
    shutil.rmtree(b.data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def kafka_broker(pytestconfig: pytest.Config) -> Iterator[KafkaBroker]:
    b = _start_broker(pytestconfig)
    yield b
    _cleanup(b)


@pytest.fixture
def kafka_broker_function(pytestconfig: pytest.Config) -> Iterator[KafkaBroker]:
    b = _start_broker(pytestconfig)
    yield b
    _cleanup(b)


@pytest.fixture(scope="session")
def kafka_bootstrap_servers(kafka_broker: KafkaBroker) -> str:
    return kafka_broker.bootstrap_servers


# --------------------------------------------------------------------------- kafka_cluster

_BIND_ATTEMPTS = 5   # starts of one process whose port was taken before it could bind it


def _zookeeper_jars() -> Path:
    env = os.environ.get("KBROKER_ZOOKEEPER_JARS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "zookeeper" / "jars"


def _wait(check: Any, what: str, timeout_s: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            got = check()
            if got:
                return got
        except OSError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"kafka_cluster: timed out after {timeout_s:.0f}s waiting for {what}")


class KafkaCluster:
    """ZooKeeper and three kbroker processes; ``bootstrap_servers``, ``brokers`` (id -> port).

    Ports are chosen by kbroker/testing/free_ports.py (outside the ephemeral range); one taken by
    another process before ZooKeeper or a broker could bind it ("address already in use")
    is chosen again and that process restarted, a few times at most."""

    def __init__(self, root: Path, properties: dict[str, str], size: int = 3) -> None:
        self.root = root
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.outputs: dict[str, list[str]] = {}
        self.zk_port = free_port()
        self._readers: dict[str, threading.Thread] = {}
        self.brokers: dict[int, int] = {}
        try:
            self._start(properties, size)
        except BaseException:
            self.stop()  # nothing is left running when start-up fails
            raise

    def _start(self, properties: dict[str, str], size: int) -> None:
        self._start_zookeeper()
        for broker_id in range(1, size + 1):
            self._spawn_broker(broker_id, properties)
        for broker_id in self.brokers:
            self._wait_listening(broker_id, properties)
        _wait(self._serving, "every broker's metadata to list all brokers and a controller")

    def _spawn_broker(self, broker_id: int, properties: dict[str, str]) -> None:
        port = free_port()
        self.brokers[broker_id] = port
        overrides = {**properties, "broker.id": str(broker_id), "zookeeper.connect": f"127.0.0.1:{self.zk_port}",
                     "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                     "log.dirs": str(self.root / f"broker-{broker_id}")}
        args = [sys.executable, "-m", "kbroker", "serve"]
        for k, v in overrides.items():
            args += ["--override", f"{k}={v}"]
        self._spawn(f"broker-{broker_id}", args)

    def _wait_listening(self, broker_id: int, properties: dict[str, str]) -> None:
        """Until broker ``broker_id`` says it listens; started again on a new port while it
        exits because its port was taken."""
        name = f"broker-{broker_id}"
        for _ in range(_BIND_ATTEMPTS):
            _wait(lambda: self._ended(name) or any(_LISTENING.search(line) for line in self.outputs[name]),
                  f"broker {broker_id} to listen")
            if not self._ended(name):
                return
            if bind_conflict("".join(self.outputs[name])) != self.brokers[broker_id]:
                break
            self._spawn_broker(broker_id, properties)
        raise RuntimeError(f"kafka_cluster: broker {broker_id} did not start:\n" + "".join(self.outputs[name]))

    def _ended(self, name: str) -> bool:
        """The process has exited and all its output has been read."""
        if self.procs[name].poll() is None:
            return False
        self._readers[name].join(5)
        return True

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.brokers.values())

    def _spawn(self, name: str, args: list[str]) -> None:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.procs[name] = proc
        lines: list[str] = []
        self.outputs[name] = lines

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
        self._readers[name] = threading.Thread(target=read, daemon=True)
        self._readers[name].start()

    def _start_zookeeper(self) -> None:
        data = self.root / "zookeeper"
        data.mkdir(parents=True, exist_ok=True)
        cfg = data / "zoo.cfg"

        def serving() -> bool:
            with socket.create_connection(("127.0.0.1", self.zk_port), timeout=2) as s:
                s.sendall(b"srvr")
                return b"Mode:" in s.recv(4096)

        for _ in range(_BIND_ATTEMPTS):
            cfg.write_text(f"tickTime=500\ndataDir={data}\nclientPort={self.zk_port}\n"
                           "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n")
            self._spawn("zookeeper", ["java", "-Xmx256m", "-cp", f"{_zookeeper_jars()}/*",
                                      "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(cfg)])
            _wait(lambda: self._ended("zookeeper") or serving(), "ZooKeeper to serve")
            if not self._ended("zookeeper"):
                return
            # ZooKeeper exits on a taken client port with java.net.BindException
            if "Address already in use" not in "".join(self.outputs["zookeeper"]):
                break
            self.zk_port = free_port()
        raise RuntimeError("kafka_cluster: ZooKeeper did not start:\n" + "".join(self.outputs["zookeeper"]))

    def _serving(self) -> bool:
        from kbroker.tools.client import Client
        for port in self.brokers.values():
            with Client(f"127.0.0.1:{port}") as c:
                md = c.metadata([])
                if len(md.brokers) != len(self.brokers) or md.controller_id < 0:
                    return False
        return True

    def stop(self) -> None:
        for name, proc in reversed(list(self.procs.items())):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            (self.root / f"{name}.out").write_text("".join(self.outputs[name]))


@pytest.fixture(scope="session")
def kafka_cluster(pytestconfig: pytest.Config) -> Iterator[KafkaCluster]:
    if shutil.which("java") is None:
        pytest.skip("kafka_cluster needs Java (ZooKeeper runs on it)")
    if not any(_zookeeper_jars().glob("zookeeper-*.jar")):
        pytest.skip(f"kafka_cluster needs the ZooKeeper jars in {_zookeeper_jars()} "
                    "(`make zookeeper-jars`, or set KBROKER_ZOOKEEPER_JARS)")
    root = Path(tempfile.mkdtemp(prefix="kafka-cluster-"))
    props = {**_properties(pytestconfig), "offsets.topic.replication.factor": "3"}
    try:
        cluster = KafkaCluster(root, props)
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
