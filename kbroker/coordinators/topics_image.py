"""The group coordinator's view of the topics (``groups.consumer.topics.TopicsImage``), built
from the broker's ``MetadataSource`` port: a single node's own topics, or in cluster mode the
metadata cache the controller's UpdateMetadata requests keep.

A new image is built only when something the coordinator reads changed (a topic created or
deleted, a partition count, a topic id, or, when brokers have racks, a partition's
replicas), so ``image is previous`` is how a group knows its metadata hash still holds.
The check is one pass over every topic of the broker (~3 µs a topic), so it runs at most
once per ``CHECK_INTERVAL_MS``, not on every heartbeat: with 1,000 topics a check per
heartbeat made the heartbeat 10x dearer (bench/results/consumer_protocol_quick.md).  A
change reaches the groups within that interval, as Kafka's metadata image reaches its
coordinator some time after the controller wrote it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from groups.consumer.topics import TopicImage, TopicsImage
from wire.messages import ZERO_UUID


class _Metadata(Protocol):
    """The part of the ``MetadataSource`` port (kbroker/server/services.py) read here."""

    def view(self) -> Any: ...

__all__ = ["TopicsImageSource"]


CHECK_INTERVAL_MS = 250


class TopicsImageSource:
    def __init__(self, metadata: _Metadata, now_ms: Callable[[], int] | None = None) -> None:
        self._metadata = metadata
        self._now_ms = now_ms or (lambda: time.monotonic_ns() // 1_000_000)
        self._image = TopicsImage()
        self._signature: Hashable = None
        self._checked_at: int | None = None

    def __call__(self) -> TopicsImage:
        now = self._now_ms()
        if self._checked_at is not None and now - self._checked_at < CHECK_INTERVAL_MS:
            return self._image
        self._checked_at = now
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
