"""``ReplicaManager``: this broker's replicas in cluster mode (the part of Kafka's
``ReplicaManager`` that applies the controller's LeaderAndIsr and StopReplica).

* LeaderAndIsr (``becomeLeaderOrFollower``): for each partition that lists this broker as a
  replica, the topic is made known locally (its partition count and config read from
  ``/brokers/topics/<t>`` and ``/config/topics/<t>`` the first time), the log is opened or
  created, and the partition becomes leader (at the request's leader epoch, which is
  assigned its start offset in the leader epoch cache) or follower.  A request whose
  leader epoch is older than the one this broker holds is refused for that partition
  with STALE_CONTROLLER_EPOCH (Kafka's check).  Followers do not fetch yet (replication is
  the next issue): a follower is a log that is not served.
* StopReplica: stop leading; with ``delete_partition`` remove the log (its directory is
  renamed ``-delete`` off the event loop, as DeleteTopics does).
* Routing: :meth:`leader_error` is what Produce, Fetch and ListOffsets ask first: None when
  this broker leads the partition, else NOT_LEADER_OR_FOLLOWER (the partition exists in
  the cluster) or UNKNOWN_TOPIC_OR_PARTITION.
* ``__consumer_offsets``: the group coordinator is told when this broker starts or stops
  leading one of its partitions (``on_offsets_leadership``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cluster import znodes
from cluster.coordination import NoNodeError
from kbroker.broker_state import TopicInfo
from kbroker.topic_names import GROUP_METADATA_TOPIC, is_internal
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from kbroker.broker_state import BrokerState
    from kbroker.metadata_cache import MetadataCache

__all__ = ["ReplicaManager"]

log = logging.getLogger("kbroker.replicas")


class ReplicaManager:
    def __init__(self, state: BrokerState, cache: MetadataCache, zk: Any) -> None:
        self.state = state
        self.cache = cache
        self.zk = zk
        self.leading: dict[tuple[str, int], int] = {}  # partition -> leader epoch we lead at
        self.epochs: dict[tuple[str, int], int] = {}  # last leader epoch seen, led or not
        self.on_offsets_leadership: Callable[[int, bool], None] | None = None
        self._topics_read: set[str] = set()  # topics whose znodes this process has read

    # -- routing -------------------------------------------------------------------------

    def leader_error(self, topic: str, index: int) -> ErrorCode | None:
        if (topic, index) in self.leading and self.state.partition(topic, index) is not None:
            return None
        if self.cache.image.partition(topic, index) is not None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    # -- LeaderAndIsr --------------------------------------------------------------------

    async def _ensure_topic(self, topic: str) -> None:
        """Make ``topic`` known locally with its cluster-wide partition count and config."""
        state = self.state
        try:
            data, _ = await self.zk.get(znodes.topic_path(topic))
            count = max(znodes.decode_topic(data).partitions, default=-1) + 1
        except NoNodeError:
            count = 0
        try:
            cfg, _ = await self.zk.get(znodes.config_entity_path("topics", topic))
            overrides = znodes.decode_config(cfg)
        except NoNodeError:
            overrides = {}
        if overrides != state.topic_configs.overrides_of(topic):
            # ZooKeeper's /config/topics/<t> is the truth; the local file mirrors it
            state.topic_configs.set(topic, overrides)
        self._topics_read.add(topic)
        info = state.topics.get(topic)
        if info is None:
            state.topics[topic] = TopicInfo(topic, count, is_internal(topic))
        elif count > info.partitions:
            info.partitions = count
        if topic == GROUP_METADATA_TOPIC and count > 0:
            state.groups.offsets_topic_partitions_known(count)

    async def become_leader_or_follower(self, req: Any) -> dict[tuple[str, int], int]:
        """Apply a LeaderAndIsrRequest; returns partition -> error code."""
        state = self.state
        me = state.node_id
        errors: dict[tuple[str, int], int] = {}
        for t in req.topic_states:
            mine = [p for p in t.partition_states if me in p.replicas]
            for p in t.partition_states:
                if me not in p.replicas:
                    errors[(t.topic_name, p.partition_index)] = ErrorCode.NONE
            if not mine:
                continue
            if t.topic_name not in self._topics_read or t.topic_name not in state.topics or any(
                    p.partition_index >= state.topics[t.topic_name].partitions for p in mine):
                await self._ensure_topic(t.topic_name)
            for p in mine:
                tp = (t.topic_name, p.partition_index)
                known = self.epochs.get(tp, -1)
                if p.leader_epoch < known:
                    errors[tp] = ErrorCode.STALE_CONTROLLER_EPOCH
                    continue
                self.epochs[tp] = p.leader_epoch
                partition = state.partition(*tp)
                if partition is None:
                    partition = state._open_partition(*tp)
                    info = state.topics[tp[0]]
                    info.partitions = max(info.partitions, tp[1] + 1)
                if p.leader == me:
                    self._make_leader(partition, p.leader_epoch)
                else:
                    self._make_follower(tp)
                errors[tp] = ErrorCode.NONE
        return errors

    def _make_leader(self, partition: Any, epoch: int) -> None:
        tp = (partition.topic, partition.index)
        was = self.leading.get(tp)
        self.leading[tp] = epoch
        if epoch > partition.leader_epoch or was is None:
            assign = getattr(partition.log, "maybe_assign_epoch_start_offset", None)
            if assign is not None and epoch > partition.leader_epoch:
                assign(epoch, partition.log_end_offset)
            partition.leader_epoch = max(epoch, partition.leader_epoch)
        if was is None:
            log.info("broker %d leads %s-%d at leader epoch %d", self.state.node_id, tp[0], tp[1], epoch)
            if tp[0] == GROUP_METADATA_TOPIC and self.on_offsets_leadership is not None:
                self.on_offsets_leadership(tp[1], True)
        # parked fetches of this partition re-check
        self.state.fetch_waiters.notify(tp)

    def _make_follower(self, tp: tuple[str, int]) -> None:
        if self.leading.pop(tp, None) is not None:
            log.info("broker %d follows %s-%d now", self.state.node_id, tp[0], tp[1])
            if tp[0] == GROUP_METADATA_TOPIC and self.on_offsets_leadership is not None:
                self.on_offsets_leadership(tp[1], False)
            self.state.fetch_waiters.notify(tp)

    # -- StopReplica ---------------------------------------------------------------------

    async def stop_replicas(self, req: Any) -> dict[tuple[str, int], int]:
        state = self.state
        errors: dict[tuple[str, int], int] = {}
        removed = []
        for t in req.topic_states:
            for p in t.partition_states:
                tp = (t.topic_name, p.partition_index)
                self._make_follower(tp)
                if p.delete_partition:
                    self.epochs.pop(tp, None)
                    if state.partitions.pop(tp, None) is not None:
                        lg = state.log_manager.remove_log(tp)
                        if lg is not None:
                            removed.append((tp, lg))
                    state.fetch_waiters.notify(tp)
                    info = state.topics.get(tp[0])
                    if info is not None and not any(
                            (tp[0], i) in state.partitions for i in range(info.partitions)):
                        del state.topics[tp[0]]
                        state.topic_configs.remove(tp[0])
                errors[tp] = ErrorCode.NONE
        if removed:
            def finish() -> None:
                for tp, lg in removed:
                    state.log_manager.finish_delete(tp, lg)
            await asyncio.get_running_loop().run_in_executor(None, finish)
        return errors
