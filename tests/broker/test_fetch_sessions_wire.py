"""KIP-227 fetch sessions over the wire: raw Fetch requests to an embedded broker.

A full fetch with epoch 0 gets a session; incremental fetches then name only what changed
in the request and get only what changed in the answer (Kafka's FetchManager and
CachedPartition.maybeUpdateResponseData).  The broker's session cache is read from its
state to show partitions with nothing new were not read at all."""

from __future__ import annotations

import pytest

from kbroker import Broker
from tests.support.wire_client import WireClient
from wire.error_codes import ErrorCode
from wire.messages import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from wire.record_batch import build_batch

TOPIC = "sessions"
TEN_MINUTES_MS = 600_000
V = 12   # names (v13+: ids, tested separately)


def part(index: int, offset: int) -> FetchRequest.FetchPartition:
    return FetchRequest.FetchPartition(partition=index, current_leader_epoch=-1, fetch_offset=offset,
                                       last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20)


def fetch(session_id: int, epoch: int, offsets: dict[int, int] | None = None, forget: list[int] | None = None,
          max_wait_ms: int = 0, topic_id=None) -> FetchRequest:
    topics = []
    if offsets:
        t = FetchRequest.FetchTopic(topic=TOPIC, partitions=[part(i, o) for i, o in offsets.items()])
        if topic_id is not None:
            t.topic_id = topic_id
        topics.append(t)
    forgotten = []
    if forget:
        f = FetchRequest.ForgottenTopic(topic=TOPIC, partitions=forget)
        if topic_id is not None:
            f.topic_id = topic_id
        forgotten.append(f)
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                        session_id=session_id, session_epoch=epoch, topics=topics, forgotten_topics_data=forgotten,
                        rack_id="")


def produce(partition: int, *values: bytes) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=1, timeout_ms=30_000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(
            index=partition, records=build_batch([(None, v, None, 1_700_000_000_000) for v in values]))])])


def answered(resp: FetchResponse) -> dict[int, tuple[int, int, bytes]]:
    """partition -> (error, high watermark, records) of every partition in the answer."""
    out = {}
    for t in resp.responses:
        for p in t.partitions:
            assert p.partition_index not in out
            out[p.partition_index] = (p.error_code, p.high_watermark, bytes(p.records or b""))
    return out


@pytest.fixture
def broker(tmp_path):
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                       "num.partitions": "3"}) as b:
        c = WireClient(b.bootstrap_servers, "sessions-test")
        md = c.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                                    allow_auto_topic_creation=True), 12, MetadataResponse)
        assert md.topics[0].error_code == 0 and len(md.topics[0].partitions) == 3
        b.client = c
        b.topic_id = md.topics[0].topic_id
        yield b
        c.close()


def send_produce(c: WireClient, partition: int, *values: bytes) -> None:
    r = c.call(produce(partition, *values), 9, ProduceResponse)
    assert r.responses[0].partition_responses[0].error_code == 0


def cache_of(b):
    return b.broker.state.fetch_sessions


def test_an_initial_full_fetch_gets_a_session_and_incremental_fetches_answer_only_what_changed(broker):
    c = broker.client
    send_produce(c, 0, b"a", b"b")
    full = c.call(fetch(0, 0, {0: 0, 1: 0, 2: 0}), V, FetchResponse)
    assert full.error_code == 0 and full.session_id > 0
    got = answered(full)
    assert sorted(got) == [0, 1, 2] and got[0][1] == 2 and b"a" in got[0][2] and got[1] == (0, 0, b"")
    sid = full.session_id

    # nothing new: an empty answer, and no session partition read (p0 is named with offset 2)
    skipped = cache_of(broker).partitions_skipped
    inc = c.call(fetch(sid, 1, {0: 2}), V, FetchResponse)
    assert (inc.error_code, inc.session_id, answered(inc)) == (0, sid, {})
    assert cache_of(broker).partitions_skipped - skipped == 3
    assert cache_of(broker).incremental_fetches == 1

    # new data on p1 only: the answer names p1 only
    send_produce(c, 1, b"c")
    inc = c.call(fetch(sid, 2), V, FetchResponse)
    got = answered(inc)
    assert list(got) == [1] and got[1][:2] == (0, 1) and b"c" in got[1][2]

    # p1 forgotten: new data there is not answered; p2's is
    inc = c.call(fetch(sid, 3, forget=[1]), V, FetchResponse)
    assert answered(inc) == {}
    send_produce(c, 1, b"d")
    send_produce(c, 2, b"e")
    inc = c.call(fetch(sid, 4), V, FetchResponse)
    got = answered(inc)
    assert list(got) == [2] and b"e" in got[2][2]
    assert len(cache_of(broker).get(sid).parts) == 2


