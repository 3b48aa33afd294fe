"""``MetadataView``: what Metadata (key 3) and DescribeTopicPartitions (key 75) read about
topics, partitions and brokers, the same interface over both modes of the broker.

* ``SingleNodeView``: this broker is the cluster - every partition's only replica, its
  leader and its ISR, at the leader epoch its leader-epoch-checkpoint holds; each topic's
  id from its partition.metadata files (kbroker/topic_ids.py); the controller is this broker.
* ``ClusterView``: the metadata cache as the controller's UpdateMetadata left it (Kafka's
  ``ZkMetadataCache``): leader -1 when the leader's broker is not live, replicas and ISR as
  the partition state znode has them, offline replicas = assigned replicas whose broker is
  not live (``getOfflineReplicas``), the real topic ids.

The handlers turn these values into each API's answer (which errors a partition gets,
which replicas v0 filters); a view holds no protocol rules.  A view is read within one
request on the event loop, so it reflects one state of the cache.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kbroker.topic_names import is_internal
from wire.messages import ZERO_UUID

if TYPE_CHECKING:
    from kbroker.broker_state import BrokerState
    from kbroker.cluster_runtime import ClusterRuntime

__all__ = ["BrokerView", "ClusterView", "MetadataView", "PartitionView", "SingleNodeView",
           "TopicView", "metadata_view"]

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class PartitionView:
    index: int
    leader: int               # broker id, or -1 when there is no live leader
    leader_epoch: int         # -1 when the partition has no state yet
    replicas: list[int]       # assigned replicas, in assignment order
    isr: list[int]
    offline_replicas: list[int]


@dataclass(frozen=True, slots=True)
class TopicView:
    name: str
    topic_id: uuid.UUID       # ZERO_UUID when the topic has none
    is_internal: bool
    partitions: Sequence[PartitionView]   # ascending partition index


@dataclass(frozen=True, slots=True)
class BrokerView:
    node_id: int
    host: str
    port: int
    rack: str | None


class MetadataView(Protocol):
    @property
    def controller_id(self) -> int: ...

    def topic_names(self) -> list[str]:
        """Every topic, sorted by name."""
        ...

    def topic(self, name: str) -> TopicView | None: ...

    def has_topic(self, name: str) -> bool: ...

    def is_live(self, broker_id: int) -> bool: ...

    def brokers(self, listener_name: str | None = None) -> list[BrokerView]:
        """Every live broker, by id, with its endpoint on ``listener_name`` (the listener the
        request came on; default the first listener)."""
        ...


class SingleNodeView:
    def __init__(self, state: BrokerState) -> None:
        self._state = state

    @property
    def controller_id(self) -> int:
        return self._state.node_id  # admin clients wait while it is -1

    def topic_names(self) -> list[str]:
        return sorted(self._state.topics)

    def has_topic(self, name: str) -> bool:
        return name in self._state.topics

    def topic(self, name: str) -> TopicView | None:
        state = self._state
        info = state.topics.get(name)
        if info is None:
            return None
        node = state.node_id
        parts = []
        for index in range(info.partitions):
            partition = state.partition(name, index)
            # the partition's persisted leader epoch (its leader-epoch-checkpoint)
            epoch = partition.leader_epoch if partition is not None else state.leader_epoch
            parts.append(PartitionView(index, node, epoch, [node], [node], []))
        return TopicView(name, state.topic_ids.id_of(name) or ZERO_UUID, info.internal, parts)

    def is_live(self, broker_id: int) -> bool:
        return broker_id == self._state.node_id

    def brokers(self, listener_name: str | None = None) -> list[BrokerView]:
        """This broker's address on ``listener_name`` (the request's listener, as Kafka)."""
        state = self._state
        host, port = state.advertised_address(listener_name)
        return [BrokerView(state.node_id, host, port, state.config["broker.rack"])]


class ClusterView:
    def __init__(self, state: BrokerState, cluster: ClusterRuntime) -> None:
        self._listener = state.config.listeners[0].name
        self._cluster = cluster
        self._image = cluster.cache.image

    @property
    def controller_id(self) -> int:
        # this broker's own /controller watch learns of a failover before the new
        # controller's UpdateMetadata arrives; else the cache's (-1 until the first one)
        return self._cluster.controller_id

    def topic_names(self) -> list[str]:
        return sorted(self._image.topics)

    def has_topic(self, name: str) -> bool:
        return name in self._image.topics

    def topic(self, name: str) -> TopicView | None:
        image = self._image
        info = image.topics.get(name)
        if info is None:
            return None
        parts = []
        for index, p in sorted(info.partitions.items()):
            state = p.state
            parts.append(PartitionView(
                index, image.leader(name, index), state.leader_epoch if state is not None else -1,
                list(p.replicas), list(state.isr) if state is not None else [],
                list(image.offline_replicas(name, index))))
        return TopicView(name, info.topic_id or ZERO_UUID, is_internal(name), parts)

    def is_live(self, broker_id: int) -> bool:
        return self._image.is_live(broker_id)

    def brokers(self, listener_name: str | None = None) -> list[BrokerView]:
        """Every broker's endpoint on ``listener_name`` (default the first listener)."""
        out = []
        for broker_id in sorted(self._image.brokers):
            b = self._image.brokers[broker_id]
            e = b.endpoint(listener_name or self._listener) or (b.endpoints[0] if b.endpoints else None)
            if e is not None:
                out.append(BrokerView(b.broker_id, e.host, e.port, b.rack))
        return out


def metadata_view(state: BrokerState) -> MetadataView:
    """The view for this broker's mode: the metadata cache in cluster mode, else itself."""
    cluster = getattr(state, "cluster", None)
    return ClusterView(state, cluster) if cluster is not None else SingleNodeView(state)
