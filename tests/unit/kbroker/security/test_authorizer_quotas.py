"""Client quotas as Kafka's ClientQuotaManager computes them (Rate over 11 one-second
samples, throttle = (rate - bound) / bound * window, the DefaultQuotaCallback precedence of
user / client-id / default entities), persisted in the log dir, and DescribeClientQuotas /
AlterClientQuotas as Kafka answers them."""

from __future__ import annotations

import asyncio
import inspect
import json
from types import SimpleNamespace

from kbroker.handlers.client_quotas import handle_alter_client_quotas, handle_describe_client_quotas
from kbroker.security.quotas import DEFAULT, FETCH, FILE_NAME, PRODUCE, QuotaManager, Rate
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from kbroker.server.server_state import ServerState
from tests.support.fakes import context, services
from wire.error_codes import ErrorCode
from wire.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_rate_divides_by_at_least_samples_minus_one_windows():
    r = Rate(11, 1000)
    r.record(10_000, 0)
    assert r.window_size_ms(0) == 10_000
    assert r.value(0) == 1000.0            # 10 kB over the 10 s minimum
    for t in range(1, 20):
        r.record(1000, t * 1000)
    # after 19 s only the last 11 samples (11 kB) are alive, over 10 s since the oldest
    assert r.window_size_ms(19_000) == 10_000
    assert r.value(19_000) == 1100.0


def test_the_throttle_time_is_kafkas_formula(tmp_path):
    clock = Clock()
    q = QuotaManager(str(tmp_path), clock=clock)
    q.set((None, "c1"), {PRODUCE: 1000.0}).result(60)
    assert q.record(PRODUCE, "u", "c1", 10_000) == 0        # exactly at the bound over 10 s
    # 20 kB over 10 s = 2000 B/s: (2000 - 1000) / 1000 * 10 s
    assert q.record(PRODUCE, "u", "c1", 10_000) == 10_000
    assert q.record(PRODUCE, "u", "other", 1_000_000) == 0  # no quota for that client id
    q.close()


def test_quota_precedence_follows_kafkas_default_callback(tmp_path):
    q = QuotaManager(str(tmp_path))
    q.set((None, DEFAULT), {PRODUCE: 1.0})
    q.set((None, "c1"), {PRODUCE: 2.0})
    q.set((DEFAULT, None), {PRODUCE: 3.0})
    q.set(("alice", None), {PRODUCE: 4.0})
    q.set(("alice", "c1"), {PRODUCE: 5.0, FETCH: 6.0})
    assert q.quota(PRODUCE, "alice", "c1").bound == 5.0
    assert q.quota(PRODUCE, "alice", "c2").bound == 4.0
    assert q.quota(PRODUCE, "bob", "c1").bound == 3.0
    assert q.quota(FETCH, "bob", "c1") is None
    assert q.quota(FETCH, "alice", "c1").key == (FETCH, "alice", "c1")
    q.set((DEFAULT, None), {PRODUCE: None})
    assert q.quota(PRODUCE, "bob", "c1").bound == 2.0
    assert q.quota(PRODUCE, "bob", "c9").bound == 1.0
    # a <default> client quota counts each client id apart; a user quota all its clients together
    assert q.quota(PRODUCE, "bob", "c9").key == (PRODUCE, "", "c9")
    assert q.quota(PRODUCE, "alice", "c7").key == (PRODUCE, "alice", "")
    q.close()


def test_quotas_survive_a_restart_as_kafkas_entity_paths(tmp_path):
    q = QuotaManager(str(tmp_path))
    q.set(("alice", "c1"), {PRODUCE: 1048576.0})
    q.set((None, DEFAULT), {"request_percentage": 12.5}).result(60)
    q.close()
    assert json.loads((tmp_path / FILE_NAME).read_text()) == {
        "users/alice/clients/c1": {"producer_byte_rate": "1048576"},
        "clients/<default>": {"request_percentage": "12.5"}}
    again = QuotaManager(str(tmp_path))
    assert again.enabled and again.quota(PRODUCE, "alice", "c1").bound == 1048576.0
    again.close()
    empty = QuotaManager(str(tmp_path / "none"))
    assert not empty.enabled
    empty.close()


class QuotaAdmin:
    """The config admin's client-quota change over the test's store (a single node's)."""

    def __init__(self, quotas: QuotaManager) -> None:
        self.quotas = quotas

    def set_client_quota(self, entity, values):
        return [self.quotas.set(entity, values)]


def ctx(quotas) -> RequestContext:
    return context(49, 1, services(quotas=quotas, config_admin=QuotaAdmin(quotas)), peer="127.0.0.1:1")


