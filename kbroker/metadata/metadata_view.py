"""``MetadataView``: what Metadata (key 3) and DescribeTopicPartitions (key 75) read about
topics, partitions and brokers, the same interface over both modes of the broker.

* ``SingleNodeView``: this broker is the cluster - every partition's only replica, its
  leader and its ISR, at the leader epoch its leader-epoch-checkpoint holds; each topic's
  id from its partition.metadata files (kbroker/replica/topic_ids.py); the controller is this broker.
* ``ClusterView``: the metadata cache as the controller's UpdateMetadata left it (Kafka's
  ``ZkMetadataCache``): leader -1 when the leader's broker is not live, replicas and ISR as
  the partition state znode has them, offline replicas = assigned replicas whose broker is
  not live (``getOfflineReplicas``), the real topic ids.

``SingleNodeMetadata`` and ``ClusterMetadata`` are the two implementations of the
``MetadataSource`` port (kbroker/server/services.py) that hand out these views, one per request,
and answer what does not need one: a topic id's name, and whether the metadata is known yet
(a single node knows it from the start; a ZooKeeper-mode broker once the controller's first
UpdateMetadata is applied, kbroker/handlers/metadata_readiness.py).

The handlers turn these values into each API's answer (which errors a partition gets,
which replicas v0 filters); a view holds no protocol rules.  A view is read within one
request on the event loop, so it reflects one state of the cache.

Answers are cached per topic (issue 15: a Metadata of 10,000 partitions cost ~130 ms of
CPU to build, every time a consumer started or refreshed): ``topic()`` and the handlers'
``cached``/``remember`` keep, per topic, what was built together with the *stamp* of what
it was built from, and a cached value is used only while the stamp is the same:

* single node: the topic's ``TopicInfo`` object (a topic created again is a new one),
  its partition count (CreatePartitions grows it in place), its topic id, and every
  partition being open (a partition's leader epoch is fixed while its ``Partition`` lives:
  only cluster mode's LeaderAndIsr moves it);
* cluster: the cache's ``TopicInfo`` object for the topic (``MetadataCache`` replaces it on
  every UpdateMetadata that touches the topic: leader, ISR, epoch, replicas, partition
  count, topic id, deletion) and the set of live brokers (a leader or replica whose broker
  is gone answers -1 / offline).

Objects are compared with ``is`` and kept alive by the cache, so an id cannot be reused.
Nothing per request (authorization, authorized operations, the broker list) is cached.
Cached values are shared between answers: never mutate them.

A topic that changed is rebuilt from its ``previous`` value partition by partition: in
cluster mode a partition whose ``PartitionInfo`` is the same object (UpdateMetadata made
no new one for it) with the same live brokers keeps its ``PartitionView``, and the
handlers keep the entry they built from that very ``PartitionView`` (an UpdateMetadata
moving one leader of a 10,000-partition topic does not cost a whole rebuild).
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from wire.messages import ZERO_UUID
from wire.topic_names import is_internal

if TYPE_CHECKING:
    from kbroker.metadata.catalog import TopicInfo
    from kbroker.metadata.metadata_cache import MetadataCache

__all__ = ["AnswerCache", "BrokerView", "ClusterMetadata", "ClusterView", "MetadataView", "PartitionView",
           "SingleNodeMetadata", "SingleNodeView", "TopicView"]

NO_LEADER = -1


class _TopicIds(Protocol):
    def id_of(self, topic: str) -> uuid.UUID | None: ...

    def name_of(self, topic_id: uuid.UUID) -> str | None: ...


class _OpenPartition(Protocol):
    """An open partition, as the single-node view reads it (kbroker/replica/partition.py)."""

    @property
    def leader_epoch(self) -> int: ...


class LocalTopics(Protocol):
    """What a single node's view reads of the broker (kbroker/replica/broker_state.py provides it):
    its topics and partitions, topic ids, identity and address."""

    node_id: int
    leader_epoch: int
    topic_ids: _TopicIds

    @property
    def topics(self) -> dict[str, TopicInfo]: ...

    @property
    def config(self) -> Any: ...

    def partition(self, topic: str, index: int) -> _OpenPartition | None: ...

    def advertised_address(self, listener_name: str | None = None) -> tuple[str, int]: ...


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

    def has_partition(self, topic: str, index: int) -> bool:
        """The cluster has this partition (on this broker or another; Kafka's
        ``MetadataCache.contains``)."""
        ...

    def is_live(self, broker_id: int) -> bool: ...

    def brokers(self, listener_name: str | None = None) -> list[BrokerView]:
        """Every live broker, by id, with its endpoint on ``listener_name`` (the listener the
        request came on; default the first listener)."""
        ...

    def cached(self, name: str, kind: Hashable) -> Any:
        """The value ``remember``ed for topic ``name`` under ``kind`` (e.g. an API and
        version family) if the topic has not changed since; else None."""
        ...

    def remember(self, name: str, kind: Hashable, value: Any) -> None:
        """Keep ``value``, built from this view's current state of topic ``name``."""
        ...

    def previous(self, name: str, kind: Hashable) -> Any:
        """The value last ``remember``ed for ``name`` under ``kind``, even if the topic has
        changed since (to reuse its unchanged parts); None if none."""
        ...


