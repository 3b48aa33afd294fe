"""The group coordinator's view of the topics (``groups.consumer.topics.TopicsImage``), built
from the broker's ``MetadataSource`` port: a single node's own topics, or in cluster mode the
metadata cache the controller's UpdateMetadata requests keep.

A new image is built only when something the coordinator reads changed (a topic created or
deleted, a partition count, a topic id, or, when brokers have racks, a partition's
replicas), so ``image is previous`` is how a group knows its metadata hash still holds.
The check costs one pass over the topic names and their partition counts per heartbeat.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol

from groups.consumer.topics import TopicImage, TopicsImage
from wire.messages import ZERO_UUID


class _Metadata(Protocol):
    """The part of the ``MetadataSource`` port (kbroker/server/services.py) read here."""

    def view(self) -> Any: ...

__all__ = ["TopicsImageSource"]


class TopicsImageSource:
    def __init__(self, metadata: _Metadata) -> None:
        self._metadata = metadata
        self._image = TopicsImage()
        self._signature: Hashable = None

    def __call__(self) -> TopicsImage:
        view = self._metadata.view()
        racks = {b.node_id: b.rack for b in view.brokers() if b.rack}
        topics = []
        signature = []
        for name in sorted(view.topic_names()):
            topic = view.topic(name)
            if topic is None or topic.topic_id == ZERO_UUID:
                continue
            if racks:
                replicas = tuple(tuple(p.replicas) for p in topic.partitions)
                signature.append((name, topic.topic_id, len(topic.partitions), replicas))
            else:
                signature.append((name, topic.topic_id, len(topic.partitions)))
            topics.append(topic)
        key = (tuple(signature), tuple(sorted(racks.items())))
        if key == self._signature:
            return self._image
        images = []
        for topic in topics:
            partition_racks = {}
            if racks:
                for p in topic.partitions:
                    partition_racks[p.index] = frozenset(racks[r] for r in p.replicas if r in racks)
            images.append(TopicImage(topic.topic_id, topic.name, len(topic.partitions),
                                     partition_racks))
        self._image = TopicsImage(images, self._image.version + 1)
        self._signature = key
        return self._image
