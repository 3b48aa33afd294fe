"""The transaction coordinator served by an embedded broker, over TCP with the wire codec:
FindCoordinator key type 1, InitProducerId with a transactional id, AddPartitionsToTxn,
EndTxn with markers written through the broker's own WriteTxnMarkers, KIP-890 produce
verification, Describe/ListTransactions, the timeout abort, and the state kept across a
restart.  (Stock-client transaction tests live in tests/compat.)"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kbroker import Broker
from tests.support.wire_client import WireClient
from wire.error_codes import ErrorCode as E
from wire.messages import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    ProduceRequest,
    ProduceResponse,
)
from wire.record_batch import build_batch

DEADLINE_S = 60


class Client(WireClient):
    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap, "txn-test")

    # ------------------------------------------------------------ the APIs
    def init(self, txn_id: str, timeout_ms: int = 60000, version: int = 4,
             pid: int = -1, epoch: int = -1) -> InitProducerIdResponse:
        return self.call(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout_ms,
                                               producer_id=pid, producer_epoch=epoch),
                         version, InitProducerIdResponse)

    def add(self, txn_id: str, pid: int, epoch: int, topic: str, *parts: int) -> list[int]:
        resp = self.call(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=list(parts))]),
            3, AddPartitionsToTxnResponse)
        return [p.partition_error_code for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition]

    def end(self, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
        return self.call(EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                       committed=commit), version, EndTxnResponse).error_code

    def produce(self, txn_id: str, pid: int, epoch: int, seq: int, topic: str, part: int) -> int:
        batch = build_batch([(b"k", b"v", [], None)], producer_id=pid, producer_epoch=epoch,
                            base_sequence=seq, is_transactional=True)
        resp = self.call(ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.PartitionProduceData(index=part, records=batch)])]), 9, ProduceResponse)
        return resp.responses[0].partition_responses[0].error_code

    def describe(self, txn_id: str) -> Any:
        return self.call(DescribeTransactionsRequest(transactional_ids=[txn_id]), 0,
                         DescribeTransactionsResponse).transaction_states[0]

    def wait_state(self, txn_id: str, state: str) -> Any:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            d = self.describe(txn_id)
            if d.transaction_state == state or time.monotonic() > deadline:
                assert d.transaction_state == state
                return d
            time.sleep(0.05)

    def last_stable_offset(self, topic: str, part: int) -> int:
        """ListOffsets latest with isolation level 1 (read_committed): the LSO."""
        resp = self.call(ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=part, timestamp=-1)])]),
            5, ListOffsetsResponse)
        return resp.topics[0].partitions[0].offset

    def create_topic(self, name: str, partitions: int) -> None:
        resp = self.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1)], timeout_ms=30000),
            4, CreateTopicsResponse)
        assert resp.topics[0].error_code == 0


@pytest.fixture
def broker(tmp_path):
    started = []

    def start(**overrides: str) -> tuple[Any, Client]:
        b = Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path), **overrides})
        c = Client(b.bootstrap_servers)
        started.append((b, c))
        return b, c

    yield start
    for b, c in started:
        c.close()
        b.stop()


def test_find_coordinator_key_type_1_names_this_broker_and_creates_the_state_topic(broker, tmp_path):
    b, c = broker()
    resp = c.call(FindCoordinatorRequest(key="tx", key_type=1), 3, FindCoordinatorResponse)
    assert (resp.error_code, resp.node_id, f"{resp.host}:{resp.port}") == (0, 1, b.bootstrap_servers)
    resp = c.call(FindCoordinatorRequest(key_type=1, coordinator_keys=["a", ""]), 4, FindCoordinatorResponse)
    assert [(x.key, x.error_code, x.node_id) for x in resp.coordinators] == [
        ("a", 0, 1), ("", E.INVALID_REQUEST, -1)]
    dirs = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("__transaction_state-"))
    assert len(dirs) == 50


def test_a_transaction_commits_through_markers_and_the_next_init_fences_the_old_epoch(broker):
    _, c = broker()
    c.create_topic("t", 2)
    r = c.init("tx")
    assert (r.error_code, r.producer_epoch) == (0, 0)
    pid = r.producer_id
    assert c.add("tx", pid, 0, "t", 0, 1) == [0, 0]
    assert c.add("tx", pid, 0, "nope", 0) == [E.UNKNOWN_TOPIC_OR_PARTITION]
    assert c.produce("tx", pid, 0, 0, "t", 0) == 0
    d = c.describe("tx")
    assert (d.transaction_state, [(t.topic, t.partitions) for t in d.topics]) == ("Ongoing", [("t", [0, 1])])
    assert c.end("tx", pid, 0, True) == 0
    d = c.wait_state("tx", "CompleteCommit")
    assert (d.producer_id, d.producer_epoch, d.topics) == (pid, 0, [])
    r = c.init("tx")
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, pid, 1)
    assert c.end("tx", pid, 0, True, version=3) == E.PRODUCER_FENCED
    assert c.end("tx", pid, 0, True, version=1) == E.INVALID_PRODUCER_EPOCH  # older clients


def test_a_transactional_write_to_a_partition_not_in_the_transaction_is_refused(broker):
    _, c = broker()
    c.create_topic("t", 2)
    pid = c.init("tx").producer_id
    assert c.add("tx", pid, 0, "t", 0) == [0]
    assert c.produce("tx", pid, 0, 0, "t", 1) == E.INVALID_TXN_STATE   # KIP-890 part 1
    assert c.produce("tx", pid, 0, 0, "t", 0) == 0


def test_verification_can_be_turned_off(broker):
    _, c = broker(**{"transaction.partition.verification.enable": "false"})
    c.create_topic("t", 2)
    pid = c.init("tx").producer_id
    assert c.produce("tx", pid, 0, 0, "t", 1) == 0


def test_init_producer_id_refuses_a_timeout_above_the_maximum(broker):
    _, c = broker(**{"transaction.max.timeout.ms": "1000"})
    assert c.init("tx", timeout_ms=1001).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert c.init("tx", timeout_ms=1000).error_code == 0


def test_a_transaction_left_open_past_its_timeout_is_aborted_and_its_producer_fenced(broker):
    _, c = broker(**{"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"})
    c.create_topic("t", 1)
    pid = c.init("tx", timeout_ms=1000).producer_id
    assert c.add("tx", pid, 0, "t", 0) == [0]
    assert c.produce("tx", pid, 0, 0, "t", 0) == 0
    assert c.last_stable_offset("t", 0) == 0   # the open transaction holds the LSO
    d = c.wait_state("tx", "CompleteAbort")
    assert (d.producer_id, d.producer_epoch) == (pid, 1)
    assert c.end("tx", pid, 0, True) == E.PRODUCER_FENCED
    assert c.last_stable_offset("t", 0) == 2   # the record and its ABORT marker


def test_list_transactions_filters_by_state_and_reports_unknown_filters(broker):
    _, c = broker()
    c.create_topic("t", 1)
    pid = c.init("a").producer_id
    c.init("b")
    c.add("a", pid, 0, "t", 0)
    resp = c.call(ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 1, ListTransactionsResponse)
    assert sorted((x.transactional_id, x.transaction_state) for x in resp.transaction_states) == [
        ("a", "Ongoing"), ("b", "Empty")]
    resp = c.call(ListTransactionsRequest(state_filters=["Ongoing", "Bogus"], producer_id_filters=[]), 1,
                  ListTransactionsResponse)
    assert ([x.transactional_id for x in resp.transaction_states], resp.unknown_state_filters) == (["a"], ["Bogus"])
    assert c.describe("zzz").error_code == E.TRANSACTIONAL_ID_NOT_FOUND


def test_the_transaction_state_survives_a_restart(broker):
    b, c = broker()
    c.create_topic("t", 1)
    pid = c.init("tx").producer_id
    assert c.add("tx", pid, 0, "t", 0) == [0]
    c.close()
    b.stop()
    _, c = broker()
    d = c.describe("tx")
    assert (d.transaction_state, d.producer_id, d.producer_epoch) == ("Ongoing", pid, 0)
    # a new producer for the id aborts the open transaction first, then gets a new epoch
    deadline = time.monotonic() + DEADLINE_S
    while (r := c.init("tx")).error_code == E.CONCURRENT_TRANSACTIONS and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, pid, 2)


def test_api_versions_advertises_transaction_version_1_ranges_only(broker):
    """TV1: no InitProducerId v5 / EndTxn v4-5 / AddPartitionsToTxn v4-5 (v4 is for brokers),
    no transaction.version feature, so every client keeps to what is served."""
    _, c = broker()
    resp = c.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                  ApiVersionsResponse)
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert {k: keys.get(k) for k in (22, 24, 25, 26, 65, 66)} == {
        22: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 65: (0, 0), 66: (0, 1)}
    assert "transaction.version" not in {f.name for f in resp.finalized_features}