class _Stamp:
    """What a topic's cached values were built from: ``source`` compared with ``is``,
    ``facts`` with ``==`` (see the module's docstring)."""
    __slots__ = ("source", "facts")

    def __init__(self, source: object, facts: tuple[Any, ...]) -> None:
        self.source = source
        self.facts = facts

    def same(self, other: _Stamp) -> bool:
        return self.source is other.source and self.facts == other.facts


class AnswerCache:
    """Per (topic, kind): (stamp, value).  Entries of topics that are gone are dropped when
    asked for, and all of them once the cache holds far more topics than exist (a topic
    deleted and never asked for again)."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, Hashable], tuple[_Stamp, Any]] = {}

    def get(self, name: str, kind: Hashable, stamp: _Stamp | None) -> Any:
        entry = self._entries.get((name, kind))
        if entry is None:
            return None
        if stamp is None:   # the topic is gone
            del self._entries[(name, kind)]
            return None
        return entry[1] if entry[0].same(stamp) else None

    def previous(self, name: str, kind: Hashable) -> Any:
        entry = self._entries.get((name, kind))
        return None if entry is None else entry[1]

    def put(self, name: str, kind: Hashable, stamp: _Stamp | None, value: Any, topic_count: int) -> None:
        if stamp is None:
            return
        if len(self._entries) > 4 * topic_count + 64:
            self._entries.clear()
        self._entries[(name, kind)] = (stamp, value)


# one cache per broker state (single node) or MetadataCache (cluster), dropped with it;
# objects that take no weak reference (tests' stand-ins) get no cache
_caches: weakref.WeakKeyDictionary[object, AnswerCache] = weakref.WeakKeyDictionary()


def _cache_of(source: object) -> AnswerCache | None:
    try:
        cache = _caches.get(source)
        if cache is None:
            cache = _caches[source] = AnswerCache()
    except TypeError:
        return None
    return cache


class _Cached:
    """``cached``/``remember`` over a view's ``_stamp`` and its source's cache."""
    _answers: AnswerCache | None

    def _stamp(self, name: str) -> _Stamp | None:
        raise NotImplementedError

    def _topic_count(self) -> int:
        raise NotImplementedError

    def cached(self, name: str, kind: Hashable) -> Any:
        if self._answers is None:
            return None
        return self._answers.get(name, kind, self._stamp(name))

    def remember(self, name: str, kind: Hashable, value: Any) -> None:
        if self._answers is not None:
            self._answers.put(name, kind, self._stamp(name), value, self._topic_count())

    def previous(self, name: str, kind: Hashable) -> Any:
        return None if self._answers is None else self._answers.previous(name, kind)


class SingleNodeView(_Cached):
    def __init__(self, state: LocalTopics) -> None:
        self._state = state
        self._answers = _cache_of(state)
        self._incomplete: set[str] = set()   # topics with a partition not open (yet)

    @property
    def controller_id(self) -> int:
        return self._state.node_id  # admin clients wait while it is -1

    def topic_names(self) -> list[str]:
        return sorted(self._state.topics)

    def has_topic(self, name: str) -> bool:
        return name in self._state.topics

    def has_partition(self, topic: str, index: int) -> bool:
        info = self._state.topics.get(topic)
        return info is not None and 0 <= index < info.partitions

    def topic(self, name: str) -> TopicView | None:
        state = self._state
        info = state.topics.get(name)
        if info is None:
            return None
        cached = self.cached(name, TopicView)
        if cached is not None:
            return cached
        node = state.node_id
        parts = []
        for index in range(info.partitions):
            partition = state.partition(name, index)
            if partition is None:
                self._incomplete.add(name)
            # the partition's persisted leader epoch (its leader-epoch-checkpoint)
            epoch = partition.leader_epoch if partition is not None else state.leader_epoch
            parts.append(PartitionView(index, node, epoch, [node], [node], []))
        view = TopicView(name, state.topic_ids.id_of(name) or ZERO_UUID, info.internal, parts)
        self.remember(name, TopicView, view)
        return view

    def _stamp(self, name: str) -> _Stamp | None:
        state = self._state
        info = state.topics.get(name)
        if info is None or name in self._incomplete:
            return None
        return _Stamp(info, (info.partitions, state.topic_ids.id_of(name), info.internal, state.node_id))

    def _topic_count(self) -> int:
        return len(self._state.topics)

    def is_live(self, broker_id: int) -> bool:
        return broker_id == self._state.node_id

    def brokers(self, listener_name: str | None = None) -> list[BrokerView]:
        """This broker's address on ``listener_name`` (the request's listener, as Kafka)."""
        state = self._state
        host, port = state.advertised_address(listener_name)
        return [BrokerView(state.node_id, host, port, state.config["broker.rack"])]


@dataclass(frozen=True, slots=True)
class _ClusterTopic:
    """A cluster topic's view with what it was built from, for the next rebuild."""
    view: TopicView
    sources: dict[int, Any]              # index -> the PartitionInfo each PartitionView came from
    views: dict[int, PartitionView]
    live: frozenset[int]


