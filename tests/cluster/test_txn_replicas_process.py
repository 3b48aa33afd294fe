"""Transactions on replicated partitions: three kbroker processes, one real ZooKeeper,
confluent-kafka.  Followers append the leader's markers with origin REPLICATION and track
transactions as the leader does: their .txnindex files become byte-identical to the
leader's, and after a kill -9 of the leader the new leader has the same last stable offset
(an open transaction still holds it) and serves read_committed the same records."""

from __future__ import annotations

import glob
import os

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.cluster.test_cluster_processes import create_topic, leaders
from tests.support.cluster_processes import Cluster, wait_until

pytestmark = pytest.mark.timeout(900)
TOPIC = "txn-rep"


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("txn-replicas"), zookeeper,
                **{"transaction.state.log.num.partitions": "3"}).start()
    yield c
    c.stop()


def _txnindex(cluster: Cluster, broker: int) -> dict[str, bytes]:
    out = {}
    for path in sorted(glob.glob(os.path.join(str(cluster.brokers[broker].data_dir), f"{TOPIC}-0", "*.txnindex"))):
        with open(path, "rb") as f:
            out[os.path.basename(path)] = f.read()
    return out


def _read_committed(cluster: Cluster, expected: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"rc-{expected}", "isolation.level":
                  "read_committed", "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got: list[bytes] = []
    at_end = [False]

    def done() -> bool:
        m = c.poll(0.5)
        if m is not None:
            if not m.error():
                got.append(m.value())
            elif m.error().code() == KafkaError._PARTITION_EOF:
                at_end[0] = True
        return len(got) >= expected and at_end[0]

    try:
        wait_until(done, f"{expected} committed records of {TOPIC}")
    finally:
        c.close()
    return got


def _lso(cluster: Cluster) -> int:
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "lso", "isolation.level": "read_committed"})
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)[1]
    finally:
        c.close()


def test_followers_track_transactions_and_a_new_leader_has_the_same_lso_and_txnindex(cluster):
    create_topic(cluster, TOPIC, 1, assignment=[[1, 2, 3]])
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "rep-1", "acks": "all",
                  "transaction.timeout.ms": 600000})
    p.init_transactions(120)
    committed = []
    for i, commit in enumerate([True, False, True, False, True]):
        p.begin_transaction()
        values = [f"{i}-{j}".encode() for j in range(4)]
        for v in values:
            p.produce(TOPIC, v, partition=0)
        p.flush(120)
        if commit:
            p.commit_transaction(120)
            committed += values
        else:
            p.abort_transaction(120)
    p.begin_transaction()
    p.produce(TOPIC, b"open", partition=0)
    p.flush(120)

    assert _read_committed(cluster, len(committed)) == committed
    lso = _lso(cluster)
    assert lso == 4 * 5 + 5   # 20 records and 5 markers below the open transaction
    leader_index = _txnindex(cluster, 1)
    assert len(leader_index["00000000000000000000.txnindex"]) == 2 * 34   # two aborts
    wait_until(lambda: _txnindex(cluster, 2) == leader_index and _txnindex(cluster, 3) == leader_index,
               "the followers' .txnindex equal to the leader's")

    cluster.brokers[1].kill()
    wait_until(lambda: leaders(cluster, TOPIC).get(0, -1) in (2, 3), "a new leader of txn-rep-0")
    assert _lso(cluster) == lso   # the open transaction still holds it on the new leader
    assert _read_committed(cluster, len(committed)) == committed

    p.commit_transaction(120)   # the coordinator may have moved too: the client retries
    assert _read_committed(cluster, len(committed) + 1) == committed + [b"open"]
