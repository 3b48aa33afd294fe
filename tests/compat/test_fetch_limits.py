"""Fetch with small max_bytes / partition_max_bytes, raw over TCP at v4, v11 and v12, with
exact byte counts of the stored batches, against Kafka's rules (KIP-74;
ReplicaManager.readFromLocalLog / read, LogSegment.read, KafkaApis.handleFetchRequest):

* the request budget is min(max_bytes, fetch.max.bytes); each partition reads at most
  min(partition_max_bytes, what is left of the budget), in request order;
* until a partition has returned data (minOneMessage), the first batch at the fetch offset is
  returned whole even past both limits, so an empty partition before it does not use the
  rule up;
* after that, a partition whose first batch does not fit returns empty records (Kafka
  replaces the incomplete batch with nothing for v3+), and a later one whose batch fits what
  is left still gets it;
* min_bytes is capped at the budget: a request that cannot ever reach its min_bytes is
  answered at once, not at max_wait_ms;
* a negative limit on a partition with data is UNKNOWN_SERVER_ERROR for that partition only
  (LogSegment.read refuses a negative size); the budget is then 0, not negative.

Where Kafka would append the first bytes of a batch cut by the limit (a partial tail that
every client drops), kbroker returns whole batches only (PROTOCOL-NOTES trap 27) and counts
only those against the budget: the last test pins that difference.  Limits at exact batch
boundaries make every other answer byte-for-byte what Kafka sends.  kbroker serves Fetch
v4+ only, so the pre-KIP-74 hard limits of v0-2 do not arise.
"""

from __future__ import annotations

import struct

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.compat.test_bad_input import Raw, produce_request
from tests.support.broker_process import BrokerProcess
from wire.messages import FetchRequest, FetchResponse, ProduceResponse
from wire.record_batch import build_batch

TOPIC = "limits"
VERSIONS = [4, 11, 12]
BIG = 1 << 20
UNKNOWN_SERVER_ERROR = -1
# partition -> the value size of each of its batches (one record per batch)
LAYOUT = {0: [200, 300, 400], 1: [500, 100], 2: [150], 3: []}


