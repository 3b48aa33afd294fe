"""``ZkController``: the ``Controller`` port in ZooKeeper mode (kbroker/server/services.py).

Kafka does not forward these requests: clients send them to the controller, and any other
broker answers NOT_CONTROLLER.  So each operation first waits for this broker's controller
runner to be active (a failover in progress, up to the given time; kbroker/zk/controller_runner.py
``wait_ready``), then runs it there.  An election answers NONE for a partition only once this
broker's metadata cache shows the elected leader (Kafka's ``DelayedElectLeader``;
REQUEST_TIMED_OUT if the time passes first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cluster.controller import ElectionOutcome, ElectionType
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from kbroker.metadata.metadata_cache import MetadataCache
    from kbroker.zk.controller_runner import ControllerRunner

__all__ = ["ZkController"]

TopicPartition = tuple[str, int]


class ZkController:
    def __init__(self, runner: ControllerRunner, cache: MetadataCache) -> None:
        self._runner = runner
        self._cache = cache

    async def elect_leaders(self, requested: list[TopicPartition] | None, election_type: ElectionType,
                            timeout_s: float) -> dict[TopicPartition, ElectionOutcome]:
        cache = self._cache
        if requested is None:
            requested = [(t, p) for t in cache.topic_names() for p in sorted(cache.topic(t).partitions)]
        partitions = frozenset(requested)
        if not await self._runner.wait_ready(timeout_s):
            return {tp: ElectionOutcome(ErrorCode.NOT_CONTROLLER) for tp in sorted(partitions)}
        outcomes = dict(await self._runner.elect_leaders(partitions, election_type))
        expected = {tp: o.leader for tp, o in outcomes.items() if o.error_code == ErrorCode.NONE}
        if expected:
            def shown() -> bool:
                return all(cache.leader(*tp) == leader for tp, leader in expected.items())

            if not await cache.wait_for(shown, timeout_s):
                for tp, leader in expected.items():
                    if cache.leader(*tp) != leader:
                        outcomes[tp] = ElectionOutcome(ErrorCode.REQUEST_TIMED_OUT)
        return dict(sorted(outcomes.items()))

    async def alter_partition_reassignments(self, targets: dict[TopicPartition, tuple[int, ...] | None],
                                            timeout_s: float
                                            ) -> tuple[ErrorCode, dict[TopicPartition, tuple[int, str | None]]]:
        if not await self._runner.wait_ready(timeout_s):
            return ErrorCode.NOT_CONTROLLER, {}
        top, answered = await self._runner.alter_partition_reassignments(targets)
        return ErrorCode(top), answered

    async def list_partition_reassignments(self, partitions: frozenset[TopicPartition] | None, timeout_s: float
                                           ) -> tuple[ErrorCode, dict[TopicPartition, Any]]:
        if not await self._runner.wait_ready(timeout_s):
            return ErrorCode.NOT_CONTROLLER, {}
        top, listed = await self._runner.list_partition_reassignments(partitions)
        return ErrorCode(top), listed
