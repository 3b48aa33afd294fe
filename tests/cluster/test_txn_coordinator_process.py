"""The transaction coordinator in a cluster: three kbroker processes, one real ZooKeeper,
confluent-kafka transactional producers.  The coordinator is the leader of the id's
``__transaction_state`` partition (replication factor 3); its markers reach partitions led
by the other brokers over inter-broker WriteTxnMarkers; after a kill -9 of the coordinator
the new leader of the partition replays the replicated state and serves the id."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from kbroker.interbroker.broker_channel import send_once
from tests.cluster.test_cluster_processes import create_topic
from tests.support.broker_process import BrokerProcess
from tests.support.cluster_processes import SESSION_TIMEOUT_MS, Cluster, wait_until
from wire.error_codes import ErrorCode
from wire.messages import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ProduceRequest,
)
from wire.record_batch import build_batch

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("txn-cluster"), zookeeper,
                **{"transaction.state.log.num.partitions": "6"}).start()
    yield c
    c.stop()


def _txn_coordinator(cluster: Cluster, txn_id: str) -> int:
    for b in cluster.brokers.values():
        if not b.alive():
            continue
        req = FindCoordinatorRequest(key=txn_id, key_type=1)
        try:
            resp = asyncio.run(send_once("127.0.0.1", b.port, req, 3, "test"))
        except OSError:
            continue
        return resp.node_id if resp.error_code == 0 else -1
    return -1


def _read_committed(cluster: Cluster, topic: str, expected: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"rc-{topic}-{expected}",
                  "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got: list[bytes] = []

    def enough() -> bool:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
        return len(got) >= expected

    try:
        wait_until(enough, f"{expected} committed records of {topic}")
        # nothing more arrives (an aborted record would come after the committed ones)
        for _ in range(6):
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        c.close()
    return sorted(got)


def _producer(cluster: Cluster, txn_id: str) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(120)
    return p


def test_transactions_commit_and_abort_across_brokers_and_survive_a_kill_9_of_the_coordinator(cluster):
    create_topic(cluster, "txn-out", 3, assignment=[[1], [2], [3]])
    txn_id = "txn-cluster-1"
    p = _producer(cluster, txn_id)
    coordinator = _txn_coordinator(cluster, txn_id)
    assert coordinator in (1, 2, 3)
    for i, commit in enumerate([True, False, True]):
        p.begin_transaction()
        for part in range(3):
            p.produce("txn-out", f"{i}-{part}".encode(), partition=part)
        if commit:
            p.commit_transaction(120)
        else:
            p.abort_transaction(120)
    assert _read_committed(cluster, "txn-out", 6) == sorted(
        f"{i}-{part}".encode() for i in (0, 2) for part in range(3))

    # the coordinator dies; another replica of its __transaction_state partition takes over
    # with the replicated state: the next producer for the id fences the old one
    cluster.brokers[coordinator].kill()
    wait_until(lambda: _txn_coordinator(cluster, txn_id) not in (-1, coordinator), "a new coordinator")
    cluster.brokers[coordinator].start(timeout_s=120)
    cluster.wait_serving()
    p2 = _producer(cluster, txn_id)
    p2.begin_transaction()
    for part in range(3):
        p2.produce("txn-out", f"3-{part}".encode(), partition=part)
    p2.commit_transaction(120)
    p.begin_transaction()
    p.produce("txn-out", b"zombie", partition=0)
    with pytest.raises(KafkaException):
        p.commit_transaction(60)
    assert _read_committed(cluster, "txn-out", 9) == sorted(
        f"{i}-{part}".encode() for i in (0, 2, 3) for part in range(3))


def test_a_leader_verifies_a_transactional_write_with_the_coordinator_on_another_broker(cluster):
    """KIP-890 part 1 across brokers: the partition's leader asks the id's coordinator
    (AddPartitionsToTxn v4 verify_only) before appending a producer's first batch."""
    create_topic(cluster, "txn-verify", 3, assignment=[[1], [2], [3]])
    txn_id = "txn-verify-1"
    wait_until(lambda: _txn_coordinator(cluster, txn_id) > 0, "the id's coordinator")
    coordinator = _txn_coordinator(cluster, txn_id)
    leader = next(b for b in (1, 2, 3) if b != coordinator)
    part = leader - 1  # txn-verify-<n> is led by broker n + 1

    def call(broker: int, msg, version: int):
        return asyncio.run(send_once("127.0.0.1", cluster.brokers[broker].port, msg, version, "test"))

    init = call(coordinator, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000,
                                                    producer_id=-1, producer_epoch=-1), 4)
    assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch

    def produce(seq: int) -> int:
        batch = build_batch([(b"k", b"v", [], None)], producer_id=pid, producer_epoch=epoch,
                            base_sequence=seq, is_transactional=True)
        resp = call(leader, ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name="txn-verify", partition_data=[
                ProduceRequest.PartitionProduceData(index=part, records=batch)])]), 9)
        return resp.responses[0].partition_responses[0].error_code

    assert produce(0) == ErrorCode.INVALID_TXN_STATE
    added = call(coordinator, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="txn-verify", partitions=[part])]),
        3)
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    assert produce(0) == 0
    ended = call(coordinator, EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                            committed=False), 3)
    assert ended.error_code == 0


def test_a_lone_broker_refuses_to_create_the_transaction_state_topic_below_its_replication_factor(
        zookeeper, tmp_path):
    lone = BrokerProcess(tmp_path / "lone", overrides={
        "broker.id": "1", "zookeeper.connect": f"{zookeeper.connect_string}/lone-txn/cluster",
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})  # replication factor 3
    lone.start(timeout_s=120)
    try:
        req = FindCoordinatorRequest(key="tx", key_type=1)
        assert lone.alive(), lone.log_text()[-3000:]
        # until the controller's first UpdateMetadata the broker counts 0 alive brokers
        resp = wait_until(lambda: (r := asyncio.run(send_once("127.0.0.1", lone.port, req, 3, "test")))
                          and "'1'" in (r.error_message or "") and r, "the broker to count itself")
        assert (resp.error_code, resp.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
        assert resp.error_message == (
            "Number of alive brokers '1' does not meet the required replication factor '3' for the "
            "transactions state topic (configured via 'transaction.state.log.replication.factor'). "
            "This error can be ignored if the cluster is starting up and not all brokers are up yet.")
        assert not (tmp_path / "lone" / "__transaction_state-0").exists()
    finally:
        lone.kill()
