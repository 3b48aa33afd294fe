"""kbroker.server.connection: a handler that answers ``CloseConnection`` (a failed acks=0 Produce,
Kafka's requestChannel.closeConnection) closes the connection in its turn: the responses
of the requests before it still leave, in order; the requests after it are neither
dispatched nor answered."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kbroker.server.registry import REGISTRY, ApiEntry, CloseConnection
from tests.unit.kbroker.server.test_connection_handler_errors import (
    DESCRIBE_GROUPS,
    api_versions,
    connect,
    describe_groups,
)
from wire.headers import decode_response, encode_request
from wire.messages import ApiVersionsResponse, DescribeGroupsResponse, ProduceRequest

PRODUCE = 0


def produce_acks_0() -> ProduceRequest:
    return ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"")])])


@pytest.fixture
def handlers(monkeypatch):
    """Produce answers CloseConnection; DescribeGroups is ``calls``-counted and, when
    ``gate`` is set to an asyncio.Event, parks until it is set."""
    calls: list[str] = []
    box: dict[str, Any] = {"gate": None}
    produce, groups = REGISTRY.get(PRODUCE), REGISTRY.get(DESCRIBE_GROUPS)

    def close(ctx: Any, req: Any) -> Any:
        calls.append("produce")
        return CloseConnection("a failed acks=0 produce")

    def describe(ctx: Any, req: Any) -> Any:
        calls.append("describe")
        answer = DescribeGroupsResponse(groups=[DescribeGroupsResponse.DescribedGroup(
            group_id=req.groups[0], error_code=0, group_state="Dead", protocol_type="", protocol_data="",
            members=[])])
        gate = box["gate"]
        if gate is None:
            return answer

        async def parked() -> Any:
            await gate.wait()
            return answer
        return parked()

    monkeypatch.setitem(REGISTRY._entries, PRODUCE, ApiEntry(PRODUCE, produce.min_version, produce.max_version, close))
    monkeypatch.setitem(REGISTRY._entries, DESCRIBE_GROUPS,
                        ApiEntry(DESCRIBE_GROUPS, groups.min_version, groups.max_version, describe))
    box["calls"] = calls
    return box


def test_the_responses_before_the_close_are_sent_and_the_requests_after_it_are_not_dispatched(handlers):
    conn, transport = connect()
    conn.data_received(encode_request(api_versions(), 3, 1, "t")
                       + encode_request(produce_acks_0(), 9, 2, "t")
                       + encode_request(describe_groups("after"), 5, 3, "t"))
    [only] = transport.frames()
    corr, resp = decode_response(ApiVersionsResponse, only, 3)
    assert (corr, resp.error_code) == (1, 0)
    assert transport.closed and not transport.aborted
    assert handlers["calls"] == ["produce"]
    # bytes that were already on their way are not dispatched either
    conn.data_received(encode_request(describe_groups("later"), 5, 4, "t"))
    assert handlers["calls"] == ["produce"] and len(transport.frames()) == 1


def test_a_parked_request_before_the_close_is_answered_when_it_completes_and_then_the_connection_closes(handlers):
    async def scenario() -> None:
        handlers["gate"] = gate = asyncio.Event()
        conn, transport = connect()
        conn.data_received(encode_request(describe_groups("parked"), 5, 1, "t")
                           + encode_request(produce_acks_0(), 9, 2, "t")
                           + encode_request(api_versions(), 3, 3, "t"))
        assert transport.frames() == [] and not transport.closed   # the parked answer comes first
        assert handlers["calls"] == ["describe"]   # the produce takes effect after it
        gate.set()
        for _ in range(100):
            if transport.closed:
                break
            await asyncio.sleep(0)
        assert handlers["calls"] == ["describe", "produce"]
        [only] = transport.frames()
        corr, resp = decode_response(DescribeGroupsResponse, only, 5)
        assert (corr, resp.groups[0].group_id) == (1, "parked")
        assert transport.closed and not transport.aborted

    asyncio.run(scenario())
