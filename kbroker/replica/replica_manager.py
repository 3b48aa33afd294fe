"""``ReplicaManager``: this broker's replicas in cluster mode (Kafka's ``ReplicaManager``:
LeaderAndIsr, StopReplica, the ISR checks, the produce purgatory and the fetchers).

* LeaderAndIsr (``becomeLeaderOrFollower``): for each partition that lists this broker as a
  replica, the topic is made known locally (its partition count and config read from
  ``/brokers/topics/<t>`` and ``/config/topics/<t>`` the first time), the log is opened or
  created, and the partition becomes leader or follower.  A request whose leader epoch is
  older than the one this broker holds is refused for that partition with
  STALE_CONTROLLER_EPOCH (Kafka's check).
  - *Leader* (``makeLeader``): the leader-side state (kbroker/replica/partition.py,
    cluster/partition_state.py) is set from the request's ISR, replicas and partition epoch
    (ignored when the partition epoch is older at the same leader epoch); a new leader epoch
    gets its start offset (the LEO) in the epoch cache; follower states are reset; the HW
    stays where it is.  The partition leaves the fetchers.
  - *Follower* (``makeFollower``): leading stops, parked acks=all produces of the partition
    answer NOT_LEADER_OR_FOLLOWER, and the partition is (re)added to the fetcher of the new
    leader (kbroker/replica/replica_fetcher.py) at its LEO with its latest epoch; truncation comes
    from the leader's DivergingEpoch.  No leader (-1): the partition is not fetched.
  The leader's address comes from the request's ``live_leaders`` (else the metadata cache).
  UpdateMetadata's ISR is not applied to led partitions: in ZooKeeper mode Kafka's leader
  takes its ISR only from LeaderAndIsr and its own AlterPartition answers.
* ISR changes: every ``replica.lag.time.max.ms / 2`` each led partition proposes dropping the
  followers that fell behind (``maybeShrinkIsr``); a follower fetch that catches up proposes
  adding it.  Proposals go through the ``AlterPartitionManager`` handed in (AlterPartition to the
  controller); a CommittedIsr answer is applied if it is for our leader epoch and not older,
  an error clears the pending change (INVALID_UPDATE_VERSION / FENCED_LEADER_EPOCH: the
  LeaderAndIsr that follows will say what is true).  Without that client, changes are not
  made (the ISR stays as the controller last wrote it).
* acks=all: :attr:`delayed_produce` (kbroker/replica/delayed_produce.py), completed when a led
  partition's HW moves, its ISR changes or its leadership moves.
* StopReplica: stop leading and fetching; with ``delete_partition`` remove the log (its
  directory is renamed ``-delete`` off the event loop, as DeleteTopics does).
* Routing: :meth:`leader_error` is what Produce, Fetch and ListOffsets ask first: None when
  this broker leads the partition, else NOT_LEADER_OR_FOLLOWER (the partition exists in
  the cluster) or UNKNOWN_TOPIC_OR_PARTITION.
* Internal topics (``__consumer_offsets``, ``__transaction_state``): their hosts
  (kbroker/coordinators/internal_topic.py, registered with :meth:`follow_internal_topic`) are told the
  topic's partition count from its znode, and when this broker starts leading one of its
  partitions (at each new leader epoch too) or stops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from cluster import znodes
from cluster.coordination import NoNodeError
from cluster.partition_state import IsrProposal
from kbroker.metadata.catalog import TopicInfo
from kbroker.replica.appends import AppendCheck, Appends, append_records
from kbroker.replica.delayed_produce import DelayedProduces
from kbroker.replica.replica_fetcher import FetchSettings, ReplicaFetcherManager
from kbroker.runtime.tasks import TaskSet, cancel_and_wait, task_name
from kbroker.runtime.zk_retry import deadline, until_connected
from log.partition_metadata_file import InconsistentTopicIdError
from log.producer_state import AppendOrigin
from wire.error_codes import ErrorCode
from wire.topic_names import is_internal
from wire.uuids import ZERO_UUID

if TYPE_CHECKING:
    from kbroker.metadata.metadata_cache import MetadataCache
    from kbroker.replica.alter_partition_manager import AlterPartitionManager
    from kbroker.replica.broker_state import BrokerState
    from kbroker.replica.partition import Partition

__all__ = ["ReplicaManager"]

log = logging.getLogger("kbroker.replicas")


class InternalTopicListener(Protocol):
    """The host of an internal topic (kbroker/coordinators/internal_topic.py ``ZkTopicHost``)."""

    @property
    def topic(self) -> str: ...

    def partitions_known(self, count: int) -> bool: ...

    def leadership(self, index: int, leader: bool) -> None: ...


class ReplicaManager:
    def __init__(self, state: BrokerState, cache: MetadataCache, zk: Any, inter_broker_listener: str,
                 alter_partitions: AlterPartitionManager | None) -> None:
        """``inter_broker_listener``: the listener of other brokers this one fetches from;
        ``alter_partitions``: where this broker's leaders send their ISR changes (None: they
        are dropped, for tests of a replica manager without a controller)."""
        self.state = state
        self.cache = cache
        self.zk = zk
        self.inter_broker_listener = inter_broker_listener
        self.alter_partitions = alter_partitions
        self.leading: dict[tuple[str, int], int] = {}  # partition -> leader epoch we lead at
        self.epochs: dict[tuple[str, int], int] = {}  # last leader epoch seen, led or not
        self._internal_topics: dict[str, InternalTopicListener] = {}   # topic -> its host
        self._topics_read: set[str] = set()  # topics whose znodes this process has read
        self.replica_lag_time_max_ms: int = state.config["replica.lag.time.max.ms"]
        self.delayed_produce = DelayedProduces(self._check_produce)
        self.fetchers = ReplicaFetcherManager(state, FetchSettings.from_config(state.node_id, state.config))
        self.leader_endpoints: dict[int, tuple[str, int]] = {}  # from LeaderAndIsr's live_leaders
        self._tasks = TaskSet()   # ISR changes under way (AlterPartition submissions)
        self._isr_task = asyncio.ensure_future(self._isr_expiration())

    async def stop(self) -> None:
        """The ISR task, the ISR changes under way and every fetcher end before this
        returns; parked acks=all produces are answered (DelayedProduces.close); nothing
        starts after it (the listeners still answer while the logs flush)."""
        for task in await cancel_and_wait([self._isr_task]):
            log.warning("ISR expiration task did not stop: %s", task_name(task))
        for task in await self._tasks.aclose():
            log.warning("ISR change did not stop: %s", task_name(task))
        await self.fetchers.close()
        self.delayed_produce.close()

    def _spawn(self, coro: Any) -> None:
        self._tasks.spawn(coro)

    def follow_internal_topic(self, host: InternalTopicListener) -> None:
        """Before the first LeaderAndIsr: ``host`` learns its topic's count and leaderships."""
        self._internal_topics[host.topic] = host

    # -- the Replicas port (kbroker/server/services.py) --------------------------------------------

    @property
    def replicated(self) -> bool:
        return True

    @property
    def reads_from_followers(self) -> bool:
        return True

    def is_follower(self, replica_id: int) -> bool:
        return replica_id >= 0

    def append_records(self, entries: Sequence[tuple[tuple[str, int], memoryview]], required_acks: int,
                       origin: AppendOrigin = AppendOrigin.CLIENT, check: AppendCheck | None = None) -> Appends:
        """The one door for writes (kbroker/replica/appends.py): only what this broker leads
        is appended; acks=all answers wait in the produce purgatory (``Appends.replicated``)."""
        return append_records(entries, required_acks, origin, partition_of=self.state.partition,
                              leader_error=self.leader_error, wait=self.wait_for_acks, check=check)

    def wait_for_acks(self, required: dict[tuple[str, int], int],
                      timeout_ms: int) -> Awaitable[dict[tuple[str, int], ErrorCode]]:
        """acks=all: parked until each partition's HW reaches its offset (kbroker/replica/delayed_produce.py)."""
        return self.delayed_produce.wait(required, timeout_ms)

    # -- routing -------------------------------------------------------------------------

    def leader_error(self, topic: str, index: int) -> ErrorCode | None:
        if (topic, index) in self.leading and self.state.partition(topic, index) is not None:
            return None
        if self.cache.image.partition(topic, index) is not None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def follower_partition(self, topic: str, index: int) -> Partition | None:
        """The local partition when this broker is a follower of it (a replica in the
        metadata cache, not leading, its log open), for consumer fetches from a follower
        (KIP-392); else None."""
        if (topic, index) in self.leading:
            return None
        info = self.cache.image.partition(topic, index)
        if info is None or self.state.node_id not in info.replicas:
            return None
        return self.state.partition(topic, index)

    # -- LeaderAndIsr --------------------------------------------------------------------

    async def _ensure_topic(self, topic: str) -> None:
        """Make ``topic`` known locally with its cluster-wide partition count and config
        (read through a lost ZooKeeper connection, kbroker/runtime/zk_retry.py)."""
        state = self.state
        count, overrides = await until_connected(lambda: self._read_topic(topic), deadline(self.zk),
                                                 f"the znodes of {topic}")
        if overrides != state.topic_configs.overrides_of(topic):
            # ZooKeeper's /config/topics/<t> is the truth; the local file mirrors it
            state.topic_configs.set(topic, overrides)
        self._topics_read.add(topic)
        info = state.topics.get(topic)
        if info is None:
            state.topics[topic] = TopicInfo(topic, count, is_internal(topic))
        elif count > info.partitions:
            info.partitions = count
        host = self._internal_topics.get(topic)
        if host is not None and count > 0:
            host.partitions_known(count)

    async def _read_topic(self, topic: str) -> tuple[int, dict[str, str]]:
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
        return count, overrides

    async def become_leader_or_follower(self, req: Any) -> dict[tuple[str, int], int]:
        """Apply a LeaderAndIsrRequest; returns partition -> error code."""
        state = self.state
        me = state.node_id
        errors: dict[tuple[str, int], int] = {}
        for leader in getattr(req, "live_leaders", None) or []:
            self.leader_endpoints[leader.broker_id] = (leader.host_name or "localhost", leader.port)
        for t in req.topic_states:
            mine = [p for p in t.partition_states if me in p.replicas]
            for p in t.partition_states:
                if me not in p.replicas:
                    errors[(t.topic_name, p.partition_index)] = ErrorCode.NONE
            if not mine:
                continue
            if t.topic_id != ZERO_UUID:
                # the topic znode's id (KIP-516): the logs opened for it take it
                # (BrokerState.new_partition -> kbroker/replica/topic_ids.py)
                state.topic_ids.set(t.topic_name, t.topic_id)
            if t.topic_name not in self._topics_read or t.topic_name not in state.topics or any(
                    p.partition_index >= state.topics[t.topic_name].partitions for p in mine):
                await self._ensure_topic(t.topic_name)
            # new replicas: their logs open on an executor thread, in batches (a topic of
            # thousands of partitions must not stall the event loop)
            await state.creations.open_partitions(
                [(t.topic_name, p.partition_index) for p in mine
                 if p.leader_epoch >= self.epochs.get((t.topic_name, p.partition_index), -1)])
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
                if t.topic_id != ZERO_UUID:
                    try:   # Kafka's hasConsistentTopicId check: the log keeps its id
                        partition.assign_topic_id(t.topic_id)
                    except InconsistentTopicIdError as e:
                        log.error("LeaderAndIsr for %s-%d refused: %s", tp[0], tp[1], e)
                        errors[tp] = ErrorCode.INCONSISTENT_TOPIC_ID
                        continue
                if p.leader == me:
                    self._make_leader(partition, p)
                else:
                    self._make_follower(partition, p)
                errors[tp] = ErrorCode.NONE
        return errors

    def _make_leader(self, partition: Partition, p: Any) -> None:
        tp = (partition.topic, partition.index)
        was = self.leading.get(tp)
        self.leading[tp] = p.leader_epoch
        self.fetchers.remove_partitions([tp])
        partition.on_high_watermark = lambda: self.delayed_produce.try_complete(tp)
        partition.submit_isr_change = self._submit_isr_change
        rep = partition.replication
        isr_before = None if rep is None else rep.isr
        if not partition.make_leader(p.leader_epoch, p.partition_epoch, list(p.isr), list(p.replicas),
                                     self.state.node_id, self.replica_lag_time_max_ms):
            log.info("%s-%d: ignoring LeaderAndIsr at partition epoch %d (ours is newer)", tp[0], tp[1],
                     p.partition_epoch)
        elif was is not None and isr_before != tuple(p.isr):
            log.info("%s-%d: ISR is now %s (LeaderAndIsr at leader epoch %d, partition epoch %d)",
                     tp[0], tp[1], list(p.isr), p.leader_epoch, p.partition_epoch)
        if was is None:
            log.info("broker %d leads %s-%d at leader epoch %d, ISR %s", self.state.node_id, tp[0], tp[1],
                     p.leader_epoch, list(p.isr))
        host = self._internal_topics.get(tp[0])
        if host is not None:
            # at each LeaderAndIsr, a new leader epoch too: the tenant loads what it does not
            # hold yet (a new transaction coordinator epoch; groups load once per leadership)
            host.leadership(tp[1], True)
        # parked fetches and produces of this partition re-check
        self.state.fetch_waiters.notify(tp)
        self.delayed_produce.try_complete(tp)

    def _stop_leading(self, tp: tuple[str, int], leader_epoch: int = -1) -> None:
        was = self.leading.pop(tp, None) is not None
        partition = self.state.partition(*tp)
        if partition is not None:
            partition.make_follower(leader_epoch)
            partition.on_high_watermark = None
            partition.submit_isr_change = None
        self.delayed_produce.try_complete(tp)   # parked acks=all: NOT_LEADER_OR_FOLLOWER
        if was:
            log.info("broker %d no longer leads %s-%d", self.state.node_id, tp[0], tp[1])
            host = self._internal_topics.get(tp[0])
            if host is not None:
                host.leadership(tp[1], False)
        self.state.fetch_waiters.notify(tp)

    def _make_follower(self, partition: Partition, p: Any) -> None:
        tp = (partition.topic, partition.index)
        self._stop_leading(tp, p.leader_epoch)
        endpoint = self._endpoint(p.leader) if p.leader >= 0 else None
        if endpoint is None:
            self.fetchers.remove_partitions([tp])
            if p.leader >= 0:
                log.warning("%s-%d: leader %d has no known address; not fetching", tp[0], tp[1], p.leader)
            return
        self.fetchers.add_partition(tp, p.leader, endpoint, p.leader_epoch)

    def _endpoint(self, broker_id: int) -> tuple[str, int] | None:
        found = self.leader_endpoints.get(broker_id)
        if found is not None:
            return found
        info = self.cache.broker(broker_id)
        if info is None or not info.endpoints:
            return None
        ep = info.endpoint(self.inter_broker_listener) or info.endpoints[0]
        return ep.host or "localhost", ep.port

    # -- acks=all ------------------------------------------------------------------------

    def _check_produce(self, tp: tuple[str, int], required_offset: int) -> tuple[bool, ErrorCode]:
        partition = self.state.partition(*tp)
        if partition is None or tp not in self.leading:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return partition.check_enough_replicas_reach_offset(required_offset)

    # -- ISR changes ---------------------------------------------------------------------

    async def _isr_expiration(self) -> None:
        """Kafka's ``isr-expiration`` task: every replica.lag.time.max.ms / 2."""
        interval = self.replica_lag_time_max_ms / 2000.0
        while True:
            await asyncio.sleep(interval)
            for tp in list(self.leading):
                partition = self.state.partition(*tp)
                if partition is not None:
                    try:
                        partition.maybe_shrink_isr()
                    except Exception:  # noqa: BLE001 - one partition must not stop the others
                        log.exception("ISR check of %s-%d failed", *tp)

    def _submit_isr_change(self, partition: Partition, proposal: IsrProposal) -> None:
        manager = self.alter_partitions
        rep = partition.replication
        if manager is None:
            if rep is not None:
                rep.clear_pending(proposal)
            return
        log.debug("%s-%d: proposing ISR %s (leader epoch %d, partition epoch %d)", partition.topic,
                 partition.index, list(proposal.new_isr), proposal.leader_epoch, proposal.partition_epoch)
        self._spawn(self._alter_isr(manager, partition, proposal))

    async def _alter_isr(self, manager: Any, partition: Partition, proposal: IsrProposal) -> None:
        tp = (partition.topic, partition.index)
        try:
            result = await manager.submit(tp[0], tp[1], proposal.leader_epoch, list(proposal.new_isr),
                                          proposal.partition_epoch)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a failed submission clears the pending change
            log.exception("AlterPartition for %s-%d failed", *tp)
            result = ErrorCode.UNKNOWN_SERVER_ERROR
        rep = partition.replication
        if rep is None or self.state.partition(*tp) is not partition or rep.pending is None \
                or rep.pending.proposal != proposal:
            return  # no longer leading, or superseded by a LeaderAndIsr
        if isinstance(result, int):
            # OPERATION_NOT_ATTEMPTED: an earlier change of this partition is still queued in
            # the manager; Kafka resets to the committed state and proposes again later
            log.log(logging.DEBUG if result == ErrorCode.OPERATION_NOT_ATTEMPTED else logging.INFO,
                    "%s-%d: ISR change to %s refused: %s", tp[0], tp[1], list(proposal.new_isr),
                    ErrorCode(result).name)
            rep.clear_pending(proposal)
        elif result.leader != self.state.node_id or not rep.apply_committed(
                result.leader_epoch, list(result.isr), result.partition_epoch):
            rep.clear_pending(proposal)
        else:
            log.info("%s-%d: ISR is now %s (partition epoch %d)", tp[0], tp[1], list(result.isr),
                     result.partition_epoch)
        partition.maybe_increment_high_watermark()
        self.delayed_produce.try_complete(tp)

    # -- StopReplica ---------------------------------------------------------------------

    async def stop_replicas(self, req: Any) -> dict[tuple[str, int], int]:
        state = self.state
        errors: dict[tuple[str, int], int] = {}
        removed = []
        for t in req.topic_states:
            for p in t.partition_states:
                tp = (t.topic_name, p.partition_index)
                self.fetchers.remove_partitions([tp])
                self._stop_leading(tp)
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
