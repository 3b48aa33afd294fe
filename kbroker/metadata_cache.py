"""``MetadataCache``: the cluster as this broker knows it in cluster mode (Kafka's
``ZkMetadataCache``).

Fed only by the controller's requests (kbroker/handlers/inter_broker.py):

* UpdateMetadata replaces the live brokers (the request always lists all of them), sets the
  controller id and epoch, and upserts the partition states it carries; a partition with
  leader -2 (``LeaderDuringDelete``) is a deleted topic's and leaves the cache, and the
  topic with its last partition (``ZkMetadataCache.updateMetadata``).
* LeaderAndIsr carries this broker's own partitions; the cache does not take them (Kafka's
  cache also learns them only from the UpdateMetadata the controller sends with every
  LeaderAndIsr), the replica manager (``kbroker/replica_manager.py``) does.

Readers: Metadata, DescribeCluster, FindCoordinator and request routing (is this broker
the leader of a partition).  ``changed`` is an asyncio condition-like event: waiters (a
CreateTopics waiting for leaders, a DeleteTopics waiting for the topic to go) are woken
after every update and re-check their predicate.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

from cluster.election import LeaderAndIsr
from cluster.metadata_image import BrokerInfo, MetadataImage, PartitionInfo, TopicInfo
from cluster.znodes import EndPoint
from wire.messages import ZERO_UUID

__all__ = ["LEADER_DURING_DELETE", "MetadataCache"]

LEADER_DURING_DELETE = -2


class MetadataCache:
    def __init__(self) -> None:
        self.image = MetadataImage()
        self._waiters: set[asyncio.Future[None]] = set()

    # -- updates -----------------------------------------------------------------------

    def apply_update_metadata(self, req: object) -> list[tuple[str, int]]:
        """Apply an UpdateMetadataRequest (v6+ layout); returns the partitions it deleted."""
        image = self.image
        image.controller_id = req.controller_id  # type: ignore[attr-defined]
        image.controller_epoch = req.controller_epoch  # type: ignore[attr-defined]
        brokers: dict[int, BrokerInfo] = {}
        for b in req.live_brokers:  # type: ignore[attr-defined]
            endpoints = tuple(EndPoint(e.listener, e.host, e.port, _PROTOCOLS.get(e.security_protocol, "PLAINTEXT"))
                              for e in b.endpoints)
            brokers[b.id] = BrokerInfo(b.id, endpoints, b.rack)
        image.brokers = brokers
        deleted: list[tuple[str, int]] = []
        for t in req.topic_states:  # type: ignore[attr-defined]
            topic_id = None if t.topic_id == ZERO_UUID else t.topic_id
            for p in t.partition_states:
                if p.leader == LEADER_DURING_DELETE:
                    self._remove_partition(t.topic_name, p.partition_index)
                    deleted.append((t.topic_name, p.partition_index))
                    continue
                self._set_partition(t.topic_name, topic_id, p.partition_index, PartitionInfo(
                    replicas=tuple(p.replicas),
                    state=LeaderAndIsr(p.leader, p.leader_epoch, tuple(p.isr), 0, p.zk_version),
                    controller_epoch=p.controller_epoch))
        self._notify()
        return deleted

    def _set_partition(self, topic: str, topic_id: uuid.UUID | None, index: int,
                       info: PartitionInfo) -> None:
        old = self.image.topics.get(topic)
        parts = dict(old.partitions) if old is not None else {}
        parts[index] = info
        tid = topic_id if topic_id is not None else (old.topic_id if old is not None else None)
        self.image.topics[topic] = TopicInfo(topic, tid, parts)

    def _remove_partition(self, topic: str, index: int) -> None:
        old = self.image.topics.get(topic)
        if old is None:
            return
        parts = {p: i for p, i in old.partitions.items() if p != index}
        if parts:
            self.image.topics[topic] = TopicInfo(topic, old.topic_id, parts)
        else:
            del self.image.topics[topic]

    # -- queries -----------------------------------------------------------------------

    @property
    def controller_id(self) -> int:
        return self.image.controller_id

    def topic_names(self) -> list[str]:
        return sorted(self.image.topics)

    def topic(self, name: str) -> TopicInfo | None:
        return self.image.topics.get(name)

    def leader(self, topic: str, partition: int) -> int:
        return self.image.leader(topic, partition)

    def live_brokers(self) -> list[BrokerInfo]:
        return [self.image.brokers[b] for b in sorted(self.image.brokers)]

    def broker(self, broker_id: int) -> BrokerInfo | None:
        return self.image.brokers.get(broker_id)

    # -- waiting -----------------------------------------------------------------------

    def _notify(self) -> None:
        for fut in list(self._waiters):
            if not fut.done():
                fut.set_result(None)
        self._waiters.clear()

    async def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds after some update (True) or ``timeout_s`` (False)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not predicate():
            left = deadline - loop.time()
            if left <= 0:
                return False
            fut: asyncio.Future[None] = loop.create_future()
            self._waiters.add(fut)
            try:
                await asyncio.wait_for(fut, left)
            except TimeoutError:
                self._waiters.discard(fut)
                return predicate()
        return True


# SecurityProtocol ids (org.apache.kafka.common.security.auth.SecurityProtocol).
_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
