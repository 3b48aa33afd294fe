"""Config entities in ZooKeeper (Kafka's ``AdminZkClient.changeEntityConfig``): the stored
overrides of ``/config/<type>/<name>`` and the ``/config/changes`` notification that tells
every broker to re-read them.  Used by kbroker/zk/topic_config_sync.py (``topics/<t>``) and
kbroker/zk/broker_config_sync.py (``brokers/<id>``, ``brokers/<default>``).

Formats (cluster/znodes.py): the entity ``{"version":1,"config":{...}}``; the notification a
persistent sequential ``/config/changes/config_change_NNNNNNNNNN`` holding
``{"version":2,"entity_path":"<type>/<name>"}``, written after the entity.

Both writes wait out a lost ZooKeeper connection (kbroker/runtime/zk_retry.py, for up to
``zookeeper.connection.timeout.ms``), as KafkaZkClient's do.  The entity's write is the same
data again; a notification retried after a loss that hid its success is written twice,
which only makes the brokers re-read the entity once more.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from typing import Any

from cluster import znodes
from cluster.coordination import NodeExistsError, NoNodeError
from kbroker.runtime.zk_retry import deadline, until_connected

__all__ = ["completion_of", "publish_entity", "read_entity"]


async def read_entity(zk: Any, entity_type: str, name: str) -> dict[str, str] | None:
    """The entity's overrides; None when it has no znode."""
    try:
        data, _ = await zk.get(znodes.config_entity_path(entity_type, name))
    except NoNodeError:
        return None
    return znodes.decode_config(data)


def publish_entity(zk: Any, entity_type: str, name: str, overrides: dict[str, str]) -> Future[None]:
    """Write the entity's overrides, then the notification; the future is done once both
    are stored (an AlterConfigs answer waits for it).  Runs on the loop's ZooKeeper client:
    call it from the event loop."""
    snapshot = dict(overrides)

    path = znodes.config_entity_path(entity_type, name)
    data = znodes.encode_config(snapshot)

    async def store() -> None:
        try:
            await zk.set(path, data)
        except NoNodeError:
            try:
                await zk.create(path, data, make_parents=True)
            except NodeExistsError:   # created meanwhile (by this write before a lost answer)
                await zk.set(path, data)

    async def notify() -> None:
        await zk.create(f"{znodes.CONFIG_CHANGES_PATH}/{znodes.CONFIG_CHANGE_PREFIX}",
                        znodes.encode_config_change(f"{entity_type}/{name}"), sequential=True)

    async def write() -> None:
        by = deadline(zk)
        await until_connected(store, by, f"the config of {entity_type}/{name}")
        await until_connected(notify, by, f"the config change of {entity_type}/{name}")

    return completion_of(asyncio.ensure_future(write()))


def completion_of(task: asyncio.Future[None]) -> Future[None]:
    """A thread-safe future that ends as ``task`` ends (result, exception or cancellation):
    what a handler's ``answer_when_stored`` waits on for a ZooKeeper write."""
    done: Future[None] = Future()

    def finished(t: asyncio.Future[None]) -> None:
        if t.cancelled():
            done.cancel()
        elif t.exception() is not None:
            done.set_exception(t.exception())  # type: ignore[arg-type]
        else:
            done.set_result(None)

    task.add_done_callback(finished)
    return done
