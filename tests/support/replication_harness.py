"""What the replication scenarios (tests/cluster/test_replication_*.py) share: the cluster's
settings, partition state read from ZooKeeper, waits on leaders and ISRs, running the load
client, and the final verification (read every partition back, run the delivery checker,
then wait for every replica to hold byte-identical batches below the high watermark).

Also the network-namespace variants of the ZooKeeper and broker processes: the same
processes started with ``ip netns exec <node's namespace>`` and bound to the node's lab
address (tests/support/netns.py), so a partition can cut them off.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import faults
from tests.support.broker_process import BrokerProcess
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.load_client import LoadProcess, read_back
from tests.support.netns import NetworkLab
from tests.support.replication_checker import (
    DeliveryReport,
    History,
    check_delivery,
    check_leader_epochs,
    compare_replicas,
    partition_dirs,
    read_history,
)
from tests.support.zookeeper_process import JARS, MAIN, ZooKeeperProcess

T = TypeVar("T")

# CLUSTER-NOTES §3: small timeouts so that failover takes seconds (ZooKeeper's tickTime is
# 500 ms, so sessions of 1-10 s are allowed); min.insync.replicas=2 with RF 3 everywhere.
REPLICATION_OVERRIDES = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "replica.lag.time.max.ms": "3000",
    "unclean.leader.election.enable": "false",
    "offsets.topic.replication.factor": "3",
    "auto.create.topics.enable": "false",
}


# -- ZooKeeper state --------------------------------------------------------------------------


def partition_state(cluster: Cluster, topic: str, partition: int) -> dict[str, Any]:
    """``/brokers/topics/T/partitions/P/state`` as Kafka writes it: leader, leader_epoch, isr,
    controller_epoch; plus ``zk_version`` (the partition epoch)."""
    data, stat = cluster.admin.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    state = json.loads(data)
    state["zk_version"] = stat.version
    return state


def states(cluster: Cluster, topic: str, partitions: int) -> dict[int, dict[str, Any]]:
    return {p: partition_state(cluster, topic, p) for p in range(partitions)}


def wait_for_leader(cluster: Cluster, topic: str, partition: int, *, not_on: int | None = None,
                    min_isr: int = 2, above_epoch: int = -1, timeout_s: float = 90.0) -> dict[str, Any]:
    """A live leader (other than ``not_on``), with at least ``min_isr`` in the ISR and a leader
    epoch above ``above_epoch``."""
    def ready() -> dict[str, Any] | None:
        s = partition_state(cluster, topic, partition)
        leader = s["leader"]
        ok = (leader >= 0 and leader != not_on and leader in cluster.registered()
              and len(s["isr"]) >= min_isr and s["leader_epoch"] > above_epoch)
        return s if ok else None

    return wait_until(ready, f"{topic}-{partition}: a leader other than {not_on} with ISR >= {min_isr}",
                      timeout_s)


def wait_for_full_isr(cluster: Cluster, topic: str, partitions: int, timeout_s: float = 120.0) -> None:
    size = len(cluster.brokers)
    last: dict[int, dict[str, Any]] = {}

    def full() -> bool:
        last.update(states(cluster, topic, partitions))
        return all(len(s["isr"]) == size and s["leader"] >= 0 for s in last.values())

    try:
        wait_until(full, f"every partition of {topic} back to an ISR of {size}", timeout_s)
    except AssertionError as e:
        raise AssertionError(f"{e}; partition states: {last}; registered: {sorted(cluster.registered())}") from None


def wait_until_unregistered(cluster: Cluster, broker_id: int, timeout_s: float = 90.0) -> None:
    wait_until(lambda: broker_id not in cluster.registered(), f"broker {broker_id}'s session to end", timeout_s)


def wait_until_registered(cluster: Cluster, broker_id: int, timeout_s: float = 90.0) -> None:
    wait_until(lambda: broker_id in cluster.registered(), f"broker {broker_id} registered", timeout_s)


# -- topics and load --------------------------------------------------------------------------


def create_topic(cluster: Cluster, topic: str, partitions: int, *, rf: int = 3,
                 config: dict[str, str] | None = None,
                 in_client_ns: Callable[[Callable[[], T]], T] | None = None) -> None:
    """Create the topic on the controller and wait until every partition has a leader and a
    full ISR in ZooKeeper."""
    def create() -> None:
        client = AdminClient({"bootstrap.servers": cluster.bootstrap})
        # every broker names the controller once its /controller watch has fired
        wait_until(lambda: client.list_topics(timeout=10).controller_id >= 0, "the brokers to know the controller")
        nt = NewTopic(topic, partitions, rf, config={"min.insync.replicas": "2", **(config or {})})
        for f in client.create_topics([nt], request_timeout=60, operation_timeout=60).values():
            f.result(90)

    (in_client_ns or (lambda fn: fn()))(create)
    wait_until(lambda: cluster.admin.exists(f"/brokers/topics/{topic}/partitions/{partitions - 1}/state"),
               f"{topic}'s partition states")
    wait_for_full_isr(cluster, topic, partitions)


def wait_for_acks(load: LoadProcess, more_than: int, what: str, timeout_s: float = 90.0) -> int:
    """Wait until the load client has had more than ``more_than`` records acknowledged."""
    return wait_until(lambda: (n := load.acked()) > more_than and n, f"{what} ({more_than} acks so far)",
                      timeout_s)


# -- verification ---------------------------------------------------------------------------


def log_dirs(cluster: Cluster) -> dict[int, Path]:
    return {b: broker.data_dir for b, broker in cluster.brokers.items()}


def verify(cluster: Cluster, topic: str, partitions: int, histories: list[Path], work: Path, *,
           netns: str | None = None, allow_loss: bool = False,
           replicas_timeout_s: float = 90.0) -> tuple[DeliveryReport, History]:
    """Read the topic back and check it against the producers' histories (nothing lost,
    duplicated, misplaced or out of order; ``allow_loss`` returns lost records instead of
    failing on them, for acks=1), then wait until every replica of every partition holds
    the same bytes below the high watermark and its leader-epoch-checkpoint increases."""
    reads = read_back(work / f"{topic}-reads.jsonl", cluster.bootstrap, topic, partitions, netns=netns)
    history = read_history(*histories).extend(read_history(reads))
    marks = {e["p"]: (e["low"], e["high"]) for e in map(json.loads, reads.read_text().splitlines())
             if e.get("t") == "hw"}
    report = check_delivery(history, log_start={p: low for p, (low, _) in marks.items()})
    if allow_loss:  # an acked record may be gone, and its offset reused; nothing else
        assert not (report.duplicates or report.gaps), report.summary()
    else:
        assert report.ok, report.summary()

    dirs = log_dirs(cluster)
    last: dict[int, list[str]] = {}

    def replicas_identical() -> bool:
        for p, (low, high) in marks.items():
            r = compare_replicas(partition_dirs(dirs, topic, p), high, low)
            last[p] = r.problems
        return not any(last.values())

    try:
        wait_until(replicas_identical, "every replica identical below the high watermark", replicas_timeout_s)
    except AssertionError:
        raise AssertionError(f"replicas differ: {last}") from None
    epochs = [problem for p in marks for d in partition_dirs(dirs, topic, p).values()
              for problem in check_leader_epochs(d)]
    assert not epochs, epochs
    return report, history


# -- processes inside network namespaces ----------------------------------------------------


class NetnsZooKeeper(ZooKeeperProcess):
    """ZooKeeper in the lab node ``node``'s namespace, listening on its address."""

    def __init__(self, work_dir: Path, lab: NetworkLab, node: str = "zk", port: int = 2181):
        super().__init__(work_dir, port=port)
        self.lab = lab
        self.node = node

    @property
    def connect_string(self) -> str:
        return f"{self.lab.address(self.node)}:{self.port}"

    def _write_config(self) -> Path:
        cfg = super()._write_config()
        cfg.write_text(cfg.read_text().replace("clientPortAddress=127.0.0.1",
                                               f"clientPortAddress={self.lab.address(self.node)}"))
        return cfg

    def _srvr(self) -> bytes:
        """The ``srvr`` four-letter word, asked on the lab address (from inside the namespace)."""
        with socket.create_connection((self.lab.address(self.node), self.port), timeout=2.0) as s:
            s.sendall(b"srvr")
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks)

    def start(self, timeout_s: float = 60.0) -> NetnsZooKeeper:
        cfg = self._write_config()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [*self.lab.exec_prefix(self.node), "java", "-Xmx256m", "-XX:+UseSerialGC",
                 "-XX:TieredStopAtLevel=1", "-Dzookeeper.admin.enableServer=false", "-cp", f"{JARS}/*", MAIN,
                 str(cfg)], stdout=log, stderr=subprocess.STDOUT, cwd=self.work_dir)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {self.proc.returncode}: {self.output()}")
            try:
                srvr = self.lab.run_in(self.node, self._srvr)
                if b"Mode:" in srvr:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"ZooKeeper did not serve in {timeout_s}s: {self.output()}")


class NetnsBroker(BrokerProcess):
    """A kbroker process in the lab node ``node``'s namespace, listening on its address."""

    def __init__(self, data_dir: Path, lab: NetworkLab, node: str, port: int = 9092,
                 overrides: dict[str, str] | None = None):
        self.lab = lab
        self.node = node
        super().__init__(data_dir, port=port, overrides={
            "listeners": f"PLAINTEXT://{lab.address(node)}:{port}", **(overrides or {})})

    @property
    def bootstrap(self) -> str:
        return f"{self.lab.address(self.node)}:{self.port}"

    def command(self) -> list[str]:
        return [*self.lab.exec_prefix(self.node), *super().command()]


def netns_broker_factory(lab: NetworkLab) -> Callable[[int, Path, dict[str, str]], BrokerProcess]:
    """For ``Cluster(..., make_broker=...)``: broker N runs in lab node ``bN``."""
    return lambda broker_id, data_dir, overrides: NetnsBroker(data_dir, lab, f"b{broker_id}", overrides=overrides)


def restart_all_stopped(cluster: Cluster) -> None:
    for b in cluster.brokers.values():
        if not b.alive():
            faults.restart(b)