def alter(quotas, entries, validate_only=False):
    E, En, Op = (AlterClientQuotasRequest.EntryData, AlterClientQuotasRequest.EntityData,
                 AlterClientQuotasRequest.OpData)
    req = AlterClientQuotasRequest(validate_only=validate_only, entries=[
        E(entity=[En(entity_type=t, entity_name=n) for t, n in entity],
          ops=[Op(key=k, value=v, remove=v is None) for k, v in ops])
        for entity, ops in entries])
    r = handle_alter_client_quotas(ctx(quotas), req)
    return asyncio.run(r) if inspect.iscoroutine(r) else r


def describe(quotas, components, strict=False):
    C = DescribeClientQuotasRequest.ComponentData
    return handle_describe_client_quotas(ctx(quotas), DescribeClientQuotasRequest(
        strict=strict, components=[C(entity_type=t, match_type=m, match=n) for t, m, n in components]))


def test_alter_and_describe_client_quotas_as_kafka(tmp_path):
    q = QuotaManager(str(tmp_path))
    r = alter(q, [([("client-id", "c1")], [(PRODUCE, 1048576.0)]),
                  ([("user", "alice"), ("client-id", None)], [(FETCH, 2048.0)]),
                  ([("client-id", "c2")], [(PRODUCE, 1.5)]),
                  ([("ip", "1.2.3.4")], [("connection_creation_rate", 3.0)]),
                  ([("client-id", "c3")], [("bogus", 1.0)])])
    assert [e.error_code for e in r.entries] == [0, 0, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST,
                                                 ErrorCode.INVALID_REQUEST]
    assert [(e.entity_type, e.entity_name) for e in r.entries[1].entity] == [("user", "alice"), ("client-id", None)]

    def entities(resp):
        return sorted(tuple((e.entity_type, e.entity_name) for e in x.entity) for x in resp.entries)

    assert entities(describe(q, [("client-id", 2, None)])) == [
        (("client-id", "c1"),), (("user", "alice"), ("client-id", None))]
    assert entities(describe(q, [("client-id", 2, None)], strict=True)) == [(("client-id", "c1"),)]
    assert entities(describe(q, [("client-id", 1, None)])) == [(("user", "alice"), ("client-id", None))]
    exact = describe(q, [("client-id", 0, "c1")])
    assert [(v.key, v.value) for v in exact.entries[0].values] == [(PRODUCE, 1048576.0)]
    alter(q, [([("client-id", "c1")], [(PRODUCE, None)])])
    assert entities(describe(q, [("client-id", 0, "c1")])) == []
    assert alter(q, [([("client-id", "c9")], [(PRODUCE, 5.0)])], validate_only=True).entries[0].error_code == 0
    assert q.quota(PRODUCE, "x", "c9") is None
    q.close()


# ---------------------------------------------------------------- the connection (KIP-219)
def test_a_client_over_its_request_quota_gets_throttle_time_ms_and_is_not_read_meanwhile(tmp_path, monkeypatch):
    """A tiny request_percentage on client id "c": the first DescribeGroups answered after a
    busy handler carries a throttle (at most one window, 1000 ms) and the connection pauses
    reading, then resumes no earlier than the throttle time; another client id is untouched."""
    import struct
    import time as _time

    from kbroker.security.quotas import REQUEST
    from kbroker.server.connection import KafkaConnection
    from kbroker.server.registry import ApiEntry
    from wire.headers import decode_response, encode_request
    from wire.messages import DescribeGroupsRequest, DescribeGroupsResponse

    def busy_handler(ctx, req):
        end = _time.perf_counter() + 0.002   # the loop's time in the handler is what is counted
        while _time.perf_counter() < end:
            pass
        return DescribeGroupsResponse(throttle_time_ms=0, groups=[])

    entry = REGISTRY.get(15)
    monkeypatch.setitem(REGISTRY._entries, 15, ApiEntry(15, entry.min_version, entry.max_version, busy_handler))

    quotas = QuotaManager(str(tmp_path))
    quotas.set((None, "c"), {REQUEST: 0.000001}).result(60)

    class Transport(asyncio.Transport):
        def __init__(self) -> None:
            super().__init__()
            self.written = bytearray()
            self.events: list[tuple[str, float]] = []

        def writelines(self, parts) -> None:
            for p in parts:
                self.written += p

        def write(self, data) -> None:
            self.written += data

        def get_extra_info(self, name, default=None):
            return ("127.0.0.1", 5555) if name == "peername" else default

        def pause_reading(self) -> None:
            self.events.append(("pause", asyncio.get_running_loop().time()))

        def resume_reading(self) -> None:
            self.events.append(("resume", asyncio.get_running_loop().time()))

        def abort(self) -> None:
            pass

    def throttle_of(transport: Transport) -> int:
        (size,) = struct.unpack(">i", transport.written[:4])
        _, resp = decode_response(DescribeGroupsResponse, bytes(transport.written[4:4 + size]), 5)
        return resp.throttle_time_ms

    async def run(client_id: str) -> Transport:
        conn = KafkaConnection(ServerState(REGISTRY), services(
            quotas=quotas, config=SimpleNamespace(config={"socket.request.max.bytes": 1 << 20})))
        transport = Transport()
        conn.connection_made(transport)
        conn.data_received(encode_request(DescribeGroupsRequest(groups=[], include_authorized_operations=False),
                                          5, 1, client_id))
        deadline = asyncio.get_running_loop().time() + 60
        while (transport.events and transport.events[-1][0] == "pause"
               and asyncio.get_running_loop().time() < deadline):
            await asyncio.sleep(0.01)
        return transport

    throttled = asyncio.run(run("c"))
    throttle = throttle_of(throttled)
    assert 0 < throttle <= 1000
    assert [e for e, _ in throttled.events] == ["pause", "resume"]
    assert throttled.events[1][1] - throttled.events[0][1] >= throttle / 1000 - 0.005
    other = asyncio.run(run("d"))
    assert throttle_of(other) == 0 and other.events == []
    quotas.close()