def batches_in(records: bytes) -> list[tuple[int, int]]:
    """(base offset, size in bytes) of each whole batch; a partial tail would fail here."""
    out, pos = [], 0
    while pos < len(records):
        base, length = struct.unpack_from(">qi", records, pos)
        out.append((base, 12 + length))
        pos += 12 + length
    assert pos == len(records), "a partial batch"
    return out


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A broker with topic ``limits`` (4 partitions) holding LAYOUT's batches; yields
    (port, {partition: [(base offset, stored size), ...]})."""
    broker = BrokerProcess(tmp_path_factory.mktemp("fetch-limits") / "data").start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert admin.create_topics([NewTopic(TOPIC, len(LAYOUT), 1)], operation_timeout=10)[TOPIC].result(60) is None
    raw = Raw(broker.port)
    sizes: dict[int, list[tuple[int, int]]] = {}
    corr = 0
    for partition, values in LAYOUT.items():
        sizes[partition] = []
        for offset, n in enumerate(values):
            batch = build_batch([(b"k", bytes([65 + offset]) * n, None, 1_700_000_000_000 + offset)])
            corr += 1
            raw.request(produce_request(TOPIC, batch, acks=-1, partition=partition), 9, corr)
            got_corr, resp = raw.response(ProduceResponse, 9, timeout_s=60)
            p = resp.responses[0].partition_responses[0]
            assert (got_corr, p.error_code, p.base_offset) == (corr, 0, offset)
            sizes[partition].append((offset, len(batch)))
    raw.close()
    yield broker.port, sizes
    assert broker.alive()
    broker.stop()
    assert "Traceback" not in broker.log_text(), broker.log_text()


def fetch(port: int, version: int, partitions: list[tuple[int, int, int]], max_bytes: int, *,
          min_bytes: int = 0, max_wait_ms: int = 0, timeout_s: float = 60.0) -> list[tuple[int, int, list]]:
    """Fetch ``(partition, fetch offset, partition_max_bytes)`` of TOPIC in one request;
    returns (error, high watermark, batches) per partition, in request order."""
    req = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                       isolation_level=0, session_id=0, session_epoch=-1, topics=[
                           FetchRequest.FetchTopic(topic=TOPIC, partitions=[
                               FetchRequest.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=o,
                                                           last_fetched_epoch=-1, log_start_offset=-1,
                                                           partition_max_bytes=m)
                               for p, o, m in partitions])],
                       forgotten_topics_data=[], rack_id="")
    raw = Raw(port)
    try:
        raw.request(req, version, 5)
        corr, resp = raw.response(FetchResponse, version, timeout_s=timeout_s)
    finally:
        raw.close()
    assert corr == 5 and resp.error_code == 0
    [topic] = resp.responses
    assert [p.partition_index for p in topic.partitions] == [p for p, _, _ in partitions]
    return [(p.error_code, p.high_watermark, batches_in(bytes(p.records))) for p in topic.partitions]


def size(stored_batches: list[tuple[int, int]], *indexes: int) -> int:
    return sum(stored_batches[i][1] for i in indexes)


def test_the_stored_batches_are_what_was_produced(stored):
    port, sizes = stored
    assert fetch(port, 12, [(p, 0, BIG) for p in LAYOUT], BIG) == [
        (0, len(LAYOUT[p]), sizes[p]) for p in LAYOUT]
    # one record per batch: the batch sizes follow the value sizes
    assert sizes[0][1][1] - sizes[0][0][1] == 100


@pytest.mark.parametrize("version", VERSIONS)
def test_the_first_batch_of_the_first_partition_with_data_is_whole_even_past_both_limits(stored, version):
    port, sizes = stored
    assert sizes[0][0][1] > 1
    assert fetch(port, version, [(0, 0, 1), (1, 0, BIG), (2, 0, BIG)], 1) == [
        (0, 3, sizes[0][:1]), (0, 2, []), (0, 1, [])]


@pytest.mark.parametrize("version", VERSIONS)
def test_an_empty_partition_before_it_does_not_use_up_the_first_batch_rule(stored, version):
    port, sizes = stored
    # partition 3 is empty, partition 0 is read at its high watermark: neither has data
    assert fetch(port, version, [(3, 0, 1), (0, 3, 1), (1, 0, 1), (2, 0, BIG)], 1) == [
        (0, 0, []), (0, 3, []), (0, 2, sizes[1][:1]), (0, 1, [])]


@pytest.mark.parametrize("version", VERSIONS)
def test_partition_max_bytes_bounds_each_partition_and_a_later_first_batch_that_does_not_fit_returns_nothing(
        stored, version):
    port, sizes = stored
    parts = [(0, 0, size(sizes[0], 0, 1)), (1, 0, size(sizes[1], 0)), (2, 0, size(sizes[2], 0) - 1)]
    assert fetch(port, version, parts, BIG) == [(0, 3, sizes[0][:2]), (0, 2, sizes[1][:1]), (0, 1, [])]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_first_batch_rule_applies_only_to_the_first_batch_of_the_first_partition(stored, version):
    port, sizes = stored
    # past the first batch, partition_max_bytes holds even for the first partition
    assert fetch(port, version, [(0, 0, size(sizes[0], 0, 1) - 1)], BIG) == [(0, 3, sizes[0][:1])]
    # a fetch offset inside the log starts the first-batch rule at that batch
    assert fetch(port, version, [(0, 1, 1)], 1) == [(0, 3, sizes[0][1:2])]


@pytest.mark.parametrize("version", VERSIONS)
def test_later_partitions_stop_at_what_is_left_of_max_bytes(stored, version):
    port, sizes = stored
    whole_p0 = size(sizes[0], 0, 1, 2)
    parts = [(0, 0, BIG), (1, 0, BIG), (2, 0, BIG)]
    assert fetch(port, version, parts, whole_p0 + size(sizes[1], 0)) == [
        (0, 3, sizes[0]), (0, 2, sizes[1][:1]), (0, 1, [])]
    # one byte less: partition 1's first batch no longer fits and it returns nothing, but
    # partition 2's smaller batch fits in what is left and is returned
    assert size(sizes[2], 0) <= size(sizes[1], 0) - 1
    assert fetch(port, version, parts, whole_p0 + size(sizes[1], 0) - 1) == [
        (0, 3, sizes[0]), (0, 2, []), (0, 1, sizes[2])]


@pytest.mark.parametrize("version", VERSIONS)
def test_max_bytes_0_returns_the_first_batch_of_the_first_partition_with_data_and_nothing_else(stored, version):
    port, sizes = stored
    assert fetch(port, version, [(3, 0, BIG), (0, 0, BIG), (1, 0, BIG)], 0) == [
        (0, 0, []), (0, 3, sizes[0][:1]), (0, 2, [])]


@pytest.mark.parametrize("version", VERSIONS)
def test_min_bytes_above_max_bytes_is_answered_at_once_not_at_max_wait(stored, version):
    port, sizes = stored
    # max_wait 10 minutes: a broker that parked this request would miss the 60 s read
    assert fetch(port, version, [(0, 0, BIG)], size(sizes[0], 0), min_bytes=BIG, max_wait_ms=600_000) == [
        (0, 3, sizes[0][:1])]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_negative_limit_fails_only_a_partition_with_data_and_leaves_a_budget_of_zero(stored, version):
    port, sizes = stored
    assert fetch(port, version, [(0, 0, -1), (3, 0, -1), (1, 0, BIG), (2, 0, BIG)], BIG) == [
        (UNKNOWN_SERVER_ERROR, -1, []), (0, 0, []), (0, 2, sizes[1]), (0, 1, sizes[2])]
    # a negative max_bytes: the first partition with data fails, the budget becomes 0, and
    # the next one still gets its first batch (no partition has returned data yet)
    assert fetch(port, version, [(0, 0, BIG), (1, 0, BIG), (2, 0, BIG)], -1) == [
        (UNKNOWN_SERVER_ERROR, -1, []), (0, 2, sizes[1][:1]), (0, 1, [])]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_limit_inside_a_batch_stops_at_the_last_whole_batch_and_only_whole_batches_count(stored, version):
    """kbroker's documented difference: Kafka would add the first a1-1 bytes of batch 1 to
    partition 0 (dropped by clients) and count them, leaving nothing for partition 2."""
    port, sizes = stored
    assert size(sizes[2], 0) <= size(sizes[0], 1) - 1
    assert fetch(port, version, [(0, 0, BIG), (2, 0, BIG)], size(sizes[0], 0, 1) - 1) == [
        (0, 3, sizes[0][:1]), (0, 1, sizes[2])]
