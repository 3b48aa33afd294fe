"""kbroker.server.connection: a handler that raises, at once or in its awaitable, or answers
something that does not encode, gets UNKNOWN_SERVER_ERROR in its API's layout in its
turn, the traceback is logged once, and the connection answers the next request."""

from __future__ import annotations

import asyncio
import logging
import struct
from types import SimpleNamespace
from typing import Any

import pytest

import kbroker.handlers  # noqa: F401  (registers every API)
from kbroker.server.connection import KafkaConnection
from kbroker.server.registry import REGISTRY, ApiEntry
from kbroker.server.server_state import ServerState
from tests.support.fakes import services
from wire.error_codes import ErrorCode
from wire.headers import decode_response, encode_request
from wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ProduceRequest,
    ProduceResponse,
)

UNKNOWN = ErrorCode.UNKNOWN_SERVER_ERROR
DESCRIBE_GROUPS = 15


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.aborted = False
        self.closed = False   # close(): an orderly close, the written bytes leave first

    def write(self, data: Any) -> None:
        self.written += data

    def writelines(self, parts: Any) -> None:
        for p in parts:
            self.written += p

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 5555) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def frames(self) -> list[bytes]:
        out, buf = [], bytes(self.written)
        while buf:
            (size,) = struct.unpack(">i", buf[:4])
            out.append(buf[4:4 + size])
            buf = buf[4 + size:]
        return out


def connect() -> tuple[KafkaConnection, FakeTransport]:
    ports = services(config=SimpleNamespace(config={"socket.request.max.bytes": 100 * 1024 * 1024,
                                                    "group.coordinator.rebalance.protocols": ["classic", "consumer"]}),
                     quotas=SimpleNamespace(enabled=False))
    conn = KafkaConnection(ServerState(REGISTRY), ports)
    transport = FakeTransport()
    conn.connection_made(transport)
    return conn, transport


def describe_groups(*groups: str) -> DescribeGroupsRequest:
    return DescribeGroupsRequest(groups=list(groups), include_authorized_operations=False)


def api_versions() -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="t", client_software_version="1")


@pytest.fixture
def describe_groups_handler(monkeypatch):
    """Replace DescribeGroups' handler for one test: ``set(fn)``."""
    entry = REGISTRY.get(DESCRIBE_GROUPS)

    def install(fn: Any) -> None:
        monkeypatch.setitem(REGISTRY._entries, DESCRIBE_GROUPS,
                            ApiEntry(DESCRIBE_GROUPS, entry.min_version, entry.max_version, fn))

    return install


def _boom(ctx: Any, req: Any) -> Any:
    raise KeyError("a bug")


def test_a_handler_that_raises_is_answered_in_its_layout_and_the_next_request_on_the_connection_too(
        describe_groups_handler, caplog):
    describe_groups_handler(_boom)
    conn, transport = connect()
    with caplog.at_level(logging.ERROR, logger="kbroker.connection"):
        conn.data_received(encode_request(describe_groups("g1", "g2"), 5, 41, "t")
                           + encode_request(api_versions(), 3, 42, "t"))
    assert not transport.aborted
    first, second = transport.frames()
    corr, resp = decode_response(DescribeGroupsResponse, first, 5)
    assert (corr, [(g.group_id, g.error_code) for g in resp.groups]) == (41, [("g1", UNKNOWN), ("g2", UNKNOWN)])
    corr, versions = decode_response(ApiVersionsResponse, second, 3)
    assert (corr, versions.error_code) == (42, 0)
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1 and "KeyError: 'a bug'" in caplog.text


def test_an_awaitable_that_raises_is_answered_in_its_turn_before_the_requests_behind_it():
    async def scenario() -> None:
        gate = asyncio.Event()

        async def parked(ctx: Any, req: Any) -> Any:
            await gate.wait()
            raise RuntimeError("failed after parking")

        entry = REGISTRY.get(DESCRIBE_GROUPS)
        REGISTRY._entries[DESCRIBE_GROUPS] = ApiEntry(DESCRIBE_GROUPS, entry.min_version, entry.max_version, parked)
        try:
            conn, transport = connect()
            conn.data_received(encode_request(describe_groups("g"), 5, 1, "t")
                               + encode_request(api_versions(), 3, 2, "t"))
            assert transport.frames() == []   # the answer behind the parked one waits its turn
            gate.set()
            for _ in range(100):
                if len(transport.frames()) == 2:
                    break
                await asyncio.sleep(0)
            first, second = transport.frames()
            assert decode_response(DescribeGroupsResponse, first, 5)[0] == 1
            assert decode_response(DescribeGroupsResponse, first, 5)[1].groups[0].error_code == UNKNOWN
            assert decode_response(ApiVersionsResponse, second, 3)[0] == 2
            assert not transport.aborted
        finally:
            REGISTRY._entries[DESCRIBE_GROUPS] = entry

    asyncio.run(scenario())


def test_a_response_that_does_not_encode_is_answered_unknown_server_error(describe_groups_handler):
    describe_groups_handler(lambda ctx, req: DescribeGroupsResponse(groups=[
        DescribeGroupsResponse.DescribedGroup(group_id=12345)]))   # not a string
    conn, transport = connect()
    conn.data_received(encode_request(describe_groups("g"), 5, 7, "t"))
    corr, resp = decode_response(DescribeGroupsResponse, transport.frames()[0], 5)
    assert (corr, [(g.group_id, g.error_code) for g in resp.groups]) == (7, [("g", UNKNOWN)])
    assert not transport.aborted


def test_an_acks_0_produce_whose_handler_raises_closes_the_connection_as_kafka_does(monkeypatch):
    entry = REGISTRY.get(0)
    monkeypatch.setitem(REGISTRY._entries, 0, ApiEntry(0, entry.min_version, entry.max_version, _boom))
    req = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"")])])
    conn, transport = connect()
    conn.data_received(encode_request(req, 9, 3, "t"))
    assert transport.closed and transport.frames() == []
    # with acks=1 the same crash is an answer
    conn, transport = connect()
    req.acks = 1
    conn.data_received(encode_request(req, 9, 4, "t"))
    corr, resp = decode_response(ProduceResponse, transport.frames()[0], 9)
    assert (corr, resp.responses[0].partition_responses[0].error_code) == (4, UNKNOWN)
    assert not transport.aborted
