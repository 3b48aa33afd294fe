"""Exactly once on a 3-broker cluster (real ZooKeeper) while the transaction coordinator's
broker is killed: the confluent-kafka consume-transform-produce worker
(tests/compat/eos_worker.py) runs over 100,000 records; twice the broker leading the
transactional id's ``__transaction_state`` partition (found with FindCoordinator key type 1)
is killed with SIGKILL and restarted, so the coordinator moves to another broker, which
loads the transaction state and completes or aborts what was in flight.  The output read
with read_committed is the input, each record once, in order.

Internal topics and data topics have replication factor 3 and min.insync.replicas 2, so a
transaction's markers and offsets survive the loss of a leader."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.broker_channel import send_once
from tests.cluster.cluster_processes import Cluster, wait_until
from tests.compat.eos_run import EosWorker, check_exactly_once, produce_input
from wire.messages import FindCoordinatorRequest

pytestmark = pytest.mark.timeout(1800)

N = 100_000
PARTITIONS = 4
TXN_ID = "eos-cluster-txn"


def txn_coordinator(cluster: Cluster) -> int:
    """The node FindCoordinator (key type 1) names for TXN_ID, asked of a live broker."""
    for b in cluster.brokers.values():
        if not b.alive():
            continue
        host, port = b.bootstrap.rsplit(":", 1)
        resp = asyncio.run(send_once(host, int(port), FindCoordinatorRequest(
            key=TXN_ID, key_type=1), 3, "txn-test"))
        if resp.error_code == 0:
            return resp.node_id
    return -1


def test_exactly_once_while_the_transaction_coordinators_broker_is_killed(zookeeper, tmp_path):
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
        worker = EosWorker(cluster.bootstrap, "eos-in", "eos-out", PARTITIONS,
                           txn_id=TXN_ID).start()
        for fraction in (0.3, 0.6):
            seen = worker.wait_progress(int(N * fraction), timeout_s=600)
            assert seen >= N * fraction, worker.output_tail()
            victim = wait_until(lambda: txn_coordinator(cluster) > 0, "a transaction coordinator")
            cluster.brokers[victim].kill()
            # another broker takes the __transaction_state partition over
            moved = wait_until(lambda v=victim: (c := txn_coordinator(cluster)) > 0 and c != v and c,
                               "the transaction coordinator to move", timeout_s=120)
            assert moved != victim
            cluster.brokers[victim].start()
            cluster.wait_serving()
        assert worker.wait_progress(N, timeout_s=900) == N, worker.output_tail()
        assert worker.stop() == 0, worker.output_tail()
        worker = None
        check_exactly_once(cluster.bootstrap, "eos-in", "eos-out", PARTITIONS, N)
    finally:
        if worker is not None:
            worker.stop()
        cluster.stop()
