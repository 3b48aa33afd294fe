"""Fetch sends large stored slices with sendfile (kbroker/server/connection.py raw mode).

An embedded broker (its loop in a thread of this process) so the tests can read the
connection's send counters and what it holds in memory; the client is a plain socket
speaking framed requests, so what arrives is compared byte for byte with the segment files.
Every wait is on a condition with a generous deadline, never on elapsed time.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import kbroker.app.broker
from kbroker import Broker
from kbroker.replica.record_sending import SENDFILE_MIN_BYTES
from kbroker.server.connection import KafkaConnection, SendStats
from log.file_records import PinnedSlice
from tests.support.wire_client import WireClient
from wire.headers import encode_request
from wire.messages import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from wire.record_batch import build_batch

TOPIC = "zc"
PARTITIONS = 4
DEADLINE_S = 60.0


def wait_until(what: str, cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.01)


def Client(bootstrap: str, rcvbuf: int | None = None) -> WireClient:
    return WireClient(bootstrap, "zero-copy-test", rcvbuf)


def fetch_request(offsets: dict[int, int], partition_max_bytes: int) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=64 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[
                            FetchRequest.FetchTopic(topic=TOPIC, partitions=[
                                FetchRequest.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=o,
                                                            last_fetched_epoch=-1, log_start_offset=-1,
                                                            partition_max_bytes=partition_max_bytes)
                                for p, o in offsets.items()])],
                        forgotten_topics_data=[], rack_id="")


def records_by_partition(resp: FetchResponse) -> dict[int, bytes]:
    assert resp.error_code == 0
    [topic] = resp.responses
    assert all(p.error_code == 0 for p in topic.partitions), [p.error_code for p in topic.partitions]
    return {p.partition_index: bytes(p.records) for p in topic.partitions}


def produce(client: Client, partition: int, batches: int, value_size: int, records_per_batch: int = 8) -> None:
    """``batches`` batches of incompressible values into ``partition``."""
    for i in range(batches):
        batch = build_batch([(b"k%d" % j, os.urandom(value_size), None, 1_700_000_000_000 + j)
                             for j in range(records_per_batch)])
        req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[
            ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
                ProduceRequest.PartitionProduceData(index=partition, records=batch)])])
        resp = client.call(req, 9, ProduceResponse, correlation_id=1000 + i)
        assert resp.responses[0].partition_responses[0].error_code == 0


def segment_files(log_dir: Path, partition: int) -> list[Path]:
    return sorted((log_dir / f"{TOPIC}-{partition}").glob("*.log"))


def stored_bytes(log_dir: Path, partition: int) -> bytes:
    return b"".join(p.read_bytes() for p in segment_files(log_dir, partition))


def connection_of(broker, client: Client) -> KafkaConnection:
    """The broker's side of ``client``'s connection."""
    host, port = client.sock.getsockname()
    local = f"{host}:{port}"
    found: list[KafkaConnection] = []
    wait_until("the broker accepted the connection",
               lambda: bool(found.extend(c for c in list(broker.broker.server.connections) if c.peer == local)
                            or found))
    return found[0]


@pytest.fixture(params=["uvloop", "asyncio"])
def broker(request, tmp_path, monkeypatch):
    """A broker on uvloop (the default) or on asyncio's own loop (the fallback): raw mode
    watches the socket through each loop's add_writer."""
    if request.param == "asyncio":
        monkeypatch.setattr(kbroker.app.broker, "new_event_loop", asyncio.new_event_loop)
    config = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path), "num.partitions": str(PARTITIONS),
              "log.segment.bytes": str(1 << 20), "log.segment.delete.delay.ms": "0"}
    with Broker.start(config) as b:
        assert type(b._loop).__module__.startswith("uvloop") == (request.param == "uvloop")
        client = Client(b.bootstrap_servers)
        md = client.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                                         allow_auto_topic_creation=True), 9, MetadataResponse)
        assert md.topics[0].error_code == 0
        client.close()
        yield b, tmp_path


def test_a_fetch_of_several_mib_over_several_partitions_sends_the_stored_batches_byte_for_byte_with_sendfile(broker):
    b, log_dir = broker
    client = Client(b.bootstrap_servers)
    for p in range(PARTITIONS):
        produce(client, p, batches=7, value_size=16 * 1024)   # ~128 KiB a batch, 7 a segment (1 MiB)
    expected = {p: stored_bytes(log_dir, p) for p in range(PARTITIONS)}
    assert all(len(v) > 800_000 for v in expected.values())
    slices, sent = SendStats.slices, SendStats.sendfile_bytes
    got = records_by_partition(client.call(fetch_request(dict.fromkeys(range(PARTITIONS), 0), 8 << 20),
                                           12, FetchResponse))
    assert got == expected
    assert SendStats.slices - slices == PARTITIONS
    assert SendStats.sendfile_bytes - sent == sum(map(len, expected.values()))
    client.close()


def test_a_slice_below_the_threshold_is_copied_into_the_response_not_sent_with_sendfile(broker):
    b, log_dir = broker
    client = Client(b.bootstrap_servers)
    produce(client, 0, batches=1, value_size=100)
    expected = stored_bytes(log_dir, 0)
    assert 0 < len(expected) < SENDFILE_MIN_BYTES
    slices = SendStats.slices
    got = records_by_partition(client.call(fetch_request({0: 0}, 1 << 20), 12, FetchResponse))
    assert got == {0: expected} and SendStats.slices == slices
    client.close()


