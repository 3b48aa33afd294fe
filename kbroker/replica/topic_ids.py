"""Topic ids (KIP-516): which id each topic has on this broker, and the way back from an id
to its topic's name (Metadata v10+ and DeleteTopics v6+ by id, Fetch v13+).

Where the truth is:

* Single node: the ``partition.metadata`` files of the topic's partition directories
  (log/partition_metadata_file.py).  At start-up (``load``) each topic takes the id its
  files hold; partitions without a file (data from before topic ids) get that id written;
  a topic none of whose partitions has one gets a new id (``Uuid.randomUuid``), written to
  each.  Two partitions of one topic holding different ids is Kafka's
  INCONSISTENT_TOPIC_ID at log load (UnifiedLog.initializeTopicId throws, the log dir goes
  offline): the broker does not start, and the message names both directories.  A new
  topic gets its id when its creation starts (``get_or_assign``), before any partition
  opens, so CreateTopics can answer it; a deleted topic's id is forgotten (``remove``):
  a topic created again with the same name gets a new id, as in Kafka.
* Cluster mode: ZooKeeper's ``/brokers/topics/<t>`` (``"topic_id"``; the controller adds
  one to topics that have none, cluster/controller).  This map holds what LeaderAndIsr
  said (``set``); the metadata cache holds what UpdateMetadata said and is what requests
  are answered from (the metadata port's ``name_for_id``, kbroker/metadata/metadata_view.py).  Logs that hold another id than LeaderAndIsr's are
  refused for that partition with INCONSISTENT_TOPIC_ID (kbroker/replica/replica_manager.py).

Every partition log opened goes through ``assign`` (BrokerState.new_partition): it gives the
log its topic's id, which writes ``partition.metadata`` off the event loop (log/log.py).
Thread-safe: creations open logs on executor threads.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from log.log_dir_checks import LogDirError
from wire.uuids import random_uuid, uuid_to_string

if TYPE_CHECKING:
    from log.log import Log

__all__ = ["TopicIds"]

log = logging.getLogger("kbroker.state")


class TopicIds:
    def __init__(self, create: bool = True) -> None:
        """``create``: new topics get a new id here (single node); in cluster mode the ids
        come from the controller only."""
        self.create = create
        self._lock = threading.Lock()
        self._ids: dict[str, uuid.UUID] = {}
        self._names: dict[uuid.UUID, str] = {}

    # ------------------------------------------------------------ queries
    def id_of(self, name: str) -> uuid.UUID | None:
        return self._ids.get(name)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return self._names.get(topic_id)

    # ------------------------------------------------------------ changes
    def set(self, name: str, topic_id: uuid.UUID) -> None:
        with self._lock:
            old = self._ids.get(name)
            if old is not None and self._names.get(old) == name:
                del self._names[old]
            self._ids[name] = topic_id
            self._names[topic_id] = name

    def get_or_assign(self, name: str) -> uuid.UUID:
        """The topic's id, a new one if it has none yet (a creation starting)."""
        with self._lock:
            tid = self._ids.get(name)
            if tid is None:
                tid = self._ids[name] = random_uuid()
                self._names[tid] = name
            return tid

    def remove(self, name: str) -> None:
        with self._lock:
            tid = self._ids.pop(name, None)
            if tid is not None and self._names.get(tid) == name:
                del self._names[tid]

    def assign(self, name: str, lg: Log) -> None:
        """Give a newly opened log its topic's id (a new id first if the topic has none and
        ids are made here); in cluster mode without an id from LeaderAndIsr yet, nothing."""
        tid = self.get_or_assign(name) if self.create else self.id_of(name)
        if tid is not None:
            lg.assign_topic_id(tid)

    def load(self, logs: Iterable[tuple[tuple[str, int], Log]]) -> None:
        """Start-up: every topic's id from its partitions' files (see the module docstring).
        In cluster mode (``create`` off) nothing happens here: each log keeps the id its
        file holds and LeaderAndIsr checks it per partition (INCONSISTENT_TOPIC_ID), as
        Kafka's ZooKeeper-era broker does."""
        if not self.create:
            return
        by_topic: dict[str, list[tuple[int, Log]]] = {}
        for (topic, index), lg in logs:
            by_topic.setdefault(topic, []).append((index, lg))
        for topic, parts in sorted(by_topic.items()):
            found = {lg.topic_id: lg for _, lg in sorted(parts, key=lambda p: p[0]) if lg.topic_id is not None}
            if len(found) > 1:
                (a, la), (b, lb) = list(found.items())[:2]
                raise LogDirError(
                    f"Inconsistent topic IDs for topic {topic}: {la.dir}/partition.metadata has "
                    f"{uuid_to_string(a)}, {lb.dir}/partition.metadata has {uuid_to_string(b)} "
                    "(INCONSISTENT_TOPIC_ID). Move the partition directory that does not belong to "
                    "this topic out of the log dir.")
            if found:
                tid = next(iter(found))
            else:
                tid = random_uuid()
                log.info("topic %s has no topic id (no partition.metadata): assigned %s", topic,
                         uuid_to_string(tid))
            self.set(topic, tid)
            for _, lg in parts:
                lg.assign_topic_id(tid)
