"""``ZkCoordinators``: the ``CoordinatorLocator`` port in ZooKeeper mode (kbroker/server/services.py),
Kafka's ``KafkaApis.getCoordinator`` of the ZooKeeper era.

The coordinator of a group is the leader of its ``__consumer_offsets`` partition, that of a
transactional id the leader of its ``__transaction_state`` partition
(``abs(key.hashCode) % partitions``, wire/java_hash.py), found in the metadata cache with
its endpoint on the request's listener (else the broker's first endpoint).  Every lookup is
answered after an await (the answer's shape does not depend on the cache's state).

The internal topic is created on the first lookup, as Kafka's AutoTopicCreationManager does,
with ``<prefix>.num.partitions``, ``<prefix>.replication.factor`` and the topic's enforced
configs; the lookup answers COORDINATOR_NOT_AVAILABLE meanwhile (the client asks again).
While fewer brokers are alive than the replication factor the topic is not created and the
answer carries Kafka's refusal ("Number of alive brokers ... does not meet the required
replication factor ..."); a partition without a live leader, or a creation that cannot reach
ZooKeeper within ``zookeeper.connection.timeout.ms`` (kbroker/runtime/zk_retry.py), answer
COORDINATOR_NOT_AVAILABLE with no message.

``__transaction_state``'s partition count, once seen in the cache, is handed to the
transaction coordinator's host (ids hash over the topic's count, pinned the first time;
kbroker/coordinators/internal_topic.py).

The single-node implementation is kbroker/coordinators/local_coordinators.py.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from kbroker.coordinators.group_service import offsets_topic_configs
from kbroker.coordinators.txn_service import topic_configs as transaction_topic_configs
from kbroker.runtime.zk_retry import ZkUnavailableError
from kbroker.zk import zk_admin
from wire.error_codes import ErrorCode
from wire.java_hash import partition_for
from wire.topic_names import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from cluster.coordination import Coordination
    from kbroker.configs.config import BrokerConfig
    from kbroker.coordinators.txn_service import TxnService
    from kbroker.metadata.metadata_cache import MetadataCache

__all__ = ["ZkCoordinators"]

log = logging.getLogger("kbroker.groups")

# (error, message, node id, host, port): one key's FindCoordinator answer
Answer = tuple[ErrorCode, "str | None", int, str, int]


class _Config(Protocol):
    @property
    def config(self) -> BrokerConfig:
        """The effective config (dynamic broker configs included): read per lookup."""
        ...


def _unavailable(msg: str | None = None) -> Answer:
    return ErrorCode.COORDINATOR_NOT_AVAILABLE, msg, -1, "", -1


class ZkCoordinators:
    __slots__ = ("_cache", "_zk", "_config", "_txns")

    def __init__(self, cache: MetadataCache, zk: Coordination, config: _Config, txns: TxnService) -> None:
        self._cache = cache
        self._zk = zk
        self._config = config
        self._txns = txns

    async def group_coordinator(self, group_id: str, listener_name: str) -> Answer:
        topic = self._cache.topic(GROUP_METADATA_TOPIC)
        if topic is None:
            return _unavailable(await self._create_internal_topic(
                GROUP_METADATA_TOPIC, "offsets topic", "offsets.topic", offsets_topic_configs(self._config.config)))
        return self._leader_of(GROUP_METADATA_TOPIC, partition_for(group_id, len(topic.partitions)), listener_name)

    async def transaction_coordinator(self, transactional_id: str, listener_name: str) -> Answer:
        topic = self._cache.topic(TRANSACTION_STATE_TOPIC)
        if topic is None:
            return _unavailable(await self._create_internal_topic(
                TRANSACTION_STATE_TOPIC, "transactions state topic", "transaction.state.log",
                transaction_topic_configs(self._config.config)))
        self._txns.host.partitions_known(len(topic.partitions))
        return self._leader_of(TRANSACTION_STATE_TOPIC, partition_for(transactional_id, len(topic.partitions)),
                               listener_name)

    def _leader_of(self, topic: str, index: int, listener_name: str) -> Answer:
        leader = self._cache.leader(topic, index)
        broker = self._cache.broker(leader) if leader >= 0 else None
        if broker is None or not broker.endpoints:
            return _unavailable()
        e = broker.endpoint(listener_name) or broker.endpoints[0]
        return ErrorCode.NONE, None, leader, e.host, e.port

    async def _create_internal_topic(self, topic: str, what: str, prefix: str,
                                     configs: dict[str, str]) -> str | None:
        """Create ``topic`` from ``<prefix>.num.partitions`` / ``<prefix>.replication.factor``
        if enough brokers are alive; Kafka's refusal message if not."""
        cfg = self._config.config
        rf = cfg[f"{prefix}.replication.factor"]
        live = self._cache.live_brokers()
        if len(live) < rf:
            return (f"Number of alive brokers '{len(live)}' does not meet the required replication "
                    f"factor '{rf}' for the {what} (configured via "
                    f"'{prefix}.replication.factor'). This error can be ignored if the cluster is "
                    "starting up and not all brokers are up yet.")
        assignment = zk_admin.assign(live, cfg[f"{prefix}.num.partitions"], rf)
        try:
            await zk_admin.create_topic(self._zk, topic, assignment, configs)
            log.info("created %s with %d partition(s), replication factor %d", topic, len(assignment), rf)
        except zk_admin.TopicExistsError:
            pass
        except ZkUnavailableError as e:   # COORDINATOR_NOT_AVAILABLE; the client asks again
            log.info("creating %s: %s", topic, e)
        return None
