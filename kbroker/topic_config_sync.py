"""Topic configs in cluster mode: ZooKeeper's ``/config/topics/<t>`` is the truth, the local
``kbroker-topic-configs.json`` (kbroker/topic_configs.py) a mirror (Kafka's
``ZkConfigManager`` + ``TopicConfigHandler``).

* A change (AlterConfigs / IncrementalAlterConfigs on any broker, as in Kafka's ZooKeeper
  mode where ``AdminZkClient.changeTopicConfig`` runs on the receiving broker) writes
  ``/config/topics/<t>`` (``{"version":1,"config":{...}}``) and then a sequential
  ``/config/changes/config_change_NNNNNNNNNN`` notification ``{"version":2,
  "entity_path":"topics/<t>"}``: :func:`publish`.
* Every broker watches ``/config/changes`` (:class:`ConfigChangeListener`); each
  notification newer than the last one it processed makes it re-read that topic's config
  and apply it to its logs (or just its mirror, for a topic it holds no partition of).
  Notifications present at start-up are not replayed: a broker reads a topic's config
  when it first gets the topic (kbroker/replica_manager.py).
* DescribeConfigs / AlterConfigs on a topic first refresh the mirror from ZooKeeper
  (:func:`refresh`), so any broker answers for any topic of the cluster.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from cluster import znodes
from cluster.coordination import CoordinationError, NoNodeError, WatchEvent

if TYPE_CHECKING:
    from kbroker.broker_state import BrokerState

__all__ = ["ConfigChangeListener", "mirror", "publish", "refresh", "topic_exists"]

log = logging.getLogger("kbroker.configs")

RETRY_S = 0.5


def topic_exists(state: BrokerState, topic: str) -> bool:
    """The topic exists here or, in cluster mode, anywhere in the cluster."""
    cluster = getattr(state, "cluster", None)
    return topic in state.topics or (cluster is not None and cluster.cache.topic(topic) is not None)


def mirror(state: BrokerState, topic: str, overrides: dict[str, str]) -> None:
    """Make ``overrides`` the topic's overrides here: its logs follow if this broker holds it."""
    if state.topic_configs.overrides_of(topic) == overrides:
        return
    if topic in state.topics:
        state.set_topic_overrides(topic, overrides)
    else:
        state.topic_configs.set(topic, overrides)


async def _read(zk: Any, topic: str) -> dict[str, str] | None:
    try:
        data, _ = await zk.get(znodes.config_entity_path("topics", topic))
    except NoNodeError:
        return None
    return znodes.decode_config(data)


async def refresh(state: BrokerState, topics: Iterable[str]) -> None:
    """Re-read the configs of ``topics`` from ZooKeeper into the mirror."""
    cluster = state.cluster
    assert cluster is not None
    for topic in topics:
        if topic_exists(state, topic):
            overrides = await _read(cluster.zk, topic)
            if overrides is not None:
                mirror(state, topic, overrides)


def publish(state: BrokerState, topic: str) -> Future[None]:
    """Write the mirror's overrides of ``topic`` to ZooKeeper and notify every broker;
    the future is done once both are stored (the AlterConfigs answer waits for it)."""
    cluster = state.cluster
    assert cluster is not None
    overrides = dict(state.topic_configs.overrides_of(topic))
    done: Future[None] = Future()

    async def write() -> None:
        path = znodes.config_entity_path("topics", topic)
        data = znodes.encode_config(overrides)
        try:
            await cluster.zk.set(path, data)
        except NoNodeError:
            await cluster.zk.create(path, data, make_parents=True)
        await cluster.zk.create(f"{znodes.CONFIG_CHANGES_PATH}/{znodes.CONFIG_CHANGE_PREFIX}",
                                znodes.encode_config_change(f"topics/{topic}"), sequential=True)

    def finished(task: asyncio.Task[None]) -> None:
        if task.cancelled():
            done.cancel()
        elif task.exception() is not None:
            done.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            done.set_result(None)

    asyncio.ensure_future(write()).add_done_callback(finished)
    return done


class ConfigChangeListener:
    """Kafka's ``ZkNodeChangeNotificationListener`` on ``/config/changes``."""

    def __init__(self, state: BrokerState, zk: Any) -> None:
        self.state = state
        self.zk = zk
        self._last = -1  # sequence number of the last notification processed
        self._started = False
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """First start: skip what is there now (configs are read when topics arrive) and
        watch what comes.  Again (a new session): process what came meanwhile."""
        if self._started:
            await self._process()
            return
        self._started = True
        children = await self.zk.children(znodes.CONFIG_CHANGES_PATH, watch=self._on_event)
        self._last = max((_seq(c) for c in children), default=self._last)

    def _on_event(self, _: WatchEvent) -> None:
        task = asyncio.ensure_future(self._process())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process(self) -> None:
        async with self._lock:
            while True:
                try:
                    children = await self.zk.children(znodes.CONFIG_CHANGES_PATH, watch=self._on_event)
                    for child in sorted(children, key=_seq):
                        if _seq(child) <= self._last:
                            continue
                        await self._apply(child)
                        self._last = _seq(child)
                    return
                except CoordinationError as e:  # connection loss: retry until it returns
                    log.info("reading config change notifications failed (%r); retrying", e)
                    await asyncio.sleep(RETRY_S)

    async def _apply(self, child: str) -> None:
        try:
            data, _ = await self.zk.get(f"{znodes.CONFIG_CHANGES_PATH}/{child}")
            entity = znodes.decode_config_change(data)
        except NoNodeError:
            return  # purged already
        except znodes.ZnodeFormatError as e:
            log.warning("ignoring config change notification %s: %s", child, e)
            return
        kind, _, name = entity.partition("/")
        if kind != "topics":
            return  # dynamic broker configs stay local for now
        overrides = await _read(self.zk, name)
        mirror(self.state, name, overrides or {})
        log.info("topic %s config overrides now %s (notification %s)", name, overrides or {}, child)

    def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()


def _seq(child: str) -> int:
    try:
        return int(child[len(znodes.CONFIG_CHANGE_PREFIX):])
    except ValueError:
        return -1

