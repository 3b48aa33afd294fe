"""``LocalConfigAdmin``: the ``ConfigAdmin`` port of a single node (kbroker/server/services.py).

A single node's stores in its first log dir are the truth: topic overrides
(kbroker/configs/topic_configs.py), the dynamic broker levels (kbroker/configs/dynamic_broker_configs.py),
client quotas (kbroker/security/quotas.py) and SCRAM credentials (kbroker/security/scram_credentials.py).  A
change applies at once (a topic's logs, or every topic without its own override, follow) and
returns the futures of its file writes, which the answer waits for.  There is nothing to
re-read before a describe or an alter: :meth:`refresh` answers None.

ZooKeeper mode's implementation (kbroker/zk/zk_config_admin.py) keeps these stores as mirrors
and also writes each change to ZooKeeper.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kbroker.configs.config import BrokerConfig
    from kbroker.configs.dynamic_broker_configs import DynamicBrokerConfigs
    from kbroker.configs.topic_configs import TopicConfigStore
    from kbroker.metadata.catalog import TopicInfo
    from kbroker.security.quotas import Entity, QuotaManager
    from kbroker.security.scram_credentials import ScramCredential, ScramCredentialStore
    from log.config import LogConfig

__all__ = ["ConfigStores", "LocalConfigAdmin", "apply_topic_overrides"]


class ConfigStores(Protocol):
    """What the config admin changes: the broker's stores, and the two changes its logs
    follow at once (kbroker/replica/broker_state.py's ``BrokerState`` is one)."""

    static_config: BrokerConfig
    topics: Mapping[str, TopicInfo]
    topic_configs: TopicConfigStore
    dynamic_configs: DynamicBrokerConfigs
    quotas: QuotaManager
    scram_credentials: ScramCredentialStore

    def set_topic_overrides(self, name: str, overrides: dict[str, str]) -> None: ...

    def set_dynamic_broker_configs(self, resource_name: str, props: dict[str, str]) -> None: ...


def apply_topic_overrides(state: ConfigStores, topic: str, overrides: dict[str, str]) -> None:
    """Make ``overrides`` the topic's overrides here (nothing written when they already are);
    its logs follow if this broker holds the topic."""
    if state.topic_configs.overrides_of(topic) == overrides:
        return
    if topic in state.topics:
        state.set_topic_overrides(topic, overrides)
    else:
        state.topic_configs.set(topic, overrides)


class LocalConfigAdmin:
    __slots__ = ("_state",)

    def __init__(self, state: ConfigStores) -> None:
        self._state = state

    # ------------------------------------------------------------ reads
    def refresh(self, topics: Iterable[str], brokers: Iterable[str]) -> Awaitable[None] | None:
        return None

    def topic_exists(self, topic: str) -> bool:
        return topic in self._state.topics

    def topic_overrides(self, topic: str) -> dict[str, str]:
        return self._state.topic_configs.overrides_of(topic)

    def topic_config(self, topic: str) -> LogConfig:
        return self._state.topic_configs.config_for(topic)

    def broker_level(self, resource_name: str) -> dict[str, str]:
        return self._state.dynamic_configs.level(resource_name)

    def validate_broker_level(self, resource_name: str, props: dict[str, str]) -> None:
        self._state.dynamic_configs.validate(self._state.static_config, resource_name, props)

    # ------------------------------------------------------------ changes
    def set_topic_overrides(self, topic: str, overrides: dict[str, str]) -> list[Future[None]]:
        apply_topic_overrides(self._state, topic, overrides)
        return [self._state.topic_configs.durable()]

    def set_broker_level(self, resource_name: str, props: dict[str, str]) -> list[Future[None]]:
        self._state.set_dynamic_broker_configs(resource_name, props)
        return [self._state.dynamic_configs.durable()]

    def set_client_quota(self, entity: Entity, values: dict[str, float | None]) -> list[Future[None]]:
        return [self._state.quotas.set(entity, values)]

    def set_scram_credentials(self, changes: list[tuple[str, str, ScramCredential | None]]
                              ) -> list[Future[None]]:
        return self._state.scram_credentials.apply(changes)
