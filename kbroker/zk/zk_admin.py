"""Topic administration in ZooKeeper, as Kafka's ``AdminZkClient`` writes it.

* :func:`create_topic`: ``/config/topics/<t>`` (the topic's overrides, ``{"version":1,
  "config":{...}}``) then ``/brokers/topics/<t>`` (assignment and a new topic id) - the
  controller's child watch on ``/brokers/topics`` does the rest (state znodes, leaders,
  LeaderAndIsr).  Replicas are placed by ``assignReplicasToBrokers`` over the live brokers.
* :func:`add_partitions`: rewrites ``/brokers/topics/<t>`` with the new partitions (the
  controller's data watch on the topic sees them).
* :func:`delete_topic`: creates ``/admin/delete_topics/<t>`` (the controller's deletion
  manager does the rest).

Used by the controller broker for CreateTopics/CreatePartitions/DeleteTopics and by any
broker for auto-creation (Metadata, FindCoordinator), as Kafka 2.x ZooKeeper mode did.

Each write is retried through a lost connection or an expired session until ``by`` (an
event-loop time; default ``zookeeper.connection.timeout.ms`` from now), then
``kbroker.runtime.zk_retry.ZkUnavailableError`` (kbroker/runtime/zk_retry.py).  Retrying is idempotent: a
topic whose creation was applied before its answer was lost is found again with the topic
id this call wrote (success, not TopicExistsError); the partitions' rewrite and the
deletion marker write the same thing again.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from cluster import znodes
from cluster.assignment import BrokerMetadata, assign_replicas_to_brokers
from cluster.coordination import Coordination, Create, NodeExistsError, NoNodeError
from cluster.metadata_image import BrokerInfo
from kbroker.runtime.zk_retry import deadline, until_connected
from wire.uuids import random_uuid

__all__ = ["TopicExistsError", "add_partitions", "assign", "create_topic", "delete_topic"]


class TopicExistsError(Exception):
    pass


def assign(brokers: Sequence[BrokerInfo], partitions: int, replication_factor: int,
           start_partition_id: int = -1) -> dict[int, list[int]]:
    """Kafka's placement over ``brokers`` (raises cluster.assignment's errors)."""
    return assign_replicas_to_brokers(
        [BrokerMetadata(b.broker_id, b.rack) for b in sorted(brokers, key=lambda b: b.broker_id)],
        partitions, replication_factor, start_partition_id=start_partition_id)


async def create_topic(zk: Coordination, name: str, assignment: Mapping[int, Sequence[int]],
                       configs: Mapping[str, str], by: float | None = None) -> uuid.UUID:
    """Write the topic's config and assignment znodes; TopicExistsError if it exists."""
    topic_id = random_uuid()   # Uuid.randomUuid: never zero, reserved or '-'-led
    topic_path = znodes.topic_path(name)
    config_path = znodes.config_entity_path("topics", name)
    config = znodes.encode_config(dict(configs))

    async def attempt() -> None:
        try:
            # AdminZkClient.createTopicWithAssignment: the config first, then the topic znode,
            # both as one transaction here (so a topic never appears without its config).
            ops = [Create(topic_path, znodes.encode_topic(znodes.TopicAssignment(
                {p: tuple(r) for p, r in assignment.items()}, topic_id)))]
            if await zk.exists(config_path) is None:
                ops.insert(0, Create(config_path, config))
            else:
                await zk.set(config_path, config)
            await zk.multi(ops)
        except Exception as e:
            cause = getattr(e, "cause", e)
            if not isinstance(cause, NodeExistsError):
                raise
            if await _topic_id_of(zk, topic_path) == topic_id:
                return   # our own write, applied before a lost connection hid its answer
            raise TopicExistsError(f"Topic '{name}' already exists.") from None

    await until_connected(attempt, deadline(zk) if by is None else by, f"creating topic {name}")
    return topic_id


async def _topic_id_of(zk: Coordination, topic_path: str) -> uuid.UUID | None:
    try:
        data, _ = await zk.get(topic_path)
    except NoNodeError:
        return None
    try:
        return znodes.decode_topic(data).topic_id
    except znodes.ZnodeFormatError:
        return None


async def add_partitions(zk: Coordination, name: str, current: znodes.TopicAssignment,
                         added: Mapping[int, Sequence[int]], by: float | None = None) -> None:
    parts = dict(current.partitions)
    parts.update({p: tuple(r) for p, r in added.items()})
    data = znodes.encode_topic(znodes.TopicAssignment(
        parts, current.topic_id, current.adding_replicas, current.removing_replicas))

    async def attempt() -> None:
        await zk.set(znodes.topic_path(name), data)

    await until_connected(attempt, deadline(zk) if by is None else by, f"adding partitions to {name}")


async def delete_topic(zk: Coordination, name: str, by: float | None = None) -> None:
    async def attempt() -> None:
        try:
            await zk.create(znodes.delete_topic_path(name))
        except NodeExistsError:
            pass  # already queued (TopicAlreadyMarkedForDeletion: fine for the caller)

    await until_connected(attempt, deadline(zk) if by is None else by, f"deleting topic {name}")
