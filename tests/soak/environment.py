"""The soak's cluster: one ZooKeeper and three kbroker brokers, each in a network namespace of
its own when the machine allows it (tests/support/netns.py: root, ``ip``, ``iptables``), so
the nemesis can cut a broker off; on loopback otherwise (no partition fault then).

Every client the soak runs (tests/soak/workers.py) is a child process started with
``client_prefix()`` (``ip netns exec <client namespace>``), and every check the harness makes
itself (ZooKeeper reads, Metadata probes, topic creation) runs in that namespace too
(``run_in``), so the harness sees the cluster as the clients see it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import faults, netns
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.replication_harness import (
    REPLICATION_OVERRIDES,
    NetnsZooKeeper,
    netns_broker_factory,
    states,
)
from tests.support.zookeeper_process import JARS, ZooKeeperProcess
from wire.java_hash import partition_for

T = TypeVar("T")

IDEMPOTENT_TOPIC = "soak-idempotent"
TXN_TOPIC = "soak-txn"
PARTITIONS = 3
OFFSETS_TOPIC = "__consumer_offsets"
TXN_STATE_TOPIC = "__transaction_state"
# Few partitions for the internal topics: each is a coordinator to move and reload on every
# fault, and three Python brokers on two cores replicate fewer partitions faster; three still
# spread the group's and the transactional ids' coordinators over the brokers.
INTERNAL_PARTITIONS = 3

SOAK_OVERRIDES = {
    **REPLICATION_OVERRIDES,   # RF 3, min.insync.replicas=2, offsets topic RF 3, no unclean
    "offsets.topic.num.partitions": str(INTERNAL_PARTITIONS),
    "transaction.state.log.num.partitions": str(INTERNAL_PARTITIONS),
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    # a transactional producer killed mid-transaction leaves it open until its timeout: check
    # often, so the final read_committed pass does not wait long for the last stable offset
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}


def coordinator_partition(key: str, partitions: int = INTERNAL_PARTITIONS) -> int:
    """Kafka's partitionFor: the internal topic partition coordinating ``key``."""
    return partition_for(key, partitions)


