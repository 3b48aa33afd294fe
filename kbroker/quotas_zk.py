"""Client quotas in ZooKeeper, cluster mode (Kafka's ZooKeeper-era layout, as
``kafka-configs --entity-type users/clients`` and ``AdminZkClient.changeClientIdConfig`` /
``changeUserOrUserClientIdConfig`` write it):

  /config/clients/<client id>            {"version":1,"config":{"producer_byte_rate":"1048576"}}
  /config/users/<user>
  /config/users/<user>/clients/<client id>
  (``<default>`` for a default entity; other names URL-encoded as Kafka's Sanitizer does)

each change followed by a ``/config/changes/config_change_`` notification whose entity path
is ``clients/<c>``, ``users/<u>`` or ``users/<u>/clients/<c>``.  The broker that answers
AlterClientQuotas applies the change, writes the entity, then notifies (:func:`publish`);
every broker re-reads a notified entity (:func:`on_notification`, from
kbroker/topic_config_sync.py's listener) and reads them all at start-up (:func:`load`).
The log-dir file (kbroker/quotas.py) stays a mirror.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from cluster.coordination import NoNodeError
from kbroker.config_entities import publish_entity, read_entity
from kbroker.quotas import DEFAULT, Entity

if TYPE_CHECKING:
    from kbroker.broker_state import BrokerState


def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize (URL encoding, ``*`` as %2A); ``<default>`` stays."""
    return name if name == DEFAULT else quote(name, safe="-_.")


def desanitize(name: str) -> str:
    return name if name == DEFAULT else unquote(name)


def entity_znode(entity: Entity) -> tuple[str, str]:
    """(entity type, entity name) of ``/config/<type>/<name>``."""
    user, client = entity
    if user is None:
        return "clients", sanitize(client or "")
    if client is None:
        return "users", sanitize(user)
    return "users", f"{sanitize(user)}/clients/{sanitize(client)}"


def parse_entity_path(path: str) -> Entity | None:
    bits = path.split("/")
    if len(bits) == 2 and bits[0] == "clients":
        return None, desanitize(bits[1])
    if len(bits) == 2 and bits[0] == "users":
        return desanitize(bits[1]), None
    if len(bits) == 4 and bits[0] == "users" and bits[2] == "clients":
        return desanitize(bits[1]), desanitize(bits[3])
    return None


def publish(state: BrokerState, entity: Entity) -> Future[None]:
    cluster = state.cluster
    assert cluster is not None
    values = {k: _text(v) for k, v in state.quotas.configs.get(entity, {}).items()}
    entity_type, name = entity_znode(entity)
    return publish_entity(cluster.zk, entity_type, name, values)


async def _reload(state: BrokerState, zk: Any, entity: Entity) -> None:
    entity_type, name = entity_znode(entity)
    props = await read_entity(zk, entity_type, name) or {}
    state.quotas.replace(entity, {k: float(v) for k, v in props.items()})


async def on_notification(state: BrokerState, zk: Any, entity_path: str) -> None:
    entity = parse_entity_path(entity_path)
    if entity is not None:
        await _reload(state, zk, entity)


async def load(state: BrokerState, zk: Any) -> None:
    """Read every client, user and user+client quota entity from ZooKeeper."""
    for entity_type in ("clients", "users"):
        try:
            names = await zk.children(f"/config/{entity_type}")
        except NoNodeError:
            continue
        for name in names:
            await on_notification(state, zk, f"{entity_type}/{name}")
            if entity_type == "users":
                try:
                    clients = await zk.children(f"/config/users/{name}/clients")
                except NoNodeError:
                    continue
                for client in clients:
                    await on_notification(state, zk, f"users/{name}/clients/{client}")


def _text(v: float) -> str:
    return str(int(v)) if v == int(v) else repr(v)