class ClusterView(_Cached):
    def __init__(self, listener: str, cache: MetadataCache, controller_id: Callable[[], int]) -> None:
        """``listener``: the first listener's name (brokers' endpoints default to it);
        ``controller_id``: the controller as this broker last learned it
        (``ClusterRuntime.controller_id``)."""
        self._listener = listener
        self._controller_id = controller_id
        self._image = cache.image
        self._live = frozenset(self._image.brokers)
        self._answers = _cache_of(cache)

    @property
    def controller_id(self) -> int:
        # this broker's own /controller watch learns of a failover before the new
        # controller's UpdateMetadata arrives; else the cache's (-1 until the first one)
        return self._controller_id()

    def topic_names(self) -> list[str]:
        return sorted(self._image.topics)

    def has_topic(self, name: str) -> bool:
        return name in self._image.topics

    def has_partition(self, topic: str, index: int) -> bool:
        return self._image.partition(topic, index) is not None

    def topic(self, name: str) -> TopicView | None:
        info = self._image.topics.get(name)
        if info is None:
            return None
        cached = self.cached(name, _ClusterTopic)
        if cached is not None:
            return cached.view
        live = self._live
        before = self.previous(name, _ClusterTopic)
        # partitions whose PartitionInfo is the very object the previous view was built from
        # (and the same brokers live) keep their PartitionView
        reusable = before.sources if before is not None and before.live == live else {}
        old_views = before.views if reusable else {}
        parts = []
        for index, p in sorted(info.partitions.items()):
            if reusable.get(index) is p:
                parts.append(old_views[index])
                continue
            state = p.state
            # MetadataImage.leader / offline_replicas, over the live set taken once
            leader = state.leader if state is not None and state.leader in live else NO_LEADER
            parts.append(PartitionView(
                index, leader, state.leader_epoch if state is not None else -1,
                list(p.replicas), list(state.isr) if state is not None else [],
                [r for r in p.replicas if r not in live]))
        view = TopicView(name, info.topic_id or ZERO_UUID, is_internal(name), parts)
        self.remember(name, _ClusterTopic, _ClusterTopic(view, dict(info.partitions), {pv.index: pv for pv in parts},
                                                         live))
        return view

    def _stamp(self, name: str) -> _Stamp | None:
        info = self._image.topics.get(name)
        return None if info is None else _Stamp(info, (self._live,))

    def _topic_count(self) -> int:
        return len(self._image.topics)

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


class SingleNodeMetadata:
    """The ``MetadataSource`` port of a single node: the broker describes itself."""

    __slots__ = ("_state",)

    def __init__(self, state: LocalTopics) -> None:
        self._state = state

    def view(self) -> SingleNodeView:
        return SingleNodeView(self._state)

    def name_for_id(self, topic_id: uuid.UUID) -> str | None:
        """The topic whose partition.metadata files hold ``topic_id`` (kbroker/replica/topic_ids.py),
        while it exists here; None for ZERO_UUID or an unknown id."""
        if topic_id == ZERO_UUID:
            return None
        name = self._state.topic_ids.name_of(topic_id)
        return name if name is not None and name in self._state.topics else None

    def known(self) -> bool:
        return True

    async def wait_known(self, timeout_s: float) -> bool:
        return True


class ClusterMetadata:
    """The ``MetadataSource`` port in ZooKeeper mode: the metadata cache
    (kbroker/metadata/metadata_cache.py) as the controller's UpdateMetadata requests left it."""

    __slots__ = ("_listener", "_cache", "_controller_id")

    def __init__(self, listener: str, cache: MetadataCache, controller_id: Callable[[], int]) -> None:
        """As ``ClusterView``'s."""
        self._listener = listener
        self._cache = cache
        self._controller_id = controller_id

    def view(self) -> ClusterView:
        return ClusterView(self._listener, self._cache, self._controller_id)

    def name_for_id(self, topic_id: uuid.UUID) -> str | None:
        """The topic the cache knows by ``topic_id`` (one dict look-up); None for ZERO_UUID
        or an unknown id."""
        return None if topic_id == ZERO_UUID else self._cache.topic_name_for_id(topic_id)

    def known(self) -> bool:
        """An UpdateMetadata has been applied: it always lists the live brokers, this one among
        them (the controller sends it after seeing this broker registered)."""
        return bool(self._cache.image.brokers)

    def wait_known(self, timeout_s: float) -> Awaitable[bool]:
        return self._cache.wait_for(self.known, timeout_s)
