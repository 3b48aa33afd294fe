"""TxnOffsetCommit (28) and DescribeProducers (61) on an embedded broker over TCP with the
wire codec: transactional offsets stay pending (OffsetFetch require_stable answers
UNSTABLE_OFFSET_COMMIT) until a WriteTxnMarkers COMMIT reaches the group's
``__consumer_offsets`` partition; DescribeProducers lists a partition's producers with
their open transaction, and answers Kafka's errors for bad, unknown and missing ones.
KIP-890 verification is off, so the transactions need no coordinator."""

from __future__ import annotations

from typing import Any

import pytest

from groups import partition_for
from kbroker import Broker
from tests.support.wire_client import WireClient
from wire.error_codes import ErrorCode as E
from wire.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DescribeProducersRequest,
    DescribeProducersResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    ProduceRequest,
    ProduceResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from wire.record_batch import build_batch

PID = 5151
GROUP = "txn-group"


class Client(WireClient):
    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap, "txn-offsets-test")

    def marker(self, commit: bool, topic: str, partition: int, coordinator_epoch: int = 3) -> int:
        resp = self.call(WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=PID, producer_epoch=0, transaction_result=commit,
            coordinator_epoch=coordinator_epoch, topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(
                name=topic, partition_indexes=[partition])])]), 1, WriteTxnMarkersResponse)
        return resp.markers[0].topics[0].partitions[0].error_code

    def fetch_offsets(self, stable: bool) -> dict[int, tuple[int, int]]:
        resp = self.call(OffsetFetchRequest(group_id=GROUP, require_stable=stable, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])]),
            7, OffsetFetchResponse)
        return {p.partition_index: (p.committed_offset, p.error_code)
                for t in resp.topics for p in t.partitions}

    def describe(self, topics: dict[str, list[int]]) -> dict[tuple[str, int], Any]:
        resp = self.call(DescribeProducersRequest(topics=[
            DescribeProducersRequest.TopicRequest(name=n, partition_indexes=ps)
            for n, ps in topics.items()]), 0, DescribeProducersResponse)
        return {(t.name, p.partition_index): p for t in resp.topics for p in t.partitions}


@pytest.fixture
def client(tmp_path):
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                       "transaction.partition.verification.enable": "false"}) as b:
        c = Client(b.bootstrap_servers)
        resp = c.call(CreateTopicsRequest(timeout_ms=30000, topics=[CreateTopicsRequest.CreatableTopic(
            name="t", num_partitions=2, replication_factor=1)]), 5, CreateTopicsResponse)
        assert resp.topics[0].error_code == E.NONE
        # FindCoordinator creates __consumer_offsets, as for a client
        found = c.call(FindCoordinatorRequest(key=GROUP, key_type=0), 3, FindCoordinatorResponse)
        assert found.error_code == E.NONE
        yield c
        c.close()


def test_transactional_offsets_become_committed_with_the_commit_marker(client):
    resp = client.call(TxnOffsetCommitRequest(
        transactional_id="tx", group_id=GROUP, producer_id=PID, producer_epoch=0, topics=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="t", partitions=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                    partition_index=i, committed_offset=40 + i, committed_metadata="m")
                for i in (0, 9)])]), 3, TxnOffsetCommitResponse)
    assert {p.partition_index: p.error_code for t in resp.topics for p in t.partitions} == {
        0: E.NONE, 9: E.UNKNOWN_TOPIC_OR_PARTITION}
    assert client.fetch_offsets(stable=False) == {0: (-1, 0), 1: (-1, 0)}
    assert client.fetch_offsets(stable=True) == {0: (-1, E.UNSTABLE_OFFSET_COMMIT), 1: (-1, 0)}
    assert client.marker(True, "__consumer_offsets", partition_for(GROUP, 50)) == E.NONE
    assert client.fetch_offsets(stable=True) == {0: (40, 0), 1: (-1, 0)}


def test_an_abort_marker_drops_the_transactional_offsets(client):
    client.call(TxnOffsetCommitRequest(
        transactional_id="tx", group_id=GROUP, producer_id=PID, producer_epoch=0, topics=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="t", partitions=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                    partition_index=1, committed_offset=7, committed_metadata=None)])]),
        0, TxnOffsetCommitResponse)
    assert client.marker(False, "__consumer_offsets", partition_for(GROUP, 50)) == E.NONE
    assert client.fetch_offsets(stable=True) == {0: (-1, 0), 1: (-1, 0)}


def test_describe_producers_lists_the_producer_and_its_open_transaction(client):
    records = build_batch([(b"k", b"v%d" % i, None, None) for i in range(3)], producer_id=PID,
                          producer_epoch=0, base_sequence=0, is_transactional=True)
    resp = client.call(ProduceRequest(transactional_id="tx", acks=-1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=records)])]), 9, ProduceResponse)
    assert resp.responses[0].partition_responses[0].error_code == E.NONE
    got = client.describe({"t": [0, 1, 5], "no-such-topic": [0], "bad name": [0]})
    (p0,) = got[("t", 0)].active_producers
    assert (p0.producer_id, p0.producer_epoch, p0.last_sequence, p0.coordinator_epoch,
            p0.current_txn_start_offset) == (PID, 0, 2, -1, 0)
    assert p0.last_timestamp > 0
    assert got[("t", 1)].error_code == E.NONE and got[("t", 1)].active_producers == []
    assert got[("t", 5)].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert got[("no-such-topic", 0)].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert got[("bad name", 0)].error_code == E.INVALID_TOPIC_EXCEPTION
    assert got[("bad name", 0)].error_message == ('Topic name "bad name" is illegal, it contains a '
                                                  "character other than ASCII alphanumerics, '.', "
                                                  "'_' and '-'")
    # the marker ends the transaction and records its coordinator epoch
    assert client.marker(True, "t", 0, coordinator_epoch=3) == E.NONE
    (p0,) = client.describe({"t": [0]})[("t", 0)].active_producers
    assert (p0.coordinator_epoch, p0.current_txn_start_offset) == (3, -1)
