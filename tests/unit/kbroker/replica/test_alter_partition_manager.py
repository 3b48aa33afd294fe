"""The broker side of AlterPartition (Kafka's ``DefaultAlterPartitionManager``) against a
scripted controller: batching, one pending item per partition, retries, versions."""

from __future__ import annotations

import asyncio
import uuid

from kbroker.replica.alter_partition_manager import AlterPartitionManager, CommittedIsr
from wire import codec
from wire.error_codes import ErrorCode
from wire.messages import AlterPartitionRequest, AlterPartitionResponse

_RTopic = AlterPartitionResponse.TopicData  # type: ignore[attr-defined]
_RPartition = AlterPartitionResponse.PartitionData  # type: ignore[attr-defined]

T_ID = uuid.UUID(int=7)
DEADLINE_S = 60.0


class Controller:
    """Answers each request as told by ``script`` (called with the request and version):
    returns a response, raises a connection error, or waits on ``gate`` first."""

    def __init__(self) -> None:
        self.requests: list[tuple[AlterPartitionRequest, int]] = []
        self.gate: asyncio.Event | None = None
        self.failures: list[BaseException | int] = []  # consumed first: raise, or a top-level code
        self.skip: set[tuple[str, int]] = set()  # partitions left out of the next answer
        self.arrived = asyncio.Event()

    async def send(self, req: AlterPartitionRequest, version: int) -> AlterPartitionResponse:
        # Through the codec both ways, as over the wire.
        req = codec.decode(AlterPartitionRequest, codec.encode(req, version), version)
        self.requests.append((req, version))
        self.arrived.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.failures:
            f = self.failures.pop(0)
            if isinstance(f, BaseException):
                raise f
            return AlterPartitionResponse(error_code=f)
        topics = []
        for t in req.topics:
            name = t.topic_name if version < 2 else {T_ID: "t"}[t.topic_id]
            parts = []
            for p in t.partitions:
                if (name, p.partition_index) in self.skip:
                    self.skip.discard((name, p.partition_index))  # once
                    continue
                isr = p.new_isr if version < 3 else [b.broker_id for b in p.new_isr_with_epochs]
                parts.append(_RPartition(partition_index=p.partition_index, leader_id=req.broker_id,
                                         leader_epoch=p.leader_epoch, isr=isr,
                                         partition_epoch=p.partition_epoch + 1))
            topics.append(_RTopic(topic_name=t.topic_name, topic_id=t.topic_id, partitions=parts))
        resp = AlterPartitionResponse(topics=topics)
        return codec.decode(AlterPartitionResponse, codec.encode(resp, version), version)


def manager(ctrl: Controller, topic_id: uuid.UUID | None = T_ID,
            epochs: dict[int, int] | None = None) -> AlterPartitionManager:
    known = epochs or {}
    return AlterPartitionManager(1, lambda: 100, ctrl.send, lambda t: topic_id,
                                 epoch_of=lambda b: known.get(b, -1))


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(asyncio.wait_for(coro, DEADLINE_S))


def test_a_submit_is_answered_with_what_the_controller_committed():
    async def go() -> None:
        ctrl = Controller()
        m = manager(ctrl)
        got = await m.submit("t", 0, 3, [1, 2], 5)
        assert got == CommittedIsr(1, 3, [1, 2], 6)
        [(req, version)] = ctrl.requests
        assert (version, req.broker_id, req.broker_epoch) == (2, 1, 100)
        assert req.topics[0].topic_id == T_ID
        p = req.topics[0].partitions[0]
        assert (p.partition_index, p.leader_epoch, p.new_isr, p.partition_epoch) == (0, 3, [1, 2], 5)
        assert m.pending() == []
    run(go())


def test_a_second_submit_for_a_pending_partition_is_not_attempted():
    async def go() -> None:
        ctrl = Controller()
        ctrl.gate = asyncio.Event()
        m = manager(ctrl)
        first = asyncio.ensure_future(m.submit("t", 0, 3, [1, 2], 5))
        await ctrl.arrived.wait()
        assert await m.submit("t", 0, 3, [1], 5) == ErrorCode.OPERATION_NOT_ATTEMPTED
        ctrl.gate.set()
        assert (await first).isr == [1, 2]
    run(go())