def test_a_reader_that_does_not_read_leaves_the_broker_holding_response_headers_not_records(broker):
    """Eight pipelined fetches of ~4 MiB each to a client that reads nothing: the broker
    blocks in raw mode with the records on disk (what it holds in memory stays under
    64 KiB, not the 32 MiB answered), stops reading requests, and every response then
    arrives whole and in order once the client reads."""
    b, log_dir = broker
    writer = Client(b.bootstrap_servers)
    for p in range(PARTITIONS):
        produce(writer, p, batches=7, value_size=16 * 1024)
    writer.close()
    expected = {p: stored_bytes(log_dir, p) for p in range(PARTITIONS)}
    slow = Client(b.bootstrap_servers, rcvbuf=16 * 1024)
    requests = 8
    for corr in range(requests):
        slow.send(fetch_request(dict.fromkeys(range(PARTITIONS), 0), 8 << 20), 12, corr)
    conn = connection_of(b, slow)
    wait_until("the broker waits for the socket with responses queued",
               lambda: conn._wake_fd >= 0 and len(conn._out) > 0)
    assert conn._read_paused
    assert conn.buffered_bytes() < 64 * 1024
    for corr in range(requests):
        got_corr, resp = slow.receive(FetchResponse, 12)
        assert got_corr == corr and records_by_partition(resp) == expected
    wait_until("raw mode ends", lambda: conn._wake_fd < 0 and not conn._out and not conn._read_paused)
    slow.close()


def test_segments_deleted_by_retention_while_their_bytes_wait_to_be_sent_are_still_sent_whole(broker):
    b, log_dir = broker
    client = Client(b.bootstrap_servers)
    produce(client, 0, batches=15, value_size=16 * 1024)   # ~128 KiB batches: three segments of ~1 MiB
    segments = segment_files(log_dir, 0)
    assert len(segments) >= 3
    rolled = segments[:2]
    contents = [p.read_bytes() for p in rolled]
    client.close()

    slow = Client(b.bootstrap_servers, rcvbuf=16 * 1024)
    # a fetch reads one segment: fetches from each rolled segment's base offset, four rounds
    # (~8 MiB, more than the socket buffers take) in one send, so all are read and pinned at once
    rounds = 4
    wanted = [fetch_request({0: int(path.stem)}, 8 << 20) for path in rolled] * rounds
    slices = SendStats.slices
    slow.sock.sendall(b"".join(encode_request(req, 12, corr, "zero-copy-test") for corr, req in enumerate(wanted)))
    conn = connection_of(b, slow)
    wait_until("every fetch is answered into the queue and the broker waits for the socket",
               lambda: conn._wake_fd >= 0 and SendStats.slices - slices + pinned_in(conn) == len(wanted))
    assert pinned_in(conn) >= 2   # at least the last round is still on disk, behind the socket

    admin = Client(b.bootstrap_servers)
    resp = admin.call(DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=TOPIC, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(
            partition_index=0, offset=int(segments[2].stem))])], timeout_ms=30_000), 2, DeleteRecordsResponse)
    assert resp.topics[0].partitions[0].error_code == 0
    admin.close()
    b.broker.state.log_manager.get_log((TOPIC, 0)).delete_old_segments()   # the retention pass's next step
    wait_until("the rolled segments are gone from disk",
               lambda: not any(p.with_suffix(s).exists() for p in rolled for s in (".log", ".deleted")))

    for corr in range(len(wanted)):
        got_corr, r = slow.receive(FetchResponse, 12)
        assert got_corr == corr and records_by_partition(r) == {0: contents[corr % len(rolled)]}
    slow.close()


def pinned_in(conn: KafkaConnection) -> int:
    """Slices queued in the connection and not yet sent whole."""
    return sum(1 for part in list(conn._out) if isinstance(part, PinnedSlice))


def test_a_segment_file_cut_short_under_a_send_closes_that_connection_and_the_broker_serves_on(broker):
    """A file shorter than the slice being sent (sendfile returns 0: here the file is cut
    behind the log's back) cannot complete the frame: the connection closes, nothing else."""
    b, log_dir = broker
    client = Client(b.bootstrap_servers)
    produce(client, 0, batches=15, value_size=16 * 1024)
    client.close()
    first = segment_files(log_dir, 0)[0]
    slow = Client(b.bootstrap_servers, rcvbuf=16 * 1024)
    requests = 8
    slow.sock.sendall(b"".join(encode_request(fetch_request({0: 0}, 8 << 20), 12, corr, "zero-copy-test")
                               for corr in range(requests)))
    conn = connection_of(b, slow)
    wait_until("the broker waits for the socket with slices queued", lambda: conn._wake_fd >= 0 and pinned_in(conn))
    os.truncate(first, 1000)
    whole = 0
    with pytest.raises(AssertionError, match="connection closed"):
        for _ in range(requests):
            slow.receive(FetchResponse, 12)
            whole += 1
    assert whole < requests
    wait_until("the connection is gone", lambda: conn.closed and conn._wake_fd < 0 and not conn._out)
    other = Client(b.bootstrap_servers)
    md = other.call(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9, MetadataResponse)
    assert [t.name for t in md.topics] == [TOPIC]
    other.close()
    slow.close()
