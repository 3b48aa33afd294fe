"""``BrokerState``: what every handler may reach: config, partitions, topics, producer ids.

Topics are the partition directories found in ``log.dirs`` at start-up (the way a Kafka
log dir records them) plus those created since; config overrides live in
kbroker/configs/topic_configs.py.  Single node: every partition is led by this broker.  Cluster
mode (``cluster``, kbroker/zk/cluster_runtime.py): the controller's LeaderAndIsr decide which
partitions exist here and which this broker leads (kbroker/replica/replica_manager.py).  The
cluster id comes from ``meta.properties`` (written on first start: empty log dirs are
formatted on demand, no ``kafka-storage format`` step).  Start-up first runs
``log.log_dir_checks``: a dir that cannot be created, read or written, another node's or
cluster's ``meta.properties``, a non-empty dir without one, or a partition directory the
checkpoints know but the disk lost stop start-up with ``LogDirError`` (a one-line message
naming the dir and what to do).
"""

from __future__ import annotations

import logging
import os
import socket

from kbroker.configs.config import BrokerConfig
from kbroker.configs.dynamic_broker_configs import DynamicBrokerConfigs
from kbroker.configs.topic_configs import TopicConfigStore
from kbroker.metadata.catalog import TopicInfo
from kbroker.replica.fetch_session import FetchSessionCache
from kbroker.replica.fetch_waiters import FetchWaiters
from kbroker.replica.partition import LEADER_EPOCH, Partition
from kbroker.replica.topic_creation import TopicCreations
from kbroker.replica.topic_ids import TopicIds
from kbroker.security.authorizer import AclAuthorizer, build_authorizer
from kbroker.security.quotas import QuotaManager
from kbroker.security.scram_credentials import ScramCredentialStore
from log.clock import SystemClock
from log.config import CLEANER_DEFAULTS, CleanerConfig, ProducerStateManagerConfig
from log.log import Log
from log.log_dir_checks import LogDirError, check_log_dirs
from log.log_manager import LogManager
from log.scheduler import Scheduler
from wire.topic_names import is_internal
from wire.uuids import random_uuid, uuid_to_string

log = logging.getLogger("kbroker.state")


def new_cluster_id() -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: 16 random bytes, URL-safe base64, no padding,
    never starting with '-' (which tools would read as an option)."""
    return uuid_to_string(random_uuid())


class ClusterIdMismatchError(LogDirError):
    """meta.properties names another cluster than ZooKeeper's /cluster/id."""


