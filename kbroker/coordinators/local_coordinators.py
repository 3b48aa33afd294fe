"""``LocalCoordinators``: the ``CoordinatorLocator`` port of a single node (kbroker/server/services.py).

A single node coordinates every group and every transactional id itself: FindCoordinator
answers this broker's advertised address on the request's listener.  The internal topic
behind the coordinator is created on the first lookup, as Kafka does: its partitions are
opened off the event loop (kbroker/replica/topic_creation.py) and the answer waits for them.  Once
``__consumer_offsets`` exists a group lookup is answered at once (no awaitable), so the
connection does not hold its later requests for it; a transactional id's lookup always
awaits the host's ``create_off_loop`` (which returns at once when the topic exists;
kbroker/coordinators/internal_topic.py).

ZooKeeper mode's implementation is kbroker/zk/zk_coordinators.py.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from kbroker.coordinators.group_service import GroupService
    from kbroker.coordinators.txn_service import TxnService

__all__ = ["LocalCoordinators"]

# (error, message, node id, host, port): one key's FindCoordinator answer
Answer = tuple[ErrorCode, "str | None", int, str, int]


class _Broker(Protocol):
    """What ``LocalCoordinators`` reads of the broker: its id and advertised addresses."""

    @property
    def node_id(self) -> int: ...

    def advertised_address(self, listener_name: str | None = None) -> tuple[str, int]: ...


class LocalCoordinators:
    __slots__ = ("_broker", "_groups", "_txns")

    def __init__(self, broker: _Broker, groups: GroupService, txns: TxnService) -> None:
        self._broker = broker
        self._groups = groups
        self._txns = txns

    def group_coordinator(self, group_id: str, listener_name: str) -> Answer | Awaitable[Answer]:
        if not self._groups.host.exists():
            return self._group_once_created(listener_name)
        return self._group_here(listener_name)

    async def _group_once_created(self, listener_name: str) -> Answer:
        await self._groups.host.create_off_loop()
        return self._group_here(listener_name)

    def _group_here(self, listener_name: str) -> Answer:
        host, port = self._broker.advertised_address(listener_name)
        self._groups.ensure_topic()
        return ErrorCode.NONE, None, self._broker.node_id, host, port

    async def transaction_coordinator(self, transactional_id: str, listener_name: str) -> Answer:
        await self._txns.host.create_off_loop()
        host, port = self._broker.advertised_address(listener_name)
        return ErrorCode.NONE, None, self._broker.node_id, host, port