def test_apply_quotas_counts_produce_and_consumer_fetch_record_bytes_and_exempts_followers(tmp_path):
    from kbroker.security.quotas import apply_quotas
    from wire.messages import FetchRequest, FetchResponse, ProduceRequest, ProduceResponse

    clock = Clock()
    q = QuotaManager(str(tmp_path), clock=clock)
    q.set(("alice", None), {PRODUCE: 100.0, FETCH: 100.0}).result(60)

    def ctx_for(key: int) -> RequestContext:
        return RequestContext(key, 9 if key == 0 else 12, 1, "app", services(quotas=q), "127.0.0.1:1",
                              "User:alice")

    P = ProduceRequest
    produce = P(acks=1, timeout_ms=1000, topic_data=[P.TopicProduceData(name="t", partition_data=[
        P.PartitionProduceData(index=0, records=memoryview(b"x" * 3000))])])
    resp = ProduceResponse(responses=[], throttle_time_ms=0)
    # 3000 B over the 10 s minimum window = 300 B/s against 100: (300 - 100) / 100 * 10 s
    assert apply_quotas(ctx_for(0), produce, resp, 0.0) == 20_000 == resp.throttle_time_ms

    F = FetchResponse
    fetched = F(throttle_time_ms=0, responses=[F.FetchableTopicResponse(topic="t", partitions=[
        F.PartitionData(partition_index=0, records=memoryview(b"y" * 2000))])])
    consumer = FetchRequest(replica_id=-1, topics=[])
    assert apply_quotas(ctx_for(1), consumer, fetched, 0.0) == 10_000 == fetched.throttle_time_ms
    follower = FetchRequest(replica_id=2, topics=[])
    again = F(throttle_time_ms=0, responses=fetched.responses)
    assert apply_quotas(ctx_for(1), follower, again, 0.5) == 0 == again.throttle_time_ms
    q.close()


def test_a_client_that_always_has_more_to_send_is_held_near_its_quota_not_below(tmp_path):
    """The model of the compat test's slow client, on a simulated clock: 64 kB requests sent as
    soon as the last throttle ends (the broker mutes the channel and librdkafka waits that
    long).  Over two minutes the rate is the quota plus the first window's burst, never far
    below it: the broker's accounting does not over-throttle (the compat test cannot check
    that bound on a busy machine, where the client itself may be slow)."""
    clock = Clock()
    q = QuotaManager(str(tmp_path), clock=clock)
    bound = 1_048_576.0
    q.set((None, "slow"), {PRODUCE: bound}).result(60)
    start, sent = clock.now, 0
    while clock.now - start < 120.0:
        sent += 65_536
        throttle_ms = q.record(PRODUCE, "u", "slow", 65_536)
        clock.now += max(throttle_ms / 1000.0, 0.001)   # 1 ms to send when not throttled
    rate = sent / (clock.now - start)
    assert 0.95 * bound <= rate <= 1.15 * bound, rate / bound
    q.close()