def test_items_queued_while_a_request_is_in_flight_go_together_in_the_next_one():
    async def go() -> None:
        ctrl = Controller()
        ctrl.gate = asyncio.Event()
        m = manager(ctrl)
        a = asyncio.ensure_future(m.submit("t", 0, 1, [1, 2], 0))
        await ctrl.arrived.wait()
        b = asyncio.ensure_future(m.submit("t", 1, 1, [1, 3], 0))
        c = asyncio.ensure_future(m.submit("t", 2, 1, [1], 0))
        await asyncio.sleep(0)
        assert len(ctrl.requests) == 1  # one request in flight at a time
        ctrl.gate.set()
        results = await asyncio.gather(a, b, c)
        assert [r.isr for r in results] == [[1, 2], [1, 3], [1]]
        assert [sorted(p.partition_index for t in r.topics for p in t.partitions)
                for r, _ in ctrl.requests] == [[0], [1, 2]]
    run(go())


def test_a_top_level_error_or_a_lost_connection_retries_every_pending_item():
    async def go() -> None:
        ctrl = Controller()
        ctrl.failures = [ErrorCode.NOT_CONTROLLER, ConnectionRefusedError(), ErrorCode.STALE_BROKER_EPOCH]
        m = manager(ctrl)
        got = await m.submit("t", 0, 3, [1, 2], 5)
        assert got == CommittedIsr(1, 3, [1, 2], 6)
        assert len(ctrl.requests) == 4
        assert all(r == ctrl.requests[0][0] for r, _ in ctrl.requests)
    run(go())


def test_a_partition_left_out_of_the_answer_is_sent_again_and_the_others_complete():
    async def go() -> None:
        ctrl = Controller()
        ctrl.skip = {("t", 1)}
        m = manager(ctrl)
        a = asyncio.ensure_future(m.submit("t", 0, 1, [1, 2], 0))
        b = asyncio.ensure_future(m.submit("t", 1, 1, [1, 3], 0))
        assert (await a).isr == [1, 2]
        assert (await b).isr == [1, 3]
        sent = [sorted(p.partition_index for t in r.topics for p in t.partitions) for r, _ in ctrl.requests]
        assert sent == [[0], [1], [1]]
    run(go())


def test_partition_errors_are_returned_as_error_codes():
    async def go() -> None:
        async def refuse(req: AlterPartitionRequest, version: int) -> AlterPartitionResponse:
            return AlterPartitionResponse(topics=[_RTopic(topic_id=T_ID, partitions=[
                _RPartition(partition_index=0, error_code=ErrorCode.INVALID_UPDATE_VERSION)])])
        m = AlterPartitionManager(1, lambda: 100, refuse, lambda t: T_ID)
        assert await m.submit("t", 0, 3, [1], 4) == ErrorCode.INVALID_UPDATE_VERSION
        assert m.pending() == []
    run(go())


def test_v3_is_used_with_every_members_broker_epoch_and_v1_without_a_topic_id():
    async def go() -> None:
        ctrl = Controller()
        await manager(ctrl, epochs={1: 11, 2: 22}).submit("t", 0, 3, [1, 2], 5)
        req, version = ctrl.requests[-1]
        assert version == 3
        assert [(b.broker_id, b.broker_epoch) for b in req.topics[0].partitions[0].new_isr_with_epochs] == [
            (1, 11), (2, 22)]
        await manager(ctrl, epochs={1: 11}).submit("t", 0, 3, [1, 2], 5)
        assert ctrl.requests[-1][1] == 2  # broker 2's epoch unknown
        await manager(ctrl, topic_id=None).submit("t", 0, 3, [1, 2], 5)
        req, version = ctrl.requests[-1]
        assert (version, req.topics[0].topic_name) == (1, "t")
    run(go())


def test_close_answers_every_unanswered_submit_with_operation_not_attempted():
    async def go() -> None:
        ctrl = Controller()
        ctrl.gate = asyncio.Event()
        m = manager(ctrl)
        a = asyncio.ensure_future(m.submit("t", 0, 1, [1, 2], 0))
        await ctrl.arrived.wait()
        m.close()
        assert await a == ErrorCode.OPERATION_NOT_ATTEMPTED
        assert await m.submit("t", 0, 1, [1, 2], 0) == ErrorCode.OPERATION_NOT_ATTEMPTED
    run(go())
