"""Exactly once on a 3-broker cluster (real ZooKeeper) while the transaction coordinator's
broker is killed: the confluent-kafka consume-transform-produce worker
(tests/support/eos_worker.py) runs over 100,000 records; first the broker leading the
transactional id's ``__transaction_state`` partition (FindCoordinator key type 1), then the
one leading the group's ``__consumer_offsets`` partition (key type 0) is killed with
SIGKILL and restarted, so each coordinator moves to another broker, which loads the
transaction state (and completes or aborts what was in flight) or the group's offsets
(replaying the transactional offset commits and their markers from its replica).  The
output read with read_committed is the input, each record once, in order; the worker starts
over only after a kill (never for a fatal error) and no librdkafka call of it hangs.

Internal topics and data topics have replication factor 3 and min.insync.replicas 2, so a
transaction's markers and offsets survive the loss of a leader."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.interbroker.broker_channel import send_once
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.eos_run import EosWorker, check_exactly_once, produce_input
from wire.messages import FindCoordinatorRequest

pytestmark = pytest.mark.timeout(1800)

N = 100_000
PARTITIONS = 4
TXN_ID = "eos-cluster-txn"
GROUP = "eos"
KEYS = {1: TXN_ID, 0: GROUP}   # FindCoordinator key type -> key


def coordinator(cluster: Cluster, key_type: int) -> int:
    """The node FindCoordinator names for KEYS[key_type], asked of a live broker."""
    for b in cluster.brokers.values():
        if not b.alive():
            continue
        host, port = b.bootstrap.rsplit(":", 1)
        resp = asyncio.run(send_once(host, int(port), FindCoordinatorRequest(
            key=KEYS[key_type], key_type=key_type), 3, "txn-test"))
        if resp.error_code == 0:
            return resp.node_id
    return -1


def test_exactly_once_while_the_transaction_and_group_coordinators_brokers_are_killed(zookeeper, tmp_path):
    cluster = Cluster(tmp_path, zookeeper, **{
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "default.replication.factor": "3",
        "replica.lag.time.max.ms": "5000",
    }).start()
    worker = None
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for f in admin.create_topics([NewTopic(t, PARTITIONS, 3, config={"min.insync.replicas": "2"})
                                      for t in ("eos-in", "eos-out")],
                                     request_timeout=60, operation_timeout=60).values():
            f.result(60)
        produce_input(cluster.bootstrap, "eos-in", N, PARTITIONS)
        worker = EosWorker(cluster.bootstrap, "eos-in", "eos-out", PARTITIONS, group=GROUP,
                           txn_id=TXN_ID).start()
        for fraction, key_type in ((0.3, 1), (0.6, 0)):
            seen = worker.wait_progress(int(N * fraction), timeout_s=600)
            assert seen >= N * fraction, worker.describe()
            # the node itself (a bare ``> 0`` made the victim ``True``, i.e. broker 1, always)
            victim = wait_until(lambda k=key_type: (c := coordinator(cluster, k)) > 0 and c, "a coordinator")
            assert victim in cluster.brokers and victim is not True
            with worker.injected_kill(f"broker {victim} (coordinator key type {key_type})"):
                cluster.brokers[victim].kill()
                # another broker takes the coordinator's internal partition over
                moved = wait_until(lambda v=victim, k=key_type: (c := coordinator(cluster, k)) > 0
                                   and c != v and c, "the coordinator to move", timeout_s=120)
                assert moved != victim
                cluster.brokers[victim].start()
                cluster.wait_serving()
        assert worker.wait_progress(N, timeout_s=900) == N, worker.describe()
        assert worker.stop() == 0, worker.describe()
        check_exactly_once(cluster.bootstrap, "eos-in", "eos-out", PARTITIONS, N)
        # the output can be right while the transactions were not: a broker that failed the
        # worker's transactions (fatally or not) outside the kills made it start over
        # a librdkafka call stuck while its broker is killed (#5511) is explained by that kill
        assert worker.unexplained_hangs() == [], worker.describe()
        assert worker.unexplained_restarts() == [], worker.describe()
        worker = None
    finally:
        if worker is not None:
            worker.stop()
        cluster.stop()
