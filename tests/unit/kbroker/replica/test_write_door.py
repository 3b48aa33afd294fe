"""The one door for writes (kbroker/replica/appends.py): every leader append of kbroker/ goes
through ``append_records``, which checks existence, internal topics and leadership in Kafka's
order, runs the caller's check, appends in entry order and waits for acks=all only where
partitions are replicated."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

from kbroker.replica.appends import append_records
from kbroker.replica.fetch_waiters import FetchWaiters
from kbroker.replica.local_replicas import LocalReplicas
from kbroker.replica.partition import Partition
from log.producer_state import AppendOrigin
from tests.unit.log.helpers import open_log
from wire.error_codes import ErrorCode
from wire.record_batch import build_batch

KBROKER = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists()) / "kbroker"
DOOR = KBROKER / "replica" / "appends.py"


def _batch(*values: bytes) -> memoryview:
    return memoryview(bytearray(build_batch([(None, v, [], 1_700_000_000_000) for v in values])))


def _partitions(tmp_path: Path, *tps: tuple[str, int]) -> dict[tuple[str, int], Partition]:
    waiters = FetchWaiters()
    return {tp: Partition(tp[0], tp[1], open_log(tmp_path, name=f"{tp[0]}-{tp[1]}"), waiters) for tp in tps}


def test_no_module_but_the_door_appends_to_a_partition_as_leader() -> None:
    callers = []
    for path in sorted(KBROKER.rglob("*.py")):
        if path == DOOR:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "append_records_as_leader" and \
                    not isinstance(getattr(node, "ctx", None), ast.Store):
                callers.append(f"{path.relative_to(KBROKER)}:{node.lineno}")
    # partition.py defines it (a FunctionDef, not an Attribute); nothing else calls it
    assert callers == []


def test_the_scan_sees_a_call_past_the_door() -> None:
    tree = ast.parse("def f(p, r):\n    return p.append_records_as_leader(r, -1)\n")
    assert any(isinstance(n, ast.Attribute) and n.attr == "append_records_as_leader" for n in ast.walk(tree))


def test_entries_are_appended_in_order_and_each_gets_its_offsets(tmp_path: Path) -> None:
    parts = _partitions(tmp_path, ("t", 0), ("t", 1))
    replicas = LocalReplicas(lambda t, i: parts.get((t, i)))
    appends = replicas.append_records([(("t", 0), _batch(b"a", b"b")), (("t", 1), _batch(b"c")),
                                       (("t", 0), _batch(b"d"))], 1)
    assert [(r.error, r.info.first_offset, r.info.last_offset) for r in appends.results] == [
        (ErrorCode.NONE, 0, 1), (ErrorCode.NONE, 0, 0), (ErrorCode.NONE, 2, 2)]
    assert not appends.waits and parts[("t", 0)].log_end_offset == 3


def test_a_missing_partition_an_internal_topic_and_a_refused_check_append_nothing(tmp_path: Path) -> None:
    parts = _partitions(tmp_path, ("t", 0), ("__consumer_offsets", 0))
    replicas = LocalReplicas(lambda t, i: parts.get((t, i)))
    seen: list[Any] = []

    def check(tp: tuple[str, int], partition: Partition, records: memoryview) -> ErrorCode:
        seen.append(tp)
        return ErrorCode.INVALID_TXN_STATE

    appends = replicas.append_records([(("t", 9), _batch(b"x")), (("__consumer_offsets", 0), _batch(b"x")),
                                       (("t", 0), _batch(b"x"))], -1, AppendOrigin.CLIENT, check)
    assert [r.error for r in appends.results] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                  ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.INVALID_TXN_STATE]
    assert seen == [("t", 0)]   # the check runs only on a partition that passed the door's own checks
    assert all(p.log_end_offset == 0 for p in parts.values())


def test_a_coordinator_may_append_to_an_internal_topic(tmp_path: Path) -> None:
    parts = _partitions(tmp_path, ("__consumer_offsets", 0))
    appends = LocalReplicas(lambda t, i: parts.get((t, i))).append_records(
        [(("__consumer_offsets", 0), _batch(b"x"))], -1, AppendOrigin.COORDINATOR)
    assert appends.results[0].error == ErrorCode.NONE


def test_an_unknown_partition_comes_before_the_internal_topic_and_leadership_after(tmp_path: Path) -> None:
    # Kafka: KafkaApis answers a topic its metadata lacks UNKNOWN_TOPIC_OR_PARTITION, then
    # appendToLocalLog refuses an internal topic, then getPartitionOrException a non-leader
    parts = _partitions(tmp_path, ("__transaction_state", 0), ("t", 0))
    known = {("__transaction_state", 0), ("t", 0), ("t", 1)}

    def leader_error(topic: str, index: int) -> ErrorCode | None:
        if (topic, index) not in known:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return None if (topic, index) == ("t", 0) else ErrorCode.NOT_LEADER_OR_FOLLOWER

    appends = append_records([(("__transaction_state", 5), _batch(b"x")), (("__transaction_state", 0), _batch(b"x")),
                              (("t", 1), _batch(b"x")), (("t", 0), _batch(b"x"))], 1, AppendOrigin.CLIENT,
                             partition_of=lambda t, i: parts.get((t, i)), leader_error=leader_error, wait=None)
    assert [r.error for r in appends.results] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE]


def test_a_log_refusal_keeps_its_error_and_the_records_that_failed(tmp_path: Path) -> None:
    parts = _partitions(tmp_path, ("t", 0))
    broken = bytearray(_batch(b"x"))
    broken[-1] ^= 0xFF   # the CRC no longer matches
    [result] = LocalReplicas(lambda t, i: parts.get((t, i))).append_records([(("t", 0), memoryview(broken))], 1).results
    assert result.error == ErrorCode.CORRUPT_MESSAGE and result.refusal is not None and result.info is None


def test_acks_all_on_replicas_waits_for_the_highest_offset_of_each_partition(tmp_path: Path) -> None:
    parts = _partitions(tmp_path, ("t", 0), ("t", 1))
    waited: list[tuple[dict[tuple[str, int], int], int]] = []

    async def wait(required: dict[tuple[str, int], int], timeout_ms: int) -> dict[tuple[str, int], ErrorCode]:
        waited.append((dict(required), timeout_ms))
        return {("t", 1): ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND}

    appends = append_records([(("t", 0), _batch(b"a")), (("t", 0), _batch(b"b", b"c")), (("t", 1), _batch(b"d"))], -1,
                             AppendOrigin.CLIENT, partition_of=lambda t, i: parts.get((t, i)),
                             leader_error=lambda t, i: None, wait=wait)
    assert appends.waits
    results = asyncio.run(appends.replicated(1234))
    assert waited == [({("t", 0): 3, ("t", 1): 1}, 1234)]
    assert [r.error for r in results] == [ErrorCode.NONE, ErrorCode.NONE, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND]
    assert results[2].info is not None and results[2].info.first_offset == 0   # its offsets are kept


def test_acks_1_never_waits_even_on_replicas(tmp_path: Path) -> None:
    parts = _partitions(tmp_path, ("t", 0))

    async def wait(required: Any, timeout_ms: int) -> Any:
        raise AssertionError("acks=1 waited")

    appends = append_records([(("t", 0), _batch(b"a"))], 1, AppendOrigin.CLIENT,
                             partition_of=lambda t, i: parts.get((t, i)), leader_error=lambda t, i: None, wait=wait)
    assert not appends.waits and asyncio.run(appends.replicated(10))[0].error == ErrorCode.NONE
