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
kbroker/zk/topic_config_sync.py's listener) and reads them all at start-up (:func:`load`).
The log-dir file (kbroker/security/quotas.py) stays a mirror.

A user's znode also holds its SCRAM credentials, as Kafka's ZooKeeper-era brokers keep them
(``ScramCredentialUtils``; ``kafka-configs --entity-type users --alter --add-config
'SCRAM-SHA-256=[password=...]'`` writes them there)::

  /config/users/<user>   {"version":1,"config":{"producer_byte_rate":"1048576",
                          "SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}}

so the two share one writer: whoever changes one kind writes the user's whole config (quota
values and credentials, :func:`user_config`), and a notified reload hands each kind its keys
(``SCRAM-*`` to kbroker/security/scram_credentials.py, the rest to the quotas).  The log-dir file of
the credentials stays a mirror too.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from cluster.coordination import NoNodeError
from kbroker.security.quotas import DEFAULT, Entity
from kbroker.security.scram_credentials import MECHANISMS, ScramCredential
from kbroker.zk.config_entities import publish_entity, read_entity

if TYPE_CHECKING:
    from kbroker.replica.broker_state import BrokerState


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


def user_config(state: BrokerState, entity: Entity) -> dict[str, str]:
    """The config of ``entity``'s znode: its quota values, and for a plain user entity
    (not ``<default>``) its SCRAM credentials in Kafka's stored form."""
    values = {k: _text(v) for k, v in state.quotas.configs.get(entity, {}).items()}
    user, client = entity
    if user is not None and client is None and user != DEFAULT:
        for mechanism, cred in state.scram_credentials.mechanisms(user).items():
            values[mechanism] = cred.to_string()
    return values


def publish(state: BrokerState, zk: Any, entity: Entity) -> Future[None]:
    """Write ``entity``'s whole config (after a quota or credential change), then notify."""
    entity_type, name = entity_znode(entity)
    return publish_entity(zk, entity_type, name, user_config(state, entity))


async def _reload(state: BrokerState, zk: Any, entity: Entity) -> None:
    entity_type, name = entity_znode(entity)
    props = await read_entity(zk, entity_type, name) or {}
    state.quotas.replace(entity, {k: float(v) for k, v in props.items() if k not in MECHANISMS})
    user, client = entity
    if user is not None and client is None and user != DEFAULT:
        state.scram_credentials.replace_user(
            user, {k: ScramCredential.from_string(v) for k, v in props.items() if k in MECHANISMS})


async def on_notification(state: BrokerState, zk: Any, entity_path: str) -> None:
    entity = parse_entity_path(entity_path)
    if entity is not None:
        await _reload(state, zk, entity)


async def load(state: BrokerState, zk: Any) -> None:
    """Read every client, user and user+client quota entity (and the users' SCRAM
    credentials) from ZooKeeper; ZooKeeper is the truth: a credential in the log-dir mirror
    whose user has no znode any more (deleted while this broker was down) is dropped."""
    for entity_type in ("clients", "users"):
        try:
            names = await zk.children(f"/config/{entity_type}")
        except NoNodeError:
            names = []
        if entity_type == "users":
            in_zk = {desanitize(n) for n in names}
            for user in state.scram_credentials.users():
                if user not in in_zk:
                    state.scram_credentials.replace_user(user, {})
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
