"""A real cluster for the process tests: one ZooKeeper (zookeeper_process.py) and kbroker
processes (tests/support/broker_process.py) in cluster mode, plus the waits the tests use.

Every wait is a condition polled until a generous deadline (never a fixed sleep): the
machine is shared and busy.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kazoo.client import KazooClient

from cluster import znodes
from kbroker.interbroker.broker_channel import send_once
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.zookeeper_process import ZooKeeperProcess
from wire.messages import MetadataRequest

T = TypeVar("T")

SESSION_TIMEOUT_MS = 6000
DEADLINE_S = 60.0


def wait_until(check: Callable[[], T], what: str, timeout_s: float = DEADLINE_S) -> T:
    """Poll ``check`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - a broker may be restarting
            last_error = e
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last error: {last_error!r})")


class Cluster:
    def __init__(self, root: Path, zk: ZooKeeperProcess, size: int = 3,
                 make_broker: Callable[[int, Path, dict[str, str]], BrokerProcess] | None = None,
                 run_in: Callable[[Callable[[], object]], object] | None = None, **overrides: str) -> None:
        """``make_broker(id, data_dir, overrides)`` builds each broker process (default: a
        BrokerProcess on 127.0.0.1; tests/support/replication_harness.py's NetnsBroker runs one
        inside a network namespace); ``run_in(fn)`` runs ``fn`` where the test's ZooKeeper client
        must live (e.g. a namespace that reaches ZooKeeper), default here."""
        self.root = root
        self.zk = zk
        self.run_in = run_in or (lambda fn: fn())
        make_broker = make_broker or (lambda _id, data_dir, o: BrokerProcess(data_dir, overrides=o))
        self.brokers: dict[int, BrokerProcess] = {}
        for broker_id in range(1, size + 1):
            self.brokers[broker_id] = make_broker(broker_id, root / f"broker-{broker_id}", {
                "broker.id": str(broker_id),
                "zookeeper.connect": zk.connect_string,
                "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                "offsets.topic.replication.factor": "1",
                "controlled.shutdown.retry.backoff.ms": "500",
                **overrides,
            })
        self.admin = KazooClient(hosts=zk.connect_string, timeout=10.0)

    def start(self) -> Cluster:
        """Start every broker and wait until all serve.  If that fails, the brokers are
        killed and their output kept (``stop``) before the error goes on: a fixture whose
        start raises never reaches its own teardown."""
        self.run_in(lambda: self.admin.start(30))  # its connection thread lives where it starts
        try:
            for b in self.brokers.values():
                b.start(timeout_s=60)
            wait_until(lambda: len(self.admin.get_children(znodes.BROKER_IDS_PATH)) == len(self.brokers),
                       "every broker registered")
            self.wait_serving()
        except BaseException:
            self.stop()
            raise
        return self

    def serving(self) -> bool:
        """Every live broker's Metadata lists every registered broker and a controller.

        A broker answers from its metadata cache, which the controller fills with an
        UpdateMetadata after the broker registers (in Kafka too): until then its Metadata
        is held (kbroker/handlers/metadata_readiness.py, at most 25 s: longer than this probe's 12 s,
        which then fails and is asked again).  A test that talks to a broker just
        (re)started waits for this first, as a client would have to."""
        registered = self.registered()
        for b in self.brokers.values():
            if not b.alive():
                continue
            host = b.bootstrap.rsplit(":", 1)[0]  # a broker in a network namespace: its lab address
            resp = self.run_in(lambda host=host, port=b.port: asyncio.run(send_once(host, port, MetadataRequest(
                topics=[], allow_auto_topic_creation=False), 12, "cluster-harness")))
            if {n.node_id for n in resp.brokers} != registered or resp.controller_id < 0:
                return False
        return True

    def wait_serving(self) -> None:
        wait_until(self.serving, "every live broker's metadata listing every registered broker")

    def stop(self) -> None:
        for broker_id, b in self.brokers.items():
            b.kill()
            # kept for a failed run: each broker's whole output, beside its data
            (self.root / f"broker-{broker_id}.out").write_text(b.log_text())
        self.admin.stop()
        self.admin.close()

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.alive())

    def controller(self) -> tuple[int, int]:
        """(controller id, controller epoch) as ZooKeeper says."""
        data, _ = self.admin.get(znodes.CONTROLLER_PATH)
        epoch, _ = self.admin.get(znodes.CONTROLLER_EPOCH_PATH)
        return znodes.decode_controller(data), znodes.decode_controller_epoch(epoch)

    def registered(self) -> set[int]:
        return {int(c) for c in self.admin.get_children(znodes.BROKER_IDS_PATH)}


def metered_cluster(root: Path, zk: ZooKeeperProcess, **overrides: str) -> Cluster:
    """A 3-broker Cluster (not started) whose brokers each serve ``/metrics`` on a port of
    their own: ``cluster.metrics_ports`` = {broker id: port}."""
    ports = {broker_id: free_port() for broker_id in (1, 2, 3)}

    def make(broker_id: int, data_dir: Path, o: dict[str, str]) -> BrokerProcess:
        return BrokerProcess(data_dir, overrides={**o, "kbroker.metrics.port": str(ports[broker_id])})

    c = Cluster(root, zk, make_broker=make, **overrides)
    c.metrics_ports = ports   # type: ignore[attr-defined]
    return c
