"""A network partition (tests/support/netns.py): ZooKeeper, the three brokers and the load
client each run in their own network namespace, joined by a bridge in a hub namespace.  A
partition leader is cut off from ZooKeeper and from the other brokers (iptables DROP inside
its namespace; the client can still reach it, so it is a zombie that clients keep talking
to), the cluster fails over, the cut is healed, and the old leader rejoins as a follower.
The checkers then find no acknowledged record lost, none duplicated or misplaced, and every
replica byte-identical below the high watermark."""

from __future__ import annotations

import pytest

from tests.support import netns
from tests.support.cluster_processes import Cluster
from tests.support.load_client import LoadProcess
from tests.support.replication_harness import (
    REPLICATION_OVERRIDES,
    NetnsZooKeeper,
    create_topic,
    netns_broker_factory,
    partition_state,
    verify,
    wait_for_acks,
    wait_for_full_isr,
    wait_for_leader,
    wait_until_registered,
    wait_until_unregistered,
)
from tests.support.zookeeper_process import JARS

pytestmark = [pytest.mark.timeout(420),
              *netns.pytest_marks()]


@pytest.fixture
def lab_cluster(tmp_path):
    if not any(JARS.glob("zookeeper-*.jar")):
        pytest.fail("ZooKeeper jars missing: run `make zookeeper-jars` (make test does)")
    lab = netns.NetworkLab(["zk", "b1", "b2", "b3", "client"]).start()
    zk = cluster = None
    try:
        zk = NetnsZooKeeper(tmp_path / "zookeeper", lab).start()
        cluster = Cluster(tmp_path / "cluster", zk, make_broker=netns_broker_factory(lab),
                          run_in=lambda fn: lab.run_in("client", fn), **REPLICATION_OVERRIDES)
        cluster.start()
        yield lab, cluster
    finally:
        if cluster is not None:
            cluster.stop()
        if zk is not None:
            zk.stop()
        lab.close()


def test_a_leader_cut_off_from_zookeeper_and_its_peers_is_replaced_and_rejoins_after_the_heal(lab_cluster,
                                                                                          tmp_path):
    lab, cluster = lab_cluster
    topic, partitions = "partitioned", 3
    in_client = lambda fn: lab.run_in("client", fn)  # noqa: E731
    create_topic(cluster, topic, partitions, in_client_ns=in_client)
    for b in cluster.brokers.values():  # every server listens inside its own namespace
        assert b.bootstrap.startswith(netns.SUBNET + ".")

    load = LoadProcess(tmp_path / "load.jsonl", cluster.bootstrap, topic, partitions,
                       netns=lab.ns("client")).start()
    try:
        wait_for_acks(load, 200, "the load to get going")
        before = partition_state(cluster, topic, 0)
        cut = before["leader"]
        lab.cut(f"b{cut}", ["zk", *[f"b{b}" for b in cluster.brokers if b != cut]])
        wait_until_unregistered(cluster, cut)
        after = wait_for_leader(cluster, topic, 0, not_on=cut, above_epoch=before["leader_epoch"])
        assert cut not in after["isr"]
        wait_for_acks(load, load.acked() + 100, "acks from the new leaders during the partition")

        lab.heal(f"b{cut}")
        wait_until_registered(cluster, cut)
        wait_for_full_isr(cluster, topic, partitions)
        wait_for_acks(load, load.acked() + 100, "acks after the heal")
        done = load.stop()
    finally:
        load.kill()
    failed = [e for e in load.errors() if e["t"] == "err" or e.get("fatal")]
    assert done["failed"] == 0 and not failed, failed[:10]
    verify(cluster, topic, partitions, [load.out], tmp_path, netns=lab.ns("client"))
