"""The marker sender (kbroker/coordinators/txn_marker_sender.py) with a scripted WriteTxnMarkers broker
side: one request per round for all the jobs of a leader, retries until every partition
has its marker, a deleted topic counts as written, a fenced answer drops the job, and the
coordinator logs Complete* once the last marker is in."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from kbroker.coordinators.txn_marker_sender import TxnMarkerSender
from tests.unit.txn.helpers import Harness
from wire.error_codes import ErrorCode as E
from wire.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse

DEADLINE_S = 60


class FakeState:
    def __init__(self, topics: dict[str, int]) -> None:
        self.node_id = 1
        self.topics = dict(topics)

    def partition(self, topic: str, index: int) -> Any:
        count = self.topics.get(topic)
        return object() if count is not None and index < count else None


class ScriptedWriter:
    """Answers each partition with the next code of its script (NONE once it runs out)."""

    def __init__(self, script: dict[tuple[str, int], list[E]]) -> None:
        self.script = {tp: list(codes) for tp, codes in script.items()}
        self.requests: list[WriteTxnMarkersRequest] = []

    def __call__(self, req: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
        self.requests.append(req)
        markers = []
        for m in req.markers:
            topics = []
            for t in m.topics:
                parts = []
                for p in t.partition_indexes:
                    codes = self.script.get((t.name, p), [])
                    parts.append(WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult(
                        partition_index=p, error_code=codes.pop(0) if codes else E.NONE))
                topics.append(WriteTxnMarkersResponse.WritableTxnMarkerTopicResult(name=t.name, partitions=parts))
            markers.append(WriteTxnMarkersResponse.WritableTxnMarkerResult(producer_id=m.producer_id, topics=topics))
        return WriteTxnMarkersResponse(markers=markers)


def _run(h: Harness, state: FakeState, writer: ScriptedWriter, scenario, cluster: Any = None) -> None:
    """``cluster``: the sender's ``ClusterLinks`` (None: a single node)."""
    async def main() -> None:
        sender = TxnMarkerSender(state, h.c, local_writer=writer)  # type: ignore[arg-type]
        sender.cluster = cluster
        h.c._send_markers = sender.add
        try:
            await asyncio.wait_for(scenario(sender), DEADLINE_S)
        finally:
            sender.close()

    asyncio.run(main())


async def _until(predicate) -> None:
    while not predicate():
        await asyncio.sleep(0.01)


def test_two_transactions_to_one_leader_share_one_request_and_complete():
    h = Harness()
    state = FakeState({"t": 2})
    writer = ScriptedWriter({})
    a = h.init("a")
    b = h.init("b")

    async def scenario(sender: TxnMarkerSender) -> None:
        h.defer_appends = False
        for txn_id, (_, pid, epoch) in (("a", a), ("b", b)):
            assert h.add(txn_id, pid, epoch, ("t", 0), ("t", 1)) is E.NONE
        # both prepares are logged before the sender's first round runs
        assert h.end("a", a[1], a[2], True) is E.NONE
        assert h.end("b", b[1], b[2], False) is E.NONE
        await _until(lambda: h.state("a") == "CompleteCommit" and h.state("b") == "CompleteAbort")

    _run(h, state, writer, scenario)
    assert len(writer.requests) == 1
    [req] = writer.requests
    assert sorted((m.producer_id, m.transaction_result, m.coordinator_epoch,
                   [(t.name, t.partition_indexes) for t in m.topics]) for m in req.markers) == sorted([
        (a[1], True, 0, [("t", [0, 1])]), (b[1], False, 0, [("t", [0, 1])])])


def test_a_marker_refused_with_not_leader_is_retried_until_written():
    h = Harness()
    state = FakeState({"t": 2})
    writer = ScriptedWriter({("t", 1): [E.NOT_LEADER_OR_FOLLOWER, E.NOT_ENOUGH_REPLICAS]})
    _, pid, epoch = h.init("a")

    async def scenario(sender: TxnMarkerSender) -> None:
        h.add("a", pid, epoch, ("t", 0), ("t", 1))
        h.end("a", pid, epoch, True)
        await _until(lambda: h.state("a") == "CompleteCommit")

    _run(h, state, writer, scenario)
    sent = [[(t.name, t.partition_indexes) for t in r.markers[0].topics] for r in writer.requests]
    assert sent == [[("t", [0, 1])], [("t", [1])], [("t", [1])]]


def test_a_deleted_topic_needs_no_marker_and_a_fenced_answer_drops_the_job():
    h = Harness()
    state = FakeState({"t": 1, "gone": 1})
    writer = ScriptedWriter({("t", 0): [E.TRANSACTION_COORDINATOR_FENCED]})
    _, pid_a, ea = h.init("a")
    _, pid_b, eb = h.init("b")

    async def scenario(sender: TxnMarkerSender) -> None:
        h.add("a", pid_a, ea, ("gone", 0))
        del state.topics["gone"]
        h.end("a", pid_a, ea, True)
        await _until(lambda: h.state("a") == "CompleteCommit")
        h.add("b", pid_b, eb, ("t", 0))
        h.end("b", pid_b, eb, False)
        await _until(lambda: len(writer.requests) == 1 and not sender.jobs)

    _run(h, state, writer, scenario)
    assert h.state("b") == "PrepareAbort"  # the newer coordinator finishes it
    assert [[(t.name, t.partition_indexes) for t in r.markers[0].topics] for r in writer.requests] == [
        [("t", [0])]]


def test_markers_wait_while_the_partition_has_no_leader_in_cluster_mode():
    h = Harness()
    state = FakeState({"t": 1})
    leaders = {("t", 0): -1}
    cluster = SimpleNamespace(cache=SimpleNamespace(
        topic=lambda name: object() if name == "t" else None,
        leader=lambda topic, index: leaders[(topic, index)]))
    writer = ScriptedWriter({})
    _, pid, epoch = h.init("a")

    async def scenario(sender: TxnMarkerSender) -> None:
        h.add("a", pid, epoch, ("t", 0))
        h.end("a", pid, epoch, True)
        await asyncio.sleep(0.3)
        assert writer.requests == [] and h.state("a") == "PrepareCommit"
        leaders[("t", 0)] = 1  # this broker leads it now
        await _until(lambda: h.state("a") == "CompleteCommit")

    _run(h, state, writer, scenario, cluster)
    assert len(writer.requests) == 1