def test_the_same_offsets_are_answered_again_until_the_fetch_offset_moves_on(broker):
    c = broker.client
    send_produce(c, 0, b"a")
    sid = c.call(fetch(0, 0, {0: 0, 1: 0, 2: 0}), V, FetchResponse).session_id
    # the client did not name p0 with a new offset: the session still fetches from 0
    inc = c.call(fetch(sid, 1), V, FetchResponse)
    assert list(answered(inc)) == [0] and b"a" in answered(inc)[0][2]


def test_a_wrong_epoch_is_71_an_unknown_session_is_70_and_epoch_minus_one_closes_the_session(broker):
    c = broker.client
    sid = c.call(fetch(0, 0, {0: 0}), V, FetchResponse).session_id
    assert sid > 0
    bad = c.call(fetch(sid, 5), V, FetchResponse)
    assert (bad.error_code, bad.session_id, bad.responses) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    unknown = c.call(fetch(sid ^ 0x5A5A, 1), V, FetchResponse)
    assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    closed = c.call(fetch(sid, -1, {0: 0}), V, FetchResponse)
    assert (closed.error_code, closed.session_id, list(answered(closed))) == (0, 0, [0])
    assert c.call(fetch(sid, 1), V, FetchResponse).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_a_full_fetch_naming_a_session_replaces_it_with_a_new_one(broker):
    c = broker.client
    sid = c.call(fetch(0, 0, {0: 0}), V, FetchResponse).session_id
    again = c.call(fetch(sid, 0, {1: 0}), V, FetchResponse)
    assert again.session_id not in (0, sid) and list(answered(again)) == [1]
    assert c.call(fetch(sid, 1), V, FetchResponse).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert c.call(fetch(again.session_id, 1), V, FetchResponse).error_code == 0


def test_a_parked_incremental_fetch_answers_the_partition_an_append_woke_it_for(broker):
    c = broker.client
    sid = c.call(fetch(0, 0, {0: 0, 1: 0, 2: 0}), V, FetchResponse).session_id
    c.send(fetch(sid, 1, max_wait_ms=TEN_MINUTES_MS), V, 50)
    other = WireClient(broker.bootstrap_servers, "producer")
    send_produce(other, 2, b"late")
    other.close()
    corr, resp = c.receive(FetchResponse, V)
    got = answered(resp)
    assert (corr, resp.session_id, list(got)) == (50, sid, [2]) and b"late" in got[2][2]


def test_a_parked_incremental_fetch_answers_early_when_a_list_offsets_follows_it(broker):
    c = broker.client
    sid = c.call(fetch(0, 0, {0: 0}), V, FetchResponse).session_id
    c.send(fetch(sid, 1, max_wait_ms=TEN_MINUTES_MS), V, 60)
    c.send(ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7, 61)
    corr, resp = c.receive(FetchResponse, V)
    assert (corr, resp.error_code, resp.session_id, answered(resp)) == (60, 0, sid, {})
    assert c.receive(ListOffsetsResponse, 7)[0] == 61


def test_sessions_by_topic_id_v13_answer_changes_by_id(broker):
    c = broker.client
    tid = broker.topic_id
    full = c.call(fetch(0, 0, {0: 0, 1: 0}, topic_id=tid), 13, FetchResponse)
    assert full.session_id > 0 and full.responses[0].topic_id == tid
    send_produce(c, 1, b"x")
    inc = c.call(fetch(full.session_id, 1, forget=[0], topic_id=tid), 13, FetchResponse)
    assert [t.topic_id for t in inc.responses] == [tid] and list(answered(inc)) == [1]
    # a v12 request on a session by id: FETCH_SESSION_TOPIC_ID_ERROR
    assert c.call(fetch(full.session_id, 2), 12, FetchResponse).error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_no_session_when_the_cache_has_no_slots(tmp_path):
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                       "max.incremental.fetch.session.cache.slots": "0"}) as b:
        c = WireClient(b.bootstrap_servers, "no-slots")
        c.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                               allow_auto_topic_creation=True), 12, MetadataResponse)
        resp = c.call(fetch(0, 0, {0: 0}), V, FetchResponse)
        assert (resp.error_code, resp.session_id, list(answered(resp))) == (0, 0, [0])
        c.close()


