"""Background tasks end before the event loop closes (issue 28): a task still pending when
the loop closes is destroyed ("Task was destroyed but it is pending!") and its coroutine,
closed later, calls into the closed loop ("RuntimeError: Event loop is closed").

The controller's broker links (kbroker/interbroker/broker_channel.py) were left so when a link was
closed just as its response arrived: Python 3.11's ``asyncio.wait_for`` returns the result
and drops the cancellation (gh-86296), and the link's loop went back to waiting on its
queue, for ever.  These tests reproduce that race deterministically (the fake round trip
wakes the test before ``wait_for`` resumes), and check that a stopped single-node broker
leaves no task behind.
"""

from __future__ import annotations

import asyncio

from kbroker.app.broker import Broker
from kbroker.interbroker import inter_broker_client
from kbroker.interbroker.broker_channel import BrokerChannel, BrokerLink
from kbroker.runtime.tasks import TaskSet, cancel_and_wait, finish_loop
from wire.messages import ApiVersionsRequest


class _Connection:
    def __init__(self, arrived: asyncio.Event) -> None:
        self.arrived = arrived

    async def call(self, *args: object) -> str:
        self.arrived.set()   # wakes the test first: it closes the link before wait_for resumes
        return "answer"

    def close(self) -> None:
        pass


def _fake_peer(monkeypatch, arrived: asyncio.Event) -> None:
    async def open_connection(host: str, port: int, client_id: str) -> _Connection:
        return _Connection(arrived)

    monkeypatch.setattr(inter_broker_client, "open_connection", open_connection)


def test_a_link_closed_as_its_response_arrives_ends_its_task(monkeypatch):
    async def main() -> tuple[bool, bool]:
        arrived = asyncio.Event()
        _fake_peer(monkeypatch, arrived)
        link = BrokerLink(2, "127.0.0.1", 1, "test")
        fut = link.send(ApiVersionsRequest(), 0)
        await arrived.wait()
        link.close()   # the cancellation wait_for will swallow
        await asyncio.wait({link.task}, timeout=2.0)
        ended = link.task.done()
        if not ended:   # (the old behaviour: stuck in queue.get(); do not leak it)
            link.task.cancel()
        return ended, fut.done()

    ended, answered = asyncio.run(main())
    assert ended, "the link's task went back to its queue after close()"
    assert answered   # the request in flight is settled (cancelled), not left pending


def test_a_stopped_channel_waits_for_its_links_and_makes_no_new_one(monkeypatch):
    async def main() -> tuple[list[bool], int, object]:
        arrived = asyncio.Event()
        _fake_peer(monkeypatch, arrived)
        channel = BrokerChannel("test")
        channel.update_brokers({1: ("127.0.0.1", 1), 2: ("127.0.0.1", 2)})
        tasks = [link.task for link in channel.links.values()]
        channel.send(1, ApiVersionsRequest(), 0)
        await arrived.wait()
        await channel.aclose()
        channel.update_brokers({3: ("127.0.0.1", 3)})   # a late update from its owner
        return [t.done() for t in tasks], len(channel.links), channel.send(3, ApiVersionsRequest(), 0)

    done, links, sent = asyncio.run(main())
    assert done == [True, True]
    assert links == 0 and sent is None


def test_cancel_and_wait_cancels_again_a_task_that_swallowed_the_first_cancellation():
    async def main() -> bool:
        turns = 0

        async def stubborn() -> None:
            nonlocal turns
            while True:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    turns += 1
                    if turns == 1:
                        continue   # what a 3.11 wait_for does to one cancellation
                    raise

        task = asyncio.ensure_future(stubborn())
        await asyncio.sleep(0)
        left = await cancel_and_wait([task], timeout_s=5.0)
        return task.cancelled() and not left and turns == 2

    assert asyncio.run(main())


def test_a_closed_task_set_starts_nothing_and_ends_what_it_started():
    async def main() -> tuple[bool, object]:
        tasks = TaskSet()
        started = tasks.spawn(asyncio.sleep(10))
        await tasks.aclose()
        late = tasks.spawn(asyncio.sleep(10))
        return started is not None and started.cancelled(), late

    cancelled, late = asyncio.run(main())
    assert cancelled and late is None


def test_a_stopped_single_node_broker_leaves_no_task_on_its_loop(tmp_path):
    async def main() -> list[str]:
        broker = Broker({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)})
        await broker.start_async()
        await broker.stop_async()
        me = asyncio.current_task()
        return sorted(repr(t.get_coro()) for t in asyncio.all_tasks() if t is not me and not t.done())

    assert asyncio.run(main()) == []


def test_finish_loop_names_and_ends_a_forgotten_task(caplog):
    async def main() -> bool:
        async def forgotten() -> None:
            await asyncio.Event().wait()

        task = asyncio.ensure_future(forgotten())
        await asyncio.sleep(0)
        await finish_loop(timeout_s=5.0)
        return task.cancelled()

    with caplog.at_level("WARNING", logger="kbroker.tasks"):
        assert asyncio.run(main())
    assert any("still running after the shutdown" in r.getMessage() and "forgotten" in r.getMessage()
               for r in caplog.records)
