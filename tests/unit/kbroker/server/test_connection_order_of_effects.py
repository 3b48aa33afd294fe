"""kbroker.server.connection: a connection's requests take effect in the order they were sent.

A handler that answers later (an awaitable) holds the requests sent after it on its
connection until it is done, as Kafka's processor mutes a channel until its response is on
its way; a handler that says ``ctx.took_effect()`` (an acks=all Produce waiting for the ISR,
a parked Fetch) lets them go on at once, their answers still leaving after its own."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kbroker.server.registry import REGISTRY, ApiEntry
from tests.unit.kbroker.server.test_connection_handler_errors import (
    DESCRIBE_GROUPS,
    api_versions,
    connect,
    describe_groups,
)
from wire.headers import decode_response, encode_request
from wire.messages import ApiVersionsResponse, DescribeGroupsResponse

API_VERSIONS = 18


def _answer(group: str) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=[DescribeGroupsResponse.DescribedGroup(
        group_id=group, error_code=0, group_state="Dead", protocol_type="", protocol_data="",
        members=[])])


@pytest.fixture
def handlers(monkeypatch):
    """DescribeGroups of group "g<n>" records "start g<n>" and, while ``gates`` has an
    asyncio.Event for it, parks until it is set (records "effect g<n>" then); with
    ``early`` containing the group, it calls ``took_effect()`` before parking.
    ApiVersions records "versions"."""
    box: dict[str, Any] = {"events": [], "gates": {}, "early": set()}
    groups, versions = REGISTRY.get(DESCRIBE_GROUPS), REGISTRY.get(API_VERSIONS)

    def describe(ctx: Any, req: Any) -> Any:
        group = req.groups[0]
        box["events"].append(f"start {group}")
        gate = box["gates"].get(group)
        if gate is None:
            return _answer(group)
        if group in box["early"]:
            ctx.took_effect()

        async def parked() -> Any:
            await gate.wait()
            box["events"].append(f"effect {group}")
            return _answer(group)
        return parked()

    def api(ctx: Any, req: Any) -> Any:
        box["events"].append("versions")
        return versions.handler(ctx, req)

    monkeypatch.setitem(REGISTRY._entries, DESCRIBE_GROUPS,
                        ApiEntry(DESCRIBE_GROUPS, groups.min_version, groups.max_version, describe))
    monkeypatch.setitem(REGISTRY._entries, API_VERSIONS,
                        ApiEntry(API_VERSIONS, versions.min_version, versions.max_version, api))
    return box


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_request_behind_one_that_answers_later_is_not_dispatched_until_that_one_is_done(handlers):
    async def scenario() -> None:
        handlers["gates"]["g1"] = gate = asyncio.Event()
        conn, transport = connect()
        conn.data_received(encode_request(describe_groups("g1"), 5, 1, "t")
                           + encode_request(describe_groups("g2"), 5, 2, "t")
                           + encode_request(api_versions(), 3, 3, "t"))
        await _settle()
        assert handlers["events"] == ["start g1"] and transport.frames() == []
        gate.set()
        await _settle()
        assert handlers["events"] == ["start g1", "effect g1", "start g2", "versions"]
        first, second, third = transport.frames()
        assert decode_response(DescribeGroupsResponse, first, 5)[0] == 1
        assert decode_response(DescribeGroupsResponse, second, 5)[0] == 2
        assert decode_response(ApiVersionsResponse, third, 3)[0] == 3

    asyncio.run(scenario())


def test_a_request_that_took_effect_lets_the_next_ones_run_but_its_answer_still_leaves_first(handlers):
    async def scenario() -> None:
        handlers["gates"]["g1"] = gate = asyncio.Event()
        handlers["early"].add("g1")
        conn, transport = connect()
        conn.data_received(encode_request(describe_groups("g1"), 5, 1, "t")
                           + encode_request(api_versions(), 3, 2, "t"))
        await _settle()
        assert handlers["events"] == ["start g1", "versions"]
        assert transport.frames() == []   # the answer of the second waits for the first's
        gate.set()
        await _settle()
        first, second = transport.frames()
        assert decode_response(DescribeGroupsResponse, first, 5)[0] == 1
        assert decode_response(ApiVersionsResponse, second, 3)[0] == 2

    asyncio.run(scenario())


def test_requests_arriving_while_one_is_held_wait_and_then_run_in_the_order_they_came(handlers):
    async def scenario() -> None:
        handlers["gates"]["g1"] = gate1 = asyncio.Event()
        handlers["gates"]["g3"] = gate3 = asyncio.Event()
        conn, transport = connect()
        conn.data_received(encode_request(describe_groups("g1"), 5, 1, "t"))
        conn.data_received(encode_request(describe_groups("g2"), 5, 2, "t"))
        conn.data_received(encode_request(describe_groups("g3"), 5, 3, "t")
                           + encode_request(describe_groups("g4"), 5, 4, "t"))
        await _settle()
        assert handlers["events"] == ["start g1"]
        gate1.set()
        await _settle()
        assert handlers["events"] == ["start g1", "effect g1", "start g2", "start g3"]
        gate3.set()
        await _settle()
        assert handlers["events"][-2:] == ["effect g3", "start g4"]
        assert [decode_response(DescribeGroupsResponse, f, 5)[0] for f in transport.frames()] == [1, 2, 3, 4]

    asyncio.run(scenario())


def test_a_held_request_that_fails_still_releases_the_requests_behind_it(handlers, monkeypatch):
    groups = REGISTRY.get(DESCRIBE_GROUPS)
    events: list[str] = []

    def failing(ctx: Any, req: Any) -> Any:
        group = req.groups[0]
        events.append(group)

        async def boom() -> Any:
            await asyncio.sleep(0)
            raise RuntimeError("a bug")
        return boom() if group == "bad" else _answer(group)

    monkeypatch.setitem(REGISTRY._entries, DESCRIBE_GROUPS,
                        ApiEntry(DESCRIBE_GROUPS, groups.min_version, groups.max_version, failing))

    async def scenario() -> None:
        conn, transport = connect()
        conn.data_received(encode_request(describe_groups("bad"), 5, 1, "t")
                           + encode_request(describe_groups("good"), 5, 2, "t"))
        await _settle()
        assert events == ["bad", "good"]
        first, second = transport.frames()
        _, failed = decode_response(DescribeGroupsResponse, first, 5)
        assert failed.groups[0].error_code != 0
        assert decode_response(DescribeGroupsResponse, second, 5)[0] == 2

    asyncio.run(scenario())
