"""WriteTxnMarkers (27) on the partition leader, and what read_committed Fetch / ListOffsets
answer around it, through an embedded broker over TCP with the wire codec.  Transactional
batches are produced directly (KIP-890 verification off), so the markers come from the
test, not from the coordinator."""

from __future__ import annotations

import pytest

from kbroker import Broker
from tests.support.wire_client import WireClient
from wire.error_codes import ErrorCode as E
from wire.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ProduceRequest,
    ProduceResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from wire.record_batch import build_batch, iter_batches

PID = 4242


class Client(WireClient):
    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap, "markers-test")

    def produce_txn(self, topic: str, partition: int, seq: int, values: list[bytes], epoch: int = 0) -> int:
        records = build_batch([(b"k", v, None, None) for v in values], producer_id=PID, producer_epoch=epoch,
                              base_sequence=seq, is_transactional=True)
        resp = self.call(ProduceRequest(transactional_id="tx", acks=-1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.PartitionProduceData(index=partition, records=records)])]), 9, ProduceResponse)
        p = resp.responses[0].partition_responses[0]
        assert p.error_code == E.NONE, p
        return p.base_offset

    def markers(self, commit: bool, parts: dict[str, list[int]], epoch: int = 0, coordinator_epoch: int = 0,
                version: int = 1) -> dict[tuple[str, int], int]:
        resp = self.call(WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=PID, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator_epoch,
            topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                    for t, ps in parts.items()])]), version, WriteTxnMarkersResponse)
        (m,) = resp.markers
        assert m.producer_id == PID
        return {(t.name, p.partition_index): p.error_code for t in m.topics for p in t.partitions}

    def fetch(self, topic: str, partition: int, isolation: int) -> FetchResponse.PartitionData:
        resp = self.call(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                                      isolation_level=isolation, topics=[FetchRequest.FetchTopic(
                                          topic=topic, partitions=[FetchRequest.FetchPartition(
                                              partition=partition, fetch_offset=0, partition_max_bytes=1 << 20)])]),
                         11, FetchResponse)
        return resp.responses[0].partitions[0]

    def latest(self, topic: str, partition: int, isolation: int) -> int:
        resp = self.call(ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=-1)])]),
            5, ListOffsetsResponse)
        p = resp.topics[0].partitions[0]
        assert p.error_code == E.NONE
        return p.offset


@pytest.fixture
def client(tmp_path):
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                       "transaction.partition.verification.enable": "false"}) as b:
        c = Client(b.bootstrap_servers)
        resp = c.call(CreateTopicsRequest(timeout_ms=30000, topics=[CreateTopicsRequest.CreatableTopic(
            name="t", num_partitions=2, replication_factor=1)]), 5, CreateTopicsResponse)
        assert resp.topics[0].error_code == E.NONE
        yield c
        c.close()


@pytest.mark.parametrize("version", [0, 1])
def test_an_abort_marker_hides_the_transaction_from_read_committed_and_names_it_aborted(client, version):
    first = client.produce_txn("t", 0, 0, [b"a", b"b"])
    assert client.fetch("t", 0, 1).last_stable_offset == first
    assert client.latest("t", 0, 1) == first and client.latest("t", 0, 0) == first + 2
    codes = client.markers(False, {"t": [0, 7], "nope": [0]}, version=version)
    assert codes == {("t", 0): E.NONE, ("t", 7): E.UNKNOWN_TOPIC_OR_PARTITION,
                     ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    committed = client.fetch("t", 0, 1)
    assert committed.last_stable_offset == committed.high_watermark == first + 3
    assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [(PID, first)]
    batches = list(iter_batches(bytes(committed.records)))
    assert [b.is_control for b in batches] == [False, True]
    assert client.fetch("t", 0, 0).aborted_transactions is None
    assert client.latest("t", 0, 1) == first + 3


def test_a_commit_marker_moves_the_lso_and_lists_no_aborted_transaction(client):
    client.produce_txn("t", 1, 0, [b"x"])
    assert client.markers(True, {"t": [1]}) == {("t", 1): E.NONE}
    p = client.fetch("t", 1, 1)
    assert p.last_stable_offset == 2 and p.aborted_transactions == []


def test_stale_markers_are_answered_as_kafka_answers_them(client):
    client.produce_txn("t", 0, 0, [b"x"], epoch=3)
    assert client.markers(True, {"t": [0]}, epoch=2) == {("t", 0): E.INVALID_PRODUCER_EPOCH}
    assert client.markers(True, {"t": [0]}, epoch=3, coordinator_epoch=5) == {("t", 0): E.NONE}
    client.produce_txn("t", 0, 1, [b"y"], epoch=3)
    assert client.markers(False, {"t": [0]}, epoch=3, coordinator_epoch=4) == {
        ("t", 0): E.TRANSACTION_COORDINATOR_FENCED}
    assert client.fetch("t", 0, 1).last_stable_offset == 2   # the second transaction is still open