def test_data_the_byte_budget_left_out_is_answered_by_the_next_incremental_fetch_unasked(broker):
    c = broker.client
    send_produce(c, 0, b"first")
    send_produce(c, 1, b"second")
    req = fetch(0, 0, {0: 0, 1: 0})
    req.max_bytes = 1   # the first batch comes whole, nothing after it
    full = c.call(req, V, FetchResponse)
    got = answered(full)
    assert b"first" in got[0][2] and got[1][:2] == (0, 1) and got[1][2] == b""
    # p0 moves on; p1 is not named and nothing was appended since: its data is still answered
    inc = c.call(fetch(full.session_id, 1, {0: 1}), V, FetchResponse)
    got = answered(inc)
    assert list(got) == [1] and b"second" in got[1][2]


def test_a_log_start_offset_moved_by_delete_records_reaches_the_session(broker):
    from wire.messages import DeleteRecordsRequest, DeleteRecordsResponse

    c = broker.client
    send_produce(c, 0, b"a", b"b", b"c")
    sid = c.call(fetch(0, 0, {0: 3, 1: 0}), V, FetchResponse).session_id
    assert answered(c.call(fetch(sid, 1), V, FetchResponse)) == {}
    dr = c.call(DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=TOPIC, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=2)])],
        timeout_ms=30_000), 2, DeleteRecordsResponse)
    assert dr.topics[0].partitions[0].error_code == 0
    # no notify comes with a log start move: the session's periodic check finds it
    epoch, log_starts = 2, []
    for _ in range(600):
        inc = c.call(fetch(sid, epoch, max_wait_ms=100), V, FetchResponse)
        epoch += 1
        log_starts += [p.log_start_offset for t in inc.responses for p in t.partitions if p.partition_index == 0]
        if log_starts:
            break
    assert log_starts == [2]


def test_partitions_caught_up_are_not_checked_again_until_something_changes(broker):
    c = broker.client
    sid = c.call(fetch(0, 0, {0: 0, 1: 0, 2: 0}), V, FetchResponse).session_id
    notes = cache_of(broker).get(sid).reader
    epoch = 1
    for p in [0, 1, 2, 0, 1]:
        send_produce(c, p, b"r")
        got = answered(c.call(fetch(sid, epoch), V, FetchResponse))
        epoch += 1
        hw = got[p][1]
        assert list(got) == [p] and notes.pending.keys() == {(TOPIC, p)}   # data there, not yet taken
        # the client moves p on to the HW: nothing is left to send, nothing stays pending
        assert answered(c.call(fetch(sid, epoch, {p: hw}), V, FetchResponse)) == {}
        epoch += 1
        assert notes.pending == {}


def test_a_throttled_answer_keeps_its_session_id_and_data(broker):
    # KAFKA-6946: a consumer over its byte-rate quota gets throttle_time_ms in an answer that
    # still names its session (kbroker sends the data too, KIP-219)
    from wire.messages import AlterClientQuotasRequest, AlterClientQuotasResponse

    c = broker.client
    E, En, Op = (AlterClientQuotasRequest.EntryData, AlterClientQuotasRequest.EntityData,
                 AlterClientQuotasRequest.OpData)
    r = c.call(AlterClientQuotasRequest(validate_only=False, entries=[E(
        entity=[En(entity_type="client-id", entity_name="throttled")],
        ops=[Op(key="consumer_byte_rate", value=1024.0, remove=False)])]), 1, AlterClientQuotasResponse)
    assert r.entries[0].error_code == 0
    send_produce(c, 0, b"x" * 20_000)
    slow = WireClient(broker.bootstrap_servers, "throttled")
    full = slow.call(fetch(0, 0, {0: 0, 1: 0}), V, FetchResponse)
    slow.close()
    assert full.throttle_time_ms > 0 and full.session_id > 0 and len(answered(full)[0][2]) > 20_000
    # the session is there: an unthrottled client id may go on with it
    inc = c.call(fetch(full.session_id, 1, {0: 1}), V, FetchResponse)
    assert (inc.error_code, inc.session_id, answered(inc)) == (0, full.session_id, {})
