"""What the consumer-group coordinator knows of the cluster's topics (Kafka's
``CoordinatorMetadataImage``): id, name, partition count and each partition's replica racks.

The adapter hands the coordinator a :class:`TopicsImage`; it builds a new one only when
the topics changed, so ``image is group.metadata_seen`` tells a group that nothing moved
since its metadata hash was computed.

The metadata hash (Kafka's ``Utils.computeTopicHash`` / ``computeGroupHash``) is stored in
ConsumerGroupMetadata so that a coordinator notices a change of the subscribed topics
(created, deleted, grown, racks moved) and bumps the group epoch.  Kafka hashes with XXH3;
this one with BLAKE2b over the same fields.  The two never compare each other's value: a
Kafka broker loading these records sees a different hash once and recomputes the
assignment, which is what a metadata change does anyway.
"""

from __future__ import annotations

import hashlib
import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["TopicImage", "TopicsImage", "EMPTY_IMAGE"]

_MAGIC = 0


@dataclass(frozen=True, slots=True)
class TopicImage:
    topic_id: uuid.UUID
    name: str
    num_partitions: int
    partition_racks: Mapping[int, frozenset[str]] = field(default_factory=dict)

    def hash(self) -> int:
        """The topic's hash: id, name, partition count, each partition's sorted racks."""
        h = hashlib.blake2b(digest_size=8)
        h.update(bytes([_MAGIC]))
        h.update(self.topic_id.bytes)
        name = self.name.encode()
        h.update(struct.pack(">i", len(name)) + name)
        h.update(struct.pack(">i", self.num_partitions))
        for p in range(self.num_partitions):
            h.update(struct.pack(">i", p))
            for rack in sorted(self.partition_racks.get(p, ())):
                raw = rack.encode()
                h.update(struct.pack(">i", len(raw)) + raw)
        return struct.unpack(">q", h.digest())[0]


class TopicsImage:
    """An immutable set of topics by name and by id; ``version`` grows with every new image."""

    def __init__(self, topics: Iterable[TopicImage] = (), version: int = 0) -> None:
        self.by_name: dict[str, TopicImage] = {t.name: t for t in topics}
        self.by_id: dict[uuid.UUID, TopicImage] = {t.topic_id: t for t in self.by_name.values()}
        self.version = version
        self._hashes: dict[str, int] = {}

    def topic_hash(self, name: str) -> int:
        """0 for a topic that does not exist (Kafka's rule)."""
        cached = self._hashes.get(name)
        if cached is None:
            topic = self.by_name.get(name)
            cached = self._hashes[name] = 0 if topic is None else topic.hash()
        return cached

    def group_hash(self, names: Iterable[str]) -> int:
        """Kafka's ``computeGroupHash``: the subscribed topics' hashes in name order; 0 for none."""
        ordered = sorted(set(names))
        if not ordered:
            return 0
        h = hashlib.blake2b(digest_size=8)
        for name in ordered:
            h.update(struct.pack(">q", self.topic_hash(name)))
        return struct.unpack(">q", h.digest())[0]


EMPTY_IMAGE = TopicsImage()
