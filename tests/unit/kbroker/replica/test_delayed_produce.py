"""kbroker/replica/delayed_produce.py: acks=all produces parked until their partitions settle."""

from __future__ import annotations

import asyncio

from kbroker.replica.delayed_produce import DelayedProduces
from wire.error_codes import ErrorCode

A, B = ("t", 0), ("t", 1)


class FakePartitions:
    """HW per partition and who leads; check() is Partition.checkEnoughReplicasReachOffset."""

    def __init__(self) -> None:
        self.hw = {A: 0, B: 0}
        self.leading = {A: True, B: True}
        self.isr_ok = {A: True, B: True}

    def check(self, tp, required):
        if not self.leading[tp]:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.hw[tp] < required:
            return False, ErrorCode.NONE
        return True, ErrorCode.NONE if self.isr_ok[tp] else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_a_produce_whose_offsets_are_replicated_already_answers_at_once():
    async def go():
        parts = FakePartitions()
        parts.hw[A] = 5
        purgatory = DelayedProduces(parts.check)
        return await purgatory.wait({A: 5}, 60_000), len(purgatory)
    assert asyncio.run(go()) == ({A: ErrorCode.NONE}, 0)


def test_each_partition_settles_on_its_own_event_and_the_produce_answers_when_all_have():
    async def go():
        parts = FakePartitions()
        purgatory = DelayedProduces(parts.check)
        task = asyncio.ensure_future(purgatory.wait({A: 3, B: 7}, 60_000))
        await asyncio.sleep(0)
        parts.hw[A] = 3
        purgatory.try_complete(A)
        await asyncio.sleep(0)
        assert not task.done()
        parts.hw[B] = 6
        purgatory.try_complete(B)          # not far enough yet
        await asyncio.sleep(0)
        assert not task.done()
        parts.leading[B] = False            # leadership moved
        purgatory.try_complete(B)
        result = await task
        return result, len(purgatory), purgatory.watched()
    result, parked, watched = asyncio.run(go())
    assert result == {A: ErrorCode.NONE, B: ErrorCode.NOT_LEADER_OR_FOLLOWER}
    assert parked == 0 and watched == []


def test_an_isr_shrunk_below_min_isr_answers_not_enough_replicas_after_append():
    async def go():
        parts = FakePartitions()
        purgatory = DelayedProduces(parts.check)
        task = asyncio.ensure_future(purgatory.wait({A: 1}, 60_000))
        await asyncio.sleep(0)
        parts.isr_ok[A] = False
        parts.hw[A] = 1
        purgatory.try_complete(A)
        return await task
    assert asyncio.run(go()) == {A: ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND}


def test_what_has_not_settled_at_the_timeout_is_request_timed_out():
    async def go():
        parts = FakePartitions()
        parts.hw[B] = 2
        purgatory = DelayedProduces(parts.check)
        result = await purgatory.wait({A: 1, B: 2}, 10)
        return result, len(purgatory)
    assert asyncio.run(go()) == ({A: ErrorCode.REQUEST_TIMED_OUT, B: ErrorCode.NONE}, 0)
