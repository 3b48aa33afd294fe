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
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from cluster import znodes
from cluster.assignment import BrokerMetadata, assign_replicas_to_brokers
from cluster.coordination import Coordination, Create, NodeExistsError
from cluster.metadata_image import BrokerInfo
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
                       configs: Mapping[str, str]) -> uuid.UUID:
    """Write the topic's config and assignment znodes; TopicExistsError if it exists."""
    topic_id = random_uuid()   # Uuid.randomUuid: never zero, reserved or '-'-led
    try:
        # AdminZkClient.createTopicWithAssignment: the config first, then the topic znode,
        # both as one transaction here (so a topic never appears without its config).
        config_path = znodes.config_entity_path("topics", name)
        ops = [Create(znodes.topic_path(name), znodes.encode_topic(znodes.TopicAssignment(
            {p: tuple(r) for p, r in assignment.items()}, topic_id)))]
        existing_config = await zk.exists(config_path)
        if existing_config is None:
            ops.insert(0, Create(config_path, znodes.encode_config(dict(configs))))
        else:
            await zk.set(config_path, znodes.encode_config(dict(configs)))
        await zk.multi(ops)
    except Exception as e:
        cause = getattr(e, "cause", e)
        if isinstance(cause, NodeExistsError):
            raise TopicExistsError(f"Topic '{name}' already exists.") from None
        raise
    return topic_id


async def add_partitions(zk: Coordination, name: str, current: znodes.TopicAssignment,
                         added: Mapping[int, Sequence[int]]) -> None:
    parts = dict(current.partitions)
    parts.update({p: tuple(r) for p, r in added.items()})
    await zk.set(znodes.topic_path(name), znodes.encode_topic(znodes.TopicAssignment(
        parts, current.topic_id, current.adding_replicas, current.removing_replicas)))


async def delete_topic(zk: Coordination, name: str) -> None:
    try:
        await zk.create(znodes.delete_topic_path(name))
    except NodeExistsError:
        pass  # already queued (TopicAlreadyMarkedForDeletion: fine for the caller)
