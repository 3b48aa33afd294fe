"""``MetadataCache``: the cluster as this broker knows it in cluster mode (Kafka's
``ZkMetadataCache``).

Fed only by the controller's requests (kbroker/handlers/inter_broker.py):

* UpdateMetadata replaces the live brokers (the request always lists all of them), sets the
  controller id and epoch, and upserts the partition states it carries; a partition with
  leader -2 (``LeaderDuringDelete``) is a deleted topic's and leaves the cache, and the
  topic with its last partition (``ZkMetadataCache.updateMetadata``).
* LeaderAndIsr carries this broker's own partitions; the cache does not take them (Kafka's
  cache also learns them only from the UpdateMetadata the controller sends with every
  LeaderAndIsr), the replica manager (``kbroker/replica/replica_manager.py``) does.

Readers: Metadata, DescribeCluster, FindCoordinator and request routing (is this broker
the leader of a partition).

Health: for the partitions this broker leads, a WARN line each time a partition becomes
or stops being under-replicated (ISR smaller than the replicas) or under min ISR (ISR
smaller than min(``min.insync.replicas``, replication factor), Kafka's ``effectiveMinIsr``),
as seen in the committed state the controller sends - once per change, not per update
(Kafka exposes the same as the UnderReplicatedPartitions / UnderMinIsrPartitionCount
gauges); ``under_replicated()`` / ``under_min_isr()`` list them.  ``changed`` is an asyncio condition-like event: waiters (a
CreateTopics waiting for leaders, a DeleteTopics waiting for the topic to go) are woken
after every update and re-check their predicate.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

from cluster.election import LeaderAndIsr
from cluster.metadata_image import BrokerInfo, MetadataImage, PartitionInfo, TopicInfo
from cluster.znodes import EndPoint
from wire.messages import ZERO_UUID

__all__ = ["LEADER_DURING_DELETE", "MetadataCache"]

LEADER_DURING_DELETE = -2

log = logging.getLogger("kbroker.metadata")


class MetadataCache:
    def __init__(self, broker_id: int = -1,
                 min_insync_replicas: Callable[[str], int] = lambda topic: 1) -> None:
        self.image = MetadataImage()
        self._waiters: set[asyncio.Future[None]] = set()
        self.broker_id = broker_id  # this broker: whose led partitions' health is logged
        self.min_insync_replicas = min_insync_replicas  # a topic's min.insync.replicas
        # (under-replicated, under min ISR) of each partition this broker leads, as last logged.
        self._health: dict[tuple[str, int], tuple[bool, bool]] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}  # topic_name_for_id's index

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
            # one new TopicInfo per topic state, its partitions copied once (per partition
            # was quadratic: ~0.8 s for a topic of 10,000); readers (kbroker/metadata/metadata_view.py)
            # rely on a changed topic being a new TopicInfo object
            old = self.image.topics.get(t.topic_name)
            parts = dict(old.partitions) if old is not None else {}
            for p in t.partition_states:
                if p.leader == LEADER_DURING_DELETE:
                    parts.pop(p.partition_index, None)
                    self._health.pop((t.topic_name, p.partition_index), None)
                    deleted.append((t.topic_name, p.partition_index))
                    continue
                parts[p.partition_index] = PartitionInfo(
                    replicas=tuple(p.replicas),
                    state=LeaderAndIsr(p.leader, p.leader_epoch, tuple(p.isr), 0, p.zk_version),
                    controller_epoch=p.controller_epoch)
                self._check_health(t.topic_name, p.partition_index, p.leader, tuple(p.replicas),
                                   tuple(p.isr))
            self._set_topic(t.topic_name, topic_id, old, parts)
        self._notify()
        return deleted

    def _set_topic(self, topic: str, topic_id: uuid.UUID | None, old: TopicInfo | None,
                   parts: dict[int, PartitionInfo]) -> None:
        """The topic with ``parts`` (its topic id kept when the update has none); gone with
        its last partition."""
        if not parts:
            self.image.topics.pop(topic, None)
            return
        tid = topic_id if topic_id is not None else (old.topic_id if old is not None else None)
        self.image.topics[topic] = TopicInfo(topic, tid, parts)

    def _check_health(self, topic: str, index: int, leader: int, replicas: tuple[int, ...],
                      isr: tuple[int, ...]) -> None:
        tp = (topic, index)
        if leader != self.broker_id or self.broker_id < 0:
            self._health.pop(tp, None)  # its leader watches it
            return
        min_isr = min(self.min_insync_replicas(topic), len(replicas))
        now = (len(isr) < len(replicas), len(isr) < min_isr)
        before = self._health.get(tp, (False, False))
        self._health[tp] = now
        if now[0] != before[0]:
            if now[0]:
                log.warning("partition %s-%d is under-replicated: ISR %s of replicas %s",
                            topic, index, list(isr), list(replicas))
            else:
                log.warning("partition %s-%d is fully replicated again: ISR %s", topic, index,
                            list(isr))
        if now[1] != before[1]:
            if now[1]:
                log.warning("partition %s-%d is under min ISR: ISR %s is below min.insync.replicas "
                            "%d (acks=all produce answers NOT_ENOUGH_REPLICAS)", topic, index,
                            list(isr), min_isr)
            else:
                log.warning("partition %s-%d is back at min ISR: ISR %s, min.insync.replicas %d",
                            topic, index, list(isr), min_isr)

    def under_replicated(self) -> list[tuple[str, int]]:
        """Partitions this broker leads whose ISR is smaller than their replicas."""
        return sorted(tp for tp, (under, _) in self._health.items() if under)

    def under_min_isr(self) -> list[tuple[str, int]]:
        return sorted(tp for tp, (_, under) in self._health.items() if under)

    # -- queries -----------------------------------------------------------------------

    @property
    def controller_id(self) -> int:
        return self.image.controller_id

    def topic_names(self) -> list[str]:
        return sorted(self.image.topics)

    def topic(self, name: str) -> TopicInfo | None:
        return self.image.topics.get(name)

    def topic_name_for_id(self, topic_id: uuid.UUID) -> str | None:
        """The topic whose id is ``topic_id`` (None if none): a dict look-up, the index
        rebuilt from the image when it does not answer (a topic added, recreated or gone)."""
        name = self._names_by_id.get(topic_id)
        info = self.image.topics.get(name) if name is not None else None
        if info is not None and info.topic_id == topic_id:
            return name
        self._names_by_id = {t.topic_id: t.name for t in self.image.topics.values() if t.topic_id is not None}
        return self._names_by_id.get(topic_id)

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
