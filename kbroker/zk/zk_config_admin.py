"""``ZkConfigAdmin``: the ``ConfigAdmin`` port in ZooKeeper mode (kbroker/server/services.py).

ZooKeeper holds the config entities, as in Kafka's ZooKeeper mode where
``AdminZkClient.changeEntityConfig`` runs on the broker that received the request; the
log-dir stores of the single node (kbroker/replica/local_config_admin.py) are this broker's mirrors.

* Before a DescribeConfigs, the named topics' configs are re-read from ZooKeeper; before an
  AlterConfigs / IncrementalAlterConfigs, the named topics' and dynamic broker levels' too
  (:meth:`refresh`; kbroker/zk/topic_config_sync.py, kbroker/zk/broker_config_sync.py), so any
  broker answers for any topic of the cluster and an alter starts from the cluster's set.
* A topic exists when this broker holds it or the metadata cache knows it anywhere in the
  cluster.
* A change is applied to the mirror as on a single node, then written to its entity znode
  followed by a ``/config/changes`` notification that every broker follows
  (kbroker/zk/config_entities.py): ``topics/<t>``, ``brokers/<id>`` or ``brokers/<default>``,
  ``clients/...`` or ``users/...`` for client quotas and SCRAM credentials, which share the
  user's znode (kbroker/zk/quotas_zk.py).  The answer waits for the file and for both znode
  writes, in that order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from kbroker.replica.local_config_admin import LocalConfigAdmin
from kbroker.zk import broker_config_sync, quotas_zk, topic_config_sync

if TYPE_CHECKING:
    from kbroker.metadata.metadata_cache import MetadataCache
    from kbroker.replica.broker_state import BrokerState
    from kbroker.security.quotas import Entity
    from kbroker.security.scram_credentials import ScramCredential

__all__ = ["ZkConfigAdmin"]


class ZkConfigAdmin(LocalConfigAdmin):
    __slots__ = ("_broker", "_cache", "_zk")

    def __init__(self, state: BrokerState, zk: Any, cache: MetadataCache) -> None:
        """``zk``: the broker's ZooKeeper client (kbroker/zk/zk_client.py); ``cache``: its
        metadata cache, which knows every topic of the cluster."""
        super().__init__(state)
        self._broker = state   # the whole state: the ZooKeeper side reads and applies more
        self._zk = zk
        self._cache = cache

    def refresh(self, topics: Iterable[str], brokers: Iterable[str]) -> Awaitable[None]:
        return self._refresh(list(topics), list(brokers))

    async def _refresh(self, topics: list[str], brokers: list[str]) -> None:
        await topic_config_sync.refresh(self._broker, self._zk, self._cache, topics)
        await broker_config_sync.refresh(self._broker, self._zk, brokers)

    def topic_exists(self, topic: str) -> bool:
        return topic_config_sync.topic_exists(self._broker, self._cache, topic)

    def set_topic_overrides(self, topic: str, overrides: dict[str, str]) -> list[Future[None]]:
        stored = super().set_topic_overrides(topic, overrides)
        stored.append(topic_config_sync.publish(self._broker, self._zk, topic))
        return stored

    def set_broker_level(self, resource_name: str, props: dict[str, str]) -> list[Future[None]]:
        stored = super().set_broker_level(resource_name, props)
        stored.append(broker_config_sync.publish(self._broker, self._zk, resource_name))
        return stored

    def set_client_quota(self, entity: Entity, values: dict[str, float | None]) -> list[Future[None]]:
        stored = super().set_client_quota(entity, values)
        stored.append(quotas_zk.publish(self._broker, self._zk, entity))
        return stored

    def set_scram_credentials(self, changes: list[tuple[str, str, ScramCredential | None]]
                              ) -> list[Future[None]]:
        """The users' znodes (``/config/users/<u>``, shared with their quotas) and a
        notification each, so every broker's authenticator learns the change."""
        stored = super().set_scram_credentials(changes)
        for user in dict.fromkeys(name for name, _, _ in changes):
            stored.append(quotas_zk.publish(self._broker, self._zk, (user, None)))
        return stored
