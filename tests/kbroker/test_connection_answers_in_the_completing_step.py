"""kbroker.connection: a parked handler's answer (a Fetch woken by an append) is written in
the same event-loop step that completes the handler, not in a done-callback one step
later: between those two steps the loop would first handle whatever I/O had arrived (a
producer's next Produce, its appends), and the woken Fetch's answer waited behind it
(issue 15, the end-to-end p99 at 10,000 records/s; bench/results/profile.md)."""

from __future__ import annotations

import asyncio

from tests.kbroker.test_connection_close_in_turn import handlers  # noqa: F401  (the fixture)
from tests.kbroker.test_connection_handler_errors import connect, describe_groups
from wire.headers import decode_response, encode_request
from wire.messages import DescribeGroupsResponse


def test_a_woken_handler_is_answered_before_callbacks_queued_after_its_wake_up_run(handlers):  # noqa: F811
    async def scenario() -> None:
        handlers["gate"] = gate = asyncio.Event()
        conn, transport = connect()
        conn.data_received(encode_request(describe_groups("parked"), 5, 1, "t"))
        for _ in range(3):   # the handler's task starts and parks on the gate
            await asyncio.sleep(0)
        assert transport.frames() == []
        frames_seen: list[int] = []
        gate.set()   # queues the parked task's next step
        # queued after that step: what I/O read in the next loop iteration would be
        asyncio.get_running_loop().call_soon(lambda: frames_seen.append(len(transport.frames())))
        for _ in range(10):
            await asyncio.sleep(0)
        assert frames_seen == [1]
        [only] = transport.frames()
        corr, resp = decode_response(DescribeGroupsResponse, only, 5)
        assert (corr, resp.groups[0].group_id) == (1, "parked")

    asyncio.run(scenario())
