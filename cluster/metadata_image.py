"""The cluster as a broker or the controller sees it: brokers, topics, partition states.

An immutable-by-convention snapshot (Kafka's ``ControllerContext`` / ``MetadataCache``
contents): live brokers with their endpoints, rack and broker epoch (the czxid of their
registration), topics with their id and replica assignment, and per partition the
leader-and-ISR of its state znode with the znode's version (the partition epoch) and the
controller epoch that wrote it.  Queries answer what Metadata, DescribeCluster and request
routing need; "offline replicas" are assigned replicas on brokers that are not live
(``MetadataCache.getOfflineReplicas``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from cluster.election import NO_LEADER, LeaderAndIsr
from cluster.znodes import EndPoint

__all__ = ["BrokerInfo", "MetadataImage", "PartitionInfo", "TopicInfo"]


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    epoch: int = -1  # czxid of /brokers/ids/<id>

    def endpoint(self, listener: str) -> EndPoint | None:
        return next((e for e in self.endpoints if e.listener == listener), None)


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    replicas: tuple[int, ...]
    state: LeaderAndIsr | None = None  # None until the controller made the state znode
    controller_epoch: int = -1
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID | None
    partitions: Mapping[int, PartitionInfo]


@dataclass(slots=True)
class MetadataImage:
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    controller_id: int = -1
    controller_epoch: int = 0
    cluster_id: str | None = None

    # -- changes ---------------------------------------------------------------------------

    def with_broker(self, broker: BrokerInfo) -> None:
        self.brokers[broker.broker_id] = broker

    def without_broker(self, broker_id: int) -> None:
        self.brokers.pop(broker_id, None)

    def set_topic(self, topic: TopicInfo) -> None:
        self.topics[topic.name] = topic

    def remove_topic(self, name: str) -> None:
        self.topics.pop(name, None)

    def set_partition_state(
        self, topic: str, partition: int, state: LeaderAndIsr, controller_epoch: int
    ) -> None:
        t = self.topics[topic]
        parts = dict(t.partitions)
        parts[partition] = replace(parts[partition], state=state, controller_epoch=controller_epoch)
        self.topics[topic] = replace(t, partitions=parts)

    # -- queries ---------------------------------------------------------------------------

    def live_broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    def is_live(self, broker_id: int) -> bool:
        return broker_id in self.brokers

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(partition)

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader id, or -1 (none, or the leader's broker is not live)."""
        p = self.partition(topic, partition)
        if p is None or p.state is None or p.state.leader == NO_LEADER:
            return NO_LEADER
        return p.state.leader if p.state.leader in self.brokers else NO_LEADER

    def leader_epoch(self, topic: str, partition: int) -> int:
        p = self.partition(topic, partition)
        return -1 if p is None or p.state is None else p.state.leader_epoch

    def isr(self, topic: str, partition: int) -> tuple[int, ...]:
        p = self.partition(topic, partition)
        return () if p is None or p.state is None else p.state.isr

    def offline_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        p = self.partition(topic, partition)
        return () if p is None else tuple(r for r in p.replicas if r not in self.brokers)

    def leader_endpoint(self, topic: str, partition: int, listener: str) -> EndPoint | None:
        leader = self.leader(topic, partition)
        return None if leader == NO_LEADER else self.brokers[leader].endpoint(listener)

    def partitions_on_broker(self, broker_id: int) -> list[tuple[str, int]]:
        return sorted(
            (t.name, p)
            for t in self.topics.values()
            for p, info in t.partitions.items()
            if broker_id in info.replicas
        )

    def partitions_led_by(self, broker_id: int) -> list[tuple[str, int]]:
        return sorted(
            (t.name, p)
            for t in self.topics.values()
            for p, info in t.partitions.items()
            if info.state is not None and info.state.leader == broker_id
        )

    def all_partitions(self) -> Iterable[tuple[str, int, PartitionInfo]]:
        for t in sorted(self.topics):
            for p, info in sorted(self.topics[t].partitions.items()):
                yield t, p, info
