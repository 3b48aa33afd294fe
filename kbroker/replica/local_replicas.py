"""``LocalReplicas``: the ``Replicas`` port of a single node (kbroker/server/services.py).

A single node is every partition's only replica, its leader and its whole ISR: it may serve
every partition it holds as leader, follows none, and an acks=all append is acknowledged by
the append itself (the high watermark moves with it, kbroker/replica/partition.py), so there
is nothing to wait for.  Writes go through the one door, kbroker/replica/appends.py.
Cluster mode's implementation is kbroker/replica/replica_manager.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kbroker.replica.appends import AppendCheck, Appends, append_records
from log.producer_state import AppendOrigin
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from kbroker.replica.partition import Partition

__all__ = ["LocalReplicas"]

TopicPartition = tuple[str, int]


def _no_partition(topic: str, index: int) -> Partition | None:
    return None


class LocalReplicas:
    __slots__ = ("_partition_of",)

    def __init__(self, partition_of: Callable[[str, int], Partition | None] = _no_partition) -> None:
        """``partition_of``: the partition store's lookup (``BrokerState.partition``)."""
        self._partition_of = partition_of

    @property
    def replicated(self) -> bool:
        return False

    @property
    def reads_from_followers(self) -> bool:
        return False   # no follower to send a consumer to (KIP-392)

    def is_follower(self, replica_id: int) -> bool:
        return False   # no followers: a replica id is read as a consumer's

    def leader_error(self, topic: str, index: int) -> ErrorCode | None:
        return None

    def follower_partition(self, topic: str, index: int) -> Partition | None:
        return None

    def append_records(self, entries: Sequence[tuple[TopicPartition, memoryview]], required_acks: int,
                       origin: AppendOrigin = AppendOrigin.CLIENT, check: AppendCheck | None = None) -> Appends:
        return append_records(entries, required_acks, origin, partition_of=self._partition_of,
                              leader_error=self.leader_error, wait=None, check=check)

    async def wait_for_acks(self, required: dict[TopicPartition, int],
                            timeout_ms: int) -> dict[TopicPartition, ErrorCode]:
        return dict.fromkeys(required, ErrorCode.NONE)
