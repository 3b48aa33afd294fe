"""The controller's two touch points with the store, over the coordination port.

* :func:`execute` applies one write the controller returned (``ZkWrite``: one multi;
  ``ZkDeleteTree``: Kafka's ``deleteRecursive``, children first, every delete fenced) and
  returns the ``ZkWriteResult`` to feed back.
* :func:`read_cluster` reads what ``BecameController`` carries (``/brokers/ids``, every
  topic znode and partition state znode, ``/admin/delete_topics``,
  ``/admin/preferred_replica_election``, ``/admin/reassign_partitions``), as
  ``onControllerFailover`` reads it.
* :func:`read_unclean_overrides`: the topics whose ``/config/topics/<t>`` sets
  ``unclean.leader.election.enable`` (Kafka's controller reads the topic configs of the
  partitions it elects for, ``collectUncleanLeaderElectionState``).

Both only await the port (``cluster.coordination.Coordination``); the runner in kbroker
calls them on its event loop, tests on the in-memory ``fake_store``.
"""

from __future__ import annotations

from cluster import znodes
from cluster.controller.commands import ZkDeleteTree, ZkWrite
from cluster.controller.events import BecameController, ZkWriteResult
from cluster.controller.fencing import fenced
from cluster.coordination import Coordination, CoordinationError, Delete, MultiError, NoNodeError
from cluster.metadata_image import BrokerInfo

__all__ = [
    "execute",
    "read_brokers",
    "read_cluster",
    "read_reassignment",
    "read_topics",
    "read_unclean_overrides",
]


async def execute(store: Coordination, write: ZkWrite | ZkDeleteTree) -> ZkWriteResult:
    try:
        if isinstance(write, ZkWrite):
            try:
                await store.multi(write.ops)
            except MultiError as e:
                if e.index == 0 or not isinstance(e.cause, write.tolerated or ()):
                    raise
        else:
            await _delete_tree(store, write.epoch_zk_version, write.path)
    except CoordinationError as e:
        return ZkWriteResult(write.write_id, e)
    return ZkWriteResult(write.write_id)


async def _delete_tree(store: Coordination, epoch_zk_version: int, path: str) -> None:
    try:
        children = await store.children(path)
    except NoNodeError:
        return
    for child in children:
        await _delete_tree(store, epoch_zk_version, f"{path}/{child}")
    try:
        await store.multi(fenced(epoch_zk_version, [Delete(path)]))
    except MultiError as e:
        if e.index == 0 or not isinstance(e.cause, NoNodeError):
            raise


async def read_brokers(store: Coordination) -> dict[int, BrokerInfo]:
    """Every registered broker with its epoch (the czxid of its znode)."""
    out: dict[int, BrokerInfo] = {}
    for child in await store.children(znodes.BROKER_IDS_PATH):
        try:
            data, stat = await store.get(znodes.broker_path(int(child)))
        except NoNodeError:
            continue  # gone between the listing and the read
        reg = znodes.decode_broker(int(child), data)
        out[reg.broker_id] = BrokerInfo(reg.broker_id, reg.endpoints, reg.rack, stat.czxid)
    return out


async def read_topics(store: Coordination) -> dict[str, znodes.TopicAssignment]:
    out: dict[str, znodes.TopicAssignment] = {}
    for topic in await store.children(znodes.TOPICS_PATH):
        try:
            data, _ = await store.get(znodes.topic_path(topic))
        except NoNodeError:
            continue
        out[topic] = znodes.decode_topic(data)
    return out


async def read_cluster(store: Coordination, epoch: int, epoch_zk_version: int) -> BecameController:
    topics = await read_topics(store)
    states: dict[tuple[str, int], tuple[znodes.PartitionState, int]] = {}
    for topic, ta in topics.items():
        for p in ta.partitions:
            try:
                data, stat = await store.get(znodes.partition_state_path(topic, p))
            except NoNodeError:
                continue
            states[(topic, p)] = (znodes.decode_partition_state(data), stat.version)
    try:
        to_delete = frozenset(await store.children(znodes.DELETE_TOPICS_PATH))
    except NoNodeError:
        to_delete = frozenset()
    try:
        data, _ = await store.get(znodes.PREFERRED_REPLICA_ELECTION_PATH)
        preferred: frozenset[tuple[str, int]] | None = frozenset(znodes.decode_partition_list(data))
    except NoNodeError:
        preferred = None
    return BecameController(epoch, epoch_zk_version, await read_brokers(store), topics, states,
                            to_delete, preferred, await read_reassignment(store))


async def read_reassignment(store: Coordination) -> dict[tuple[str, int], tuple[int, ...]] | None:
    """``/admin/reassign_partitions`` (partition -> target replicas), None when absent."""
    try:
        data, _ = await store.get(znodes.REASSIGN_PARTITIONS_PATH)
    except NoNodeError:
        return None
    return {tp: tuple(r) for tp, r in znodes.decode_reassignment(data).items()}


UNCLEAN = "unclean.leader.election.enable"


async def read_unclean_overrides(store: Coordination, topics: list[str]) -> dict[str, bool]:
    """``unclean.leader.election.enable`` of each of ``topics`` that overrides it (Kafka's
    boolean parsing: "true"/"false", case-insensitive, trimmed; anything else is ignored
    here, as the broker validated it when it was written)."""
    out: dict[str, bool] = {}
    for topic in topics:
        try:
            data, _ = await store.get(znodes.config_entity_path("topics", topic))
        except NoNodeError:
            continue
        value = znodes.decode_config(data).get(UNCLEAN)
        if value is not None and value.strip().lower() in ("true", "false"):
            out[topic] = value.strip().lower() == "true"
    return out
