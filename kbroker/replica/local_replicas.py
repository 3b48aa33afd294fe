"""``LocalReplicas``: the ``Replicas`` port of a single node (kbroker/server/services.py).

A single node is every partition's only replica, its leader and its whole ISR: it may serve
every partition it holds as leader, follows none, and an acks=all append is acknowledged by
the append itself (the high watermark moves with it, kbroker/replica/partition.py), so the wait
returns at once.  Cluster mode's implementation is kbroker/replica/replica_manager.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from kbroker.replica.partition import Partition

__all__ = ["LocalReplicas"]

TopicPartition = tuple[str, int]


class LocalReplicas:
    __slots__ = ()

    @property
    def replicated(self) -> bool:
        return False

    def leader_error(self, topic: str, index: int) -> ErrorCode | None:
        return None

    def follower_partition(self, topic: str, index: int) -> Partition | None:
        return None

    async def wait_for_acks(self, required: dict[TopicPartition, int],
                            timeout_ms: int) -> dict[TopicPartition, ErrorCode]:
        return dict.fromkeys(required, ErrorCode.NONE)