class BrokerState:
    def __init__(self, static_config: BrokerConfig, cluster_id: str | None = None):
        """``cluster_id``: in cluster mode, ZooKeeper's ``/cluster/id`` (the log dirs must
        belong to it, Kafka's InconsistentClusterIdException); else the stored one or new."""
        self.static_config = static_config
        self.node_id = static_config.node_id
        dirs = static_config.log_dirs
        stored_cluster_id = check_log_dirs([os.path.abspath(d) for d in dirs], self.node_id)
        self.dynamic_configs = DynamicBrokerConfigs(_first_dir(dirs), self.node_id)
        self.config = config = self.dynamic_configs.effective(static_config)
        self.leader_epoch = LEADER_EPOCH
        self.clock = SystemClock()
        self.scheduler = Scheduler(self.clock)
        self.topic_configs = TopicConfigStore(_first_dir(dirs), config.log_config)
        self.log_manager = LogManager(
            dirs, config.log_config, self.clock, self.scheduler,
            topic_configs=self.topic_configs.config_for,
            retention_check_ms=config["log.retention.check.interval.ms"],
            flush_check_ms=config["log.flush.scheduler.interval.ms"],
            flush_recovery_offset_checkpoint_ms=config["log.flush.offset.checkpoint.interval.ms"],
            flush_start_offset_checkpoint_ms=config["log.flush.start.offset.checkpoint.interval.ms"],
            file_delete_delay_ms=config["log.segment.delete.delay.ms"],
            producer_state_config=ProducerStateManagerConfig(config["producer.id.expiration.ms"]),
            cleaner_config=CleanerConfig.from_properties({name: config[name] for name in CLEANER_DEFAULTS}),
            replicated=static_config.cluster_mode,
            high_watermark_checkpoint_ms=config["replica.high.watermark.checkpoint.interval.ms"],
        )
        if cluster_id is not None and stored_cluster_id and stored_cluster_id != cluster_id:
            raise ClusterIdMismatchError(
                f"The Cluster ID {cluster_id} doesn't match stored clusterId Some({stored_cluster_id}) "
                "in meta.properties. The broker is trying to join the wrong cluster. Configured "
                "zookeeper.connect may be wrong.")
        self.cluster_id = cluster_id or stored_cluster_id or new_cluster_id()
        self.log_manager.ensure_meta_properties(self.node_id, self.cluster_id)
        self.log_manager.startup()
        # each topic's id, from its partition.metadata files (kbroker/replica/topic_ids.py); in
        # cluster mode from LeaderAndIsr
        self.topic_ids = TopicIds(create=not static_config.cluster_mode)
        self.topic_ids.load(self.log_manager.snapshot())
        self.fetch_waiters = FetchWaiters()
        # incremental fetch sessions (KIP-227; Kafka's max.incremental.fetch.session.cache.slots,
        # min.incremental.fetch.session.eviction.ms), kbroker/replica/fetch_session.py
        self.fetch_sessions = FetchSessionCache(int(config["max.incremental.fetch.session.cache.slots"]),
                                                int(config["min.incremental.fetch.session.eviction.ms"]))
        self.topics: dict[str, TopicInfo] = {}
        self.partitions: dict[tuple[str, int], Partition] = {}
        # creations under way, their logs opened off the event loop (kbroker/replica/topic_creation.py)
        self.creations = TopicCreations(self)
        for (topic, index), lg in sorted(self.log_manager.logs.items()):
            self.partitions[(topic, index)] = Partition(topic, index, lg, self.fetch_waiters)
        for topic, index in self.partitions:
            info = self.topics.get(topic)
            count = max(index + 1, info.partitions if info else 0)
            self.topics[topic] = TopicInfo(topic, count, is_internal(topic))
        # In cluster mode a topic's other partitions live on other brokers: no gaps to fill.
        for info in [] if static_config.cluster_mode else self.topics.values():
            for index in range(info.partitions):
                if (info.name, index) not in self.partitions:
                    # a gap the checkpoints do not know (lost before its first checkpoint):
                    # nothing says it held data; recreate it empty, loudly
                    log.warning("partition directory %s-%d is missing (not in any checkpoint): "
                                "recreating it empty", info.name, index)
                    self._open_partition(info.name, index)
        # authorizer.class.name: None = everything allowed (kbroker/security/authorizer.py)
        self.authorizer: AclAuthorizer | None = build_authorizer(config, _first_dir(dirs))
        # client quotas (kbroker/security/quotas.py): off, and free per request, until one is set
        self.quotas = QuotaManager(_first_dir(dirs), config["quota.window.num"],
                                   config["quota.window.size.seconds"])
        self.bound_port: int | None = None
        # listener name -> the port it bound (port 0 in ``listeners``: the one the OS chose)
        self.bound_ports: dict[str, int] = {}
        # SCRAM credentials (kbroker/security/scram_credentials.py): a file in the first log dir, per
        # broker also in cluster mode (NOT_IMPLEMENTED.md: not yet in ZooKeeper)
        self.scram_credentials = ScramCredentialStore(_first_dir(dirs))

    # ------------------------------------------------------------ topics and partitions
    def partition(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def new_partition(self, topic: str, index: int) -> Partition:
        """Open (create if new) one partition's log and wrap it, registering it nowhere but
        in the LogManager: safe on an executor thread (kbroker/replica/topic_creation.py), the one
        place every path that makes a partition goes through."""
        lg = self.log_manager.get_or_create_log((topic, index))
        self.topic_ids.assign(topic, lg)   # writes partition.metadata off the loop
        return Partition(topic, index, lg, self.fetch_waiters)

    def _open_partition(self, topic: str, index: int) -> Partition:
        """On the event loop, synchronously (start-up; the few callers that cannot wait)."""
        p = self.partitions[(topic, index)] = self.new_partition(topic, index)
        return p

    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> TopicInfo | None:
        """Create a topic synchronously, on the calling thread (requests use
        ``creations.start_topic``, off the loop).  None, doing nothing, while a creation of
        ``name`` is under way: its partitions are being opened elsewhere."""
        if self.creations.creating(name):
            return None
        if configs:
            self.topic_configs.set(name, configs)
        for index in range(partitions):
            self._open_partition(name, index)
        info = self.topics[name] = TopicInfo(name, partitions, is_internal(name))
        log.info("created topic %s with %d partition(s)", name, partitions)
        return info

    def add_partitions(self, name: str, count: int) -> None:
        """CreatePartitions: grow a topic to ``count`` partitions (checked by the caller)."""
        info = self.topics[name]
        for index in range(info.partitions, count):
            self._open_partition(name, index)
        info.partitions = count
        log.info("topic %s now has %d partition(s)", name, count)

    def set_topic_overrides(self, name: str, overrides: dict[str, str]) -> None:
        """Replace a topic's config overrides (already validated); its logs follow at once."""
        self.topic_configs.set(name, overrides)
        self._apply_log_configs([name])

    def set_dynamic_broker_configs(self, resource_name: str, props: dict[str, str]) -> None:
        """Replace one dynamic level ("" = cluster default, else this node's; validated
        already); every topic without its own override follows the new defaults."""
        self.dynamic_configs.set(resource_name, props)
        self.config = self.dynamic_configs.effective(self.static_config)
        self.topic_configs.defaults = self.config.log_config
        self._apply_log_configs(list(self.topics))

    def _apply_log_configs(self, topics: list[str]) -> None:
        for topic in topics:
            config = self.topic_configs.config_for(topic)
            for index in range(self.topics[topic].partitions):
                p = self.partitions.get((topic, index))
                if p is not None:
                    p.update_config(config)

    def delete_topic(self, name: str) -> list[tuple[tuple[str, int], Log]]:
        """The event loop's part of a topic deletion: the topic and its partitions leave every
        map at once (no request finds them from now on).  Returns the removed logs, for
        ``finish_topic_deletion`` to close and rename off the event loop."""
        info = self.topics.pop(name)
        self.topic_ids.remove(name)   # created again, it gets a new id
        removed = []
        for index in range(info.partitions):
            self.partitions.pop((name, index), None)
            lg = self.log_manager.remove_log((name, index))
            if lg is not None:
                removed.append(((name, index), lg))
        # still on the loop: the overrides file is also written by CreateTopics/AlterConfigs
        # here, and one writer thread keeps its temp file unshared
        self.topic_configs.remove(name)
        return removed

    def finish_topic_deletion(self, name: str, removed: list[tuple[tuple[str, int], Log]]) -> None:
        """The slow part of a topic deletion (cleaner abort, close with fsyncs, renames
        ``...-delete``, checkpoints): run it off the event loop."""
        for tp, lg in removed:
            self.log_manager.finish_delete(tp, lg)
        log.info("deleted topic %s", name)

    def topic_being_deleted(self, name: str) -> bool:
        """A partition of ``name`` still waits for ``finish_topic_deletion``."""
        return any(topic == name for topic, _ in self.log_manager.deleting())

    # ------------------------------------------------------------ addresses
    def advertised_address(self, listener_name: str | None = None) -> tuple[str, int]:
        """The host and port clients should connect to (advertised.listeners, else listeners;
        an empty host means this machine's name; port 0 means the port actually bound), for
        ``listener_name`` (the listener a request came on; default the first)."""
        listener = self.config.listeners[0]
        for candidate in self.config.listeners:
            if candidate.name == listener_name:
                listener = candidate
        chosen = listener
        for adv in self.config.advertised_listeners or []:
            if adv.name == listener.name:
                chosen = adv
                break
        host = chosen.host.strip("[]") or socket.getfqdn()
        port = chosen.port
        if port == 0:
            port = self.bound_ports.get(listener.name, self.bound_port or 0)
        return host, port

    # ------------------------------------------------------------ lifecycle
    def run_background_tasks(self) -> None:
        """Disk work due now (retention, deletions, checkpoints); runs on the background
        thread (kbroker/app/background.py), never on the event loop."""
        self.scheduler.run_pending()

    def shutdown(self) -> None:
        """All of it on the calling thread; the broker does the same off its event loop
        (kbroker/app/log_shutdown.py)."""
        self.log_manager.shutdown()
        self.close_stores()

    def close_stores(self) -> None:
        """After the logs: the config, id and credential stores."""
        # the config files and the producer-id block are written on threads of their own:
        # finish what is queued so a change made just before the stop is in the file
        self.topic_configs.close()
        self.dynamic_configs.close()
        self.scram_credentials.close()
        if self.authorizer is not None:
            self.authorizer.close()
        self.quotas.close()


def _first_dir(dirs: list[str]) -> str:
    d = os.path.abspath(dirs[0])
    os.makedirs(d, exist_ok=True)
    return d
