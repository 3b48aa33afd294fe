"""Dynamic broker configs in cluster mode: ZooKeeper's ``/config/brokers/<id>`` (this
broker's level) and ``/config/brokers/<default>`` (the cluster-wide default) are the truth;
the local ``kbroker-broker-configs.json`` (kbroker/configs/dynamic_broker_configs.py) is a mirror.
Kafka's ZooKeeper mode: ``AdminZkClient.changeBrokerConfig`` on the broker that received
the AlterConfigs, then ``ZkConfigManager`` + ``BrokerConfigHandler`` on every broker.

* A change (AlterConfigs / IncrementalAlterConfigs on a BROKER resource) is validated and
  applied here, then written to the entity znode followed by a ``brokers/<id>`` or
  ``brokers/<default>`` notification (:func:`publish`, kbroker/zk/config_entities.py).
* Every broker applies a notification for ``<default>`` and for its own id, ignoring other
  ids (kbroker/zk/topic_config_sync.py's listener calls :func:`on_notification`).
* At start-up (and after a new ZooKeeper session) the broker reads both znodes
  (:func:`load`, Kafka's ``DynamicBrokerConfig.initialize``).  Until then its logs run with
  the mirror's values, which are the cluster's unless a change came while it was down.
* Before an alter, the levels named in the request are re-read (:func:`refresh`), as Kafka's
  ZkAdminManager reads the entity from ZooKeeper before an incremental change, so an
  APPEND/DELETE starts from the cluster's current set, not a notification not yet applied.

Why keep the mirror: the logs are opened before ZooKeeper is read (BrokerState builds its
log config from the file), so the mirror makes a restart open them with the values the
cluster had when the broker stopped; and the single-node code path stays the only one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from cluster import znodes
from kbroker.configs.dynamic_broker_configs import usable
from kbroker.runtime.zk_retry import deadline, until_connected
from kbroker.zk.config_entities import publish_entity, read_entity

if TYPE_CHECKING:
    from kbroker.replica.broker_state import BrokerState

__all__ = ["apply_level", "entity_name", "load", "on_notification", "publish", "refresh"]

log = logging.getLogger("kbroker.configs")

ENTITY_TYPE = "brokers"


def entity_name(resource_name: str) -> str:
    """The znode name of a BROKER resource: "" (cluster default) is ``<default>``."""
    return znodes.DEFAULT_ENTITY if resource_name == "" else resource_name


def apply_level(state: BrokerState, resource_name: str, props: dict[str, str]) -> None:
    """Make ``props`` (as read from ZooKeeper) the level's set here; names this broker cannot
    change at run time or bad values are dropped with a warning (Kafka logs and skips them
    too, one by one: DynamicBrokerConfig.fromPersistentProps, removeInvalidConfigs)."""
    kept, dropped = usable(props)
    if dropped:
        log.warning("ignoring dynamic broker config(s) of %s that cannot be applied: %s",
                    entity_name(resource_name), ", ".join(dropped))
    if state.dynamic_configs.level(resource_name) != kept:
        state.set_dynamic_broker_configs(resource_name, kept)
        log.info("dynamic broker configs of %s now %s", entity_name(resource_name), kept)


async def _reload(state: BrokerState, zk: Any, resource_name: str) -> None:
    props = await read_entity(zk, ENTITY_TYPE, entity_name(resource_name))
    apply_level(state, resource_name, props or {})


async def load(state: BrokerState, zk: Any) -> None:
    """Read the cluster default and this broker's level from ZooKeeper and apply them."""
    await _reload(state, zk, "")
    await _reload(state, zk, str(state.node_id))


async def refresh(state: BrokerState, zk: Any, resource_names: Iterable[str]) -> None:
    """Re-read the named levels ("" or this node's id; others are refused later) from ZooKeeper
    (for an AlterConfigs: through a lost connection, kbroker/runtime/zk_retry.py)."""
    by = deadline(zk)
    for name in dict.fromkeys(resource_names):
        if name in ("", str(state.node_id)):
            await until_connected(lambda name=name: _reload(state, zk, name), by,
                                  f"the dynamic configs of broker {name or '<default>'}")


async def on_notification(state: BrokerState, zk: Any, name: str) -> None:
    """A ``brokers/<name>`` notification: Kafka's BrokerConfigHandler.processConfigChanges."""
    if name == znodes.DEFAULT_ENTITY:
        await _reload(state, zk, "")
    elif name.strip() == str(state.node_id):
        await _reload(state, zk, str(state.node_id))


def publish(state: BrokerState, zk: Any, resource_name: str) -> Future[None]:
    """Write the level's current set to ZooKeeper and notify every broker."""
    return publish_entity(zk, ENTITY_TYPE, entity_name(resource_name),
                          state.dynamic_configs.level(resource_name))