class SoakCluster:
    """ZooKeeper + three brokers (+ the network lab); ``start()`` then ``stop()``."""

    def __init__(self, work: Path, *, use_netns: bool | None = None) -> None:
        self.work = Path(work)
        why_not = netns.available()
        self.use_netns = why_not is None if use_netns is None else use_netns
        if self.use_netns and why_not is not None:
            raise RuntimeError(f"network namespaces asked for but unavailable: {why_not}")
        self.no_netns_reason = None if self.use_netns else (why_not or "not asked for")
        self.lab: netns.NetworkLab | None = None
        self.zk: ZooKeeperProcess | None = None
        self.cluster: Cluster | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> SoakCluster:
        if not any(JARS.glob("zookeeper-*.jar")):
            raise RuntimeError("ZooKeeper jars missing: run `make zookeeper-jars`")
        self.work.mkdir(parents=True, exist_ok=True)
        try:
            if self.use_netns:
                self.lab = netns.NetworkLab(["zk", "b1", "b2", "b3", "client"]).start()
                self.zk = NetnsZooKeeper(self.work / "zookeeper", self.lab).start()
                lab = self.lab
                self.cluster = Cluster(self.work / "cluster", self.zk, make_broker=netns_broker_factory(lab),
                                       run_in=lambda fn: lab.run_in("client", fn), **SOAK_OVERRIDES)
            else:
                self.zk = ZooKeeperProcess(self.work / "zookeeper").start()
                self.cluster = Cluster(self.work / "cluster", self.zk, **SOAK_OVERRIDES)
            self.cluster.start()
            for topic in (IDEMPOTENT_TOPIC, TXN_TOPIC):
                self.create_topic(topic)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Thaw, heal and stop everything; each broker's whole output is kept beside its data
        (``broker-N.out``, what the log scan reads)."""
        if self.cluster is not None:
            for b in self.cluster.brokers.values():
                with contextlib.suppress(Exception):
                    faults.resume(b)
            with contextlib.suppress(Exception):
                self.cluster.stop()
        if self.zk is not None:
            with contextlib.suppress(Exception):
                self.zk.stop()
        if self.lab is not None:
            self.lab.close()

    def __enter__(self) -> SoakCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- where clients live ----------------------------------------------------------------

    @property
    def c(self) -> Cluster:
        assert self.cluster is not None, "not started"
        return self.cluster

    def client_prefix(self) -> list[str]:
        """Prepended to a client's command line: the client namespace, or nothing."""
        return self.lab.exec_prefix("client") if self.lab is not None else []

    def run_in(self, fn: Callable[[], T]) -> T:
        return self.c.run_in(fn)  # type: ignore[return-value]

    @property
    def bootstrap(self) -> str:
        """Every broker's address, live or not: a client started while one is down still
        finds it once it is back."""
        return ",".join(b.bootstrap for b in self.c.brokers.values())

    def broker_output_files(self) -> dict[int, Path]:
        """Write each broker's output so far (every start of it) to ``broker-N.out``."""
        files = {}
        for broker_id, b in self.c.brokers.items():
            path = self.c.root / f"broker-{broker_id}.out"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(b.log_text())
            files[broker_id] = path
        return files

    # -- topics and health -----------------------------------------------------------------

    def create_topic(self, topic: str) -> None:
        def create() -> None:
            client = AdminClient({"bootstrap.servers": self.bootstrap})
            wait_until(lambda: client.list_topics(timeout=10).controller_id >= 0, "the brokers to know the controller")
            nt = NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})
            for f in client.create_topics([nt], request_timeout=60, operation_timeout=60).values():
                f.result(90)

        self.run_in(create)
        wait_until(lambda: self.run_in(lambda: self.c.admin.exists(
            f"/brokers/topics/{topic}/partitions/{PARTITIONS - 1}/state")), f"{topic}'s partition states")

    def topics(self) -> dict[str, int]:
        """The soak's topics and the internal ones that exist so far, with their partition counts."""
        found = {IDEMPOTENT_TOPIC: PARTITIONS, TXN_TOPIC: PARTITIONS}
        for internal in (OFFSETS_TOPIC, TXN_STATE_TOPIC):
            if self.run_in(lambda t=internal: self.c.admin.exists(
                    f"/brokers/topics/{t}/partitions/{INTERNAL_PARTITIONS - 1}/state")):
                found[internal] = INTERNAL_PARTITIONS
        return found

    def partition_states(self) -> dict[tuple[str, int], dict[str, Any]]:
        out = {}
        for topic, n in self.topics().items():
            for p, s in self.run_in(lambda t=topic, n=n: states(self.c, t, n)).items():
                out[(topic, p)] = s
        return out

    def coordinator(self, internal_topic: str, key: str) -> int:
        """The broker leading the internal partition that coordinates ``key`` (-1: none)."""
        p = coordinator_partition(key)
        return self.partition_states().get((internal_topic, p), {}).get("leader", -1)

    def registered(self) -> set[int]:
        return self.run_in(self.c.registered)

    def healthy(self) -> bool:
        """Every broker alive and registered, every partition (internal ones included) led
        by a live broker with all three replicas in its ISR."""
        if not all(b.alive() for b in self.c.brokers.values()):
            return False
        if self.registered() != set(self.c.brokers):
            return False
        return all(s["leader"] in self.c.brokers and len(s["isr"]) == len(self.c.brokers)
                   for s in self.partition_states().values())

    def wait_healthy(self, timeout_s: float) -> None:
        last: dict[str, Any] = {}

        def check() -> bool:
            ok = self.healthy()
            if not ok:
                last["states"] = {f"{t}-{p}": (s["leader"], s["isr"])
                                  for (t, p), s in self.partition_states().items()
                                  if len(s["isr"]) < len(self.c.brokers)}
                last["registered"] = sorted(self.registered())
            return ok

        try:
            wait_until(check, "the cluster back to full health", timeout_s)
        except AssertionError as e:
            raise AssertionError(f"{e}; {last}") from None

    def led_by(self, broker_id: int) -> dict[tuple[str, int], int]:
        """(topic, partition) -> leader epoch of each partition ``broker_id`` leads now."""
        return {tp: s["leader_epoch"] for tp, s in self.partition_states().items() if s["leader"] == broker_id}

    def wait_leadership_moved(self, broker_id: int, before: dict[tuple[str, int], int], timeout_s: float) -> None:
        """Each partition ``broker_id`` led (``before``) has a new leader with a higher epoch."""
        def moved() -> bool:
            now = self.partition_states()
            return all(now[tp]["leader"] != broker_id and now[tp]["leader"] >= 0 and now[tp]["leader_epoch"] > e
                       for tp, e in before.items() if tp in now)

        wait_until(moved, f"the partitions broker {broker_id} led to get other leaders", timeout_s)

    def wait_unregistered(self, broker_id: int, timeout_s: float) -> None:
        wait_until(lambda: broker_id not in self.registered(), f"broker {broker_id}'s session to end", timeout_s)

    def wait_registered(self, broker_ids: set[int], timeout_s: float) -> None:
        wait_until(lambda: broker_ids <= self.registered(), f"brokers {sorted(broker_ids)} registered", timeout_s)
