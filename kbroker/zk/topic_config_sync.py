"""Topic configs in cluster mode: ZooKeeper's ``/config/topics/<t>`` is the truth, the local
``kbroker-topic-configs.json`` (kbroker/configs/topic_configs.py) a mirror (Kafka's
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
  when it first gets the topic (kbroker/replica/replica_manager.py).
* DescribeConfigs / AlterConfigs on a topic first refresh the mirror from ZooKeeper
  (:func:`refresh`), so any broker answers for any topic of the cluster.
* The same listener hands ``brokers/<id>`` and ``brokers/<default>`` notifications to
  kbroker/zk/broker_config_sync.py, and reads both broker levels whenever it starts.
* Each pass also purges notifications older than 15 minutes (by the znode's ctime: Kafka's
  ``ZkNodeChangeNotificationListener.purgeObsoleteNotifications``, ``changeExpirationMs``);
  every broker does it, a notification another already deleted is skipped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from cluster import znodes
from cluster.coordination import CoordinationError, NoNodeError, WatchEvent
from kbroker.replica.local_config_admin import apply_topic_overrides as mirror
from kbroker.runtime.tasks import TaskSet, task_name
from kbroker.runtime.zk_retry import deadline, until_connected
from kbroker.zk import broker_config_sync, quotas_zk
from kbroker.zk.config_entities import publish_entity, read_entity

if TYPE_CHECKING:
    from kbroker.metadata.metadata_cache import MetadataCache
    from kbroker.replica.broker_state import BrokerState

__all__ = ["ConfigChangeListener", "publish", "refresh", "topic_exists"]

log = logging.getLogger("kbroker.configs")

RETRY_S = 0.5
# Kafka's ZkNodeChangeNotificationListener.changeExpirationMs (15 minutes).
CHANGE_EXPIRATION_MS = 15 * 60 * 1000


def topic_exists(state: BrokerState, cache: MetadataCache, topic: str) -> bool:
    """The topic exists here or anywhere in the cluster (the metadata cache knows it)."""
    return topic in state.topics or cache.topic(topic) is not None


async def _read(zk: Any, topic: str) -> dict[str, str] | None:
    return await read_entity(zk, "topics", topic)


async def refresh(state: BrokerState, zk: Any, cache: MetadataCache, topics: Iterable[str]) -> None:
    """Re-read the configs of ``topics`` from ZooKeeper into the mirror (for a
    DescribeConfigs / AlterConfigs: through a lost connection, kbroker/runtime/zk_retry.py)."""
    by = deadline(zk)
    for topic in topics:
        if topic_exists(state, cache, topic):
            overrides = await until_connected(lambda topic=topic: _read(zk, topic), by,
                                              f"the configs of {topic}")
            if overrides is not None:
                mirror(state, topic, overrides)


def publish(state: BrokerState, zk: Any, topic: str) -> Future[None]:
    """Write the mirror's overrides of ``topic`` to ZooKeeper and notify every broker;
    the future is done once both are stored (the AlterConfigs answer waits for it)."""
    return publish_entity(zk, "topics", topic, dict(state.topic_configs.overrides_of(topic)))


class ConfigChangeListener:
    """Kafka's ``ZkNodeChangeNotificationListener`` on ``/config/changes``."""

    def __init__(self, state: BrokerState, zk: Any,
                 now_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        """``now_ms``: wall-clock ms, compared with the notifications' ctime to purge them."""
        self.state = state
        self.zk = zk
        self.now_ms = now_ms
        self._last = -1  # sequence number of the last notification processed
        self._started = False
        self._lock = asyncio.Lock()
        self._tasks = TaskSet()   # notification passes started by the watch

    async def start(self) -> None:
        """First start: skip what is there now (topic configs are read when topics arrive)
        and watch what comes.  Again (a new session): process what came meanwhile.  Both
        times, then read the broker levels (after the watch is set, so no change is missed;
        applying one twice changes nothing)."""
        if self._started:
            await self._process()
        else:
            self._started = True
            children = await self.zk.children(znodes.CONFIG_CHANGES_PATH, watch=self._on_event)
            self._last = max((_seq(c) for c in children), default=self._last)
            await self._purge(children)
        while True:
            try:
                await broker_config_sync.load(self.state, self.zk)
                await quotas_zk.load(self.state, self.zk)
                return
            except CoordinationError as e:  # connection loss: retry until it returns
                log.info("reading dynamic broker configs failed (%r); retrying", e)
                await asyncio.sleep(RETRY_S)

    def _on_event(self, _: WatchEvent) -> None:
        # none once stopped: closing the session fires the watch, and a pass would retry
        # its reads of the closed session for ever
        if not self._tasks.closed:
            self._tasks.spawn(self._process())

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
                    await self._purge(children)
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
        if kind == "brokers":
            await broker_config_sync.on_notification(self.state, self.zk, name)
            return
        if kind in ("clients", "users"):   # client quotas (kbroker/zk/quotas_zk.py)
            await quotas_zk.on_notification(self.state, self.zk, entity)
            return
        if kind != "topics":
            return  # ips (connection-rate quotas): not served
        overrides = await _read(self.zk, name)
        mirror(self.state, name, overrides or {})
        log.info("topic %s config overrides now %s (notification %s)", name, overrides or {}, child)

    async def _purge(self, children: list[str]) -> None:
        """Delete the notifications created more than CHANGE_EXPIRATION_MS ago."""
        now = self.now_ms()
        for child in sorted(children, key=_seq):
            path = f"{znodes.CONFIG_CHANGES_PATH}/{child}"
            stat = await self.zk.exists(path)
            if stat is None or now - stat.ctime <= CHANGE_EXPIRATION_MS:
                continue
            try:
                await self.zk.delete(path)
                log.info("purged config change notification %s (%d ms old)", child, now - stat.ctime)
            except NoNodeError:
                pass  # another broker purged it first

    def stop(self) -> None:
        self._tasks.close()

    async def aclose(self) -> None:
        """No pass starts any more, and the ones under way have ended."""
        for task in await self._tasks.aclose():
            log.warning("config change task did not stop: %s", task_name(task))


def _seq(child: str) -> int:
    try:
        return int(child[len(znodes.CONFIG_CHANGE_PREFIX):])
    except ValueError:
        return -1

