"""``GroupService``: adapts the pure ``groups.GroupCoordinator`` to the running broker.

Its jobs, and nothing else:
* ``__consumer_offsets``: created on the first FindCoordinator (as Kafka does) with
  ``offsets.topic.num.partitions`` partitions, ``cleanup.policy=compact`` and
  ``segment.bytes=offsets.topic.segment.bytes``; on start-up every existing partition is
  replayed into the coordinator (begin_load / replay / complete_load).  In cluster mode the
  coordinator owns only the partitions this broker leads: each is replayed when leadership
  arrives (``offsets_leadership``) and unloaded when it goes (its groups leave memory, their
  parked requests answer NOT_COORDINATOR); requests for other groups answer NOT_COORDINATOR.  A topic found on
  disk keeps its own partition count: the coordinator hashes group ids over it, whatever
  ``offsets.topic.num.partitions`` says now (Kafka reads the count from the topic).
* Store, then propagate (``groups.result``): each write of a coordinator call is appended
  as one batch to its group's partition, its outcome (NONE, or the log's error code) is
  reported with ``Result.appended``, follow-ups likewise, and only then does the call's
  answer leave.  A failed append is an answer (the coordinator maps it to Kafka's group or
  offset error), never a closed connection.  The append itself is synchronous (``Log``
  on the loop, as every produce).  In cluster mode it is an acks=all append, as Kafka's
  coordinator makes (``offsets.commit.required.acks`` = -1): refused with
  NOT_ENOUGH_REPLICAS while the ISR is below ``min.insync.replicas``, and its outcome is
  known only once the ISR has the batch (the produce purgatory, at most
  ``offsets.commit.timeout.ms``: REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
  NOT_LEADER_OR_FOLLOWER otherwise), so a commit that was answered survives the loss of
  the coordinator's broker.  Writes are appended in call order at once; only the waiting
  for replication is asynchronous (other calls go on meanwhile: the coordinator's
  continuations re-check the group, as Kafka's callbacks do).
* Transactions: a TxnOffsetCommit's write is appended as a transactional batch of its
  producer (id, epoch, transactional bit, base sequence 0, as Kafka's coordinator writes
  it; the log's producer state then holds the transaction open, so the partition's LSO
  waits for it); ``complete_txn_offsets`` is called by the WriteTxnMarkers broker side
  after the marker is appended to ``__consumer_offsets`` partitions, and a load replays
  control records (COMMIT/ABORT) as well as data.
* Parked JoinGroup/SyncGroup: the coordinator's pending handle resolves an asyncio future.
* Timers: after every coordinator call an event-loop timer is armed for the coordinator's
  next deadline, so a delayed join or a session expiry fires on time (Kafka's purgatory
  fires to the millisecond; a 0 ms initial rebalance delay completes the join at once).
  ``tick()`` (from the broker's background tick) is the fallback when no loop is running.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import struct
from typing import TYPE_CHECKING, Any

from groups import GroupConfig, GroupCoordinator, Result
from groups.result import Write
from kbroker.tasks import cancel_and_wait, task_name
from kbroker.topic_names import GROUP_METADATA_TOPIC
from log.errors import LogError
from log.producer_state import AppendOrigin
from wire.error_codes import ErrorCode
from wire.record_batch import build_batch, iter_batches

if TYPE_CHECKING:
    from kbroker.broker_state import BrokerState

log = logging.getLogger("kbroker.groups")
_CONTROL_KEY = struct.Struct(">hh")  # control record key: version, type

# Test seam: on a single node, the outcome of each __consumer_offsets append is known only
# after a delay, as if waiting for replication: the k-th such write waits 0, 1/2 or 1 times
# this many ms (k mod 3), so outcomes come back out of append order, as replication's do
# across partitions and connections.  Nothing but the compat tests sets it.
_SLOW_APPEND_MS = int(os.environ.get("KBROKER_TEST_SLOW_OFFSETS_APPEND_MS", "0") or 0)
if _SLOW_APPEND_MS:
    log.warning("KBROKER_TEST_SLOW_OFFSETS_APPEND_MS: __consumer_offsets appends complete "
                "after up to %d ms", _SLOW_APPEND_MS)


def offsets_topic_configs(cfg: Any) -> dict[str, str]:
    """Kafka's ``GroupCoordinator.offsetsTopicConfigs`` (``cfg``: the effective config)."""
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(cfg["offsets.topic.segment.bytes"]),
        "compression.type": "producer",
    }


class GroupService:
    def __init__(self, state: BrokerState):
        self.state = state
        cfg = state.config
        self.num_partitions = cfg["offsets.topic.num.partitions"]
        self.coordinator = GroupCoordinator(
            GroupConfig.from_properties({k: cfg[k] for k in (
                "group.min.session.timeout.ms", "group.max.session.timeout.ms",
                "group.initial.rebalance.delay.ms", "group.max.size",
                "offsets.retention.minutes", "offsets.retention.check.interval.ms",
                "offsets.topic.num.partitions")}),
            state.clock,
        )
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline_ms: int | None = None
        self._partitions_fixed = False
        self._loaded_partitions: set[int] = set()  # __consumer_offsets partitions replayed
        self._replicating: set[asyncio.Task[None]] = set()  # acks=all appends being waited on
        static = getattr(state, "static_config", None)  # unit tests drive a bare state
        if static is not None and static.cluster_mode:
            # owned partition by partition as leadership arrives (offsets_leadership)
            self.coordinator.owned_partitions = set()
        else:
            self._load()

    # ------------------------------------------------------------ the internal topic
    def topic_exists(self) -> bool:
        return GROUP_METADATA_TOPIC in self.state.topics

    def ensure_topic(self) -> None:
        if getattr(self.state, "cluster", None) is not None:
            # cluster mode: FindCoordinator creates it through ZooKeeper; the partitions
            # this broker holds arrive with LeaderAndIsr
            self._follow_topic_partitions()
            return
        if not self.topic_exists():
            # synchronous, on the loop: only when no FindCoordinator came first
            # (``create_topic_off_loop``); does nothing while that creation runs
            self.state.create_topic(GROUP_METADATA_TOPIC, self.num_partitions, self.topic_configs())
        self._follow_topic_partitions()

    def topic_configs(self) -> dict[str, str]:
        return offsets_topic_configs(self.state.config)

    async def create_topic_off_loop(self) -> None:
        """Single node (FindCoordinator): ``ensure_topic`` with the topic's partitions opened
        on an executor thread (kbroker/topic_creation.py)."""
        if getattr(self.state, "cluster", None) is None and not self.topic_exists():
            await self.state.creations.ensure_topic(GROUP_METADATA_TOPIC, self.num_partitions,
                                                    self.topic_configs())
        self.ensure_topic()

    def _follow_topic_partitions(self) -> None:
        """Hash group ids over the partitions the topic has (the config only sizes it at
        creation).  Fixed the first time the topic is seen, as Kafka's coordinator fixes its
        count at start-up: partitions added later would move groups away from their
        records."""
        if self._partitions_fixed:
            return
        config = getattr(self.state, "static_config", None)
        if config is not None and config.cluster_mode:
            return  # the topic znode's count arrives through offsets_topic_partitions_known
        info = self.state.topics.get(GROUP_METADATA_TOPIC)
        if info is None:
            return
        self._partitions_fixed = True
        if info.partitions != self.coordinator.offsets_topic_partitions:
            if info.partitions != self.num_partitions:
                log.info("%s has %d partition(s) (offsets.topic.num.partitions=%d): groups are "
                         "placed by the topic's count", GROUP_METADATA_TOPIC, info.partitions,
                         self.num_partitions)
            self.coordinator.offsets_topic_partitions = info.partitions

    def offsets_topic_partitions_known(self, count: int) -> None:
        """Cluster mode: the topic's partition count from ``/brokers/topics/__consumer_offsets``
        (this broker holds only some of its partitions), fixed the first time as above."""
        if not self._partitions_fixed:
            self._partitions_fixed = True
            self.coordinator.offsets_topic_partitions = count

    def _load(self) -> None:
        c = self.coordinator
        self._follow_topic_partitions()
        c.begin_load()
        count = 0
        if self.topic_exists():
            for index in range(self.state.topics[GROUP_METADATA_TOPIC].partitions):
                count += self._replay_partition(index)
        c.complete_load()
        if count:
            log.info("loaded %d group coordinator record(s) from %s", count, GROUP_METADATA_TOPIC)

    def _replay_partition(self, index: int) -> int:
        """Replay one local ``__consumer_offsets`` partition into the coordinator; returns
        the number of records applied (0 when this broker has no such partition)."""
        partition = self.state.partition(GROUP_METADATA_TOPIC, index)
        if partition is None:
            return 0
        self._loaded_partitions.add(index)
        count = 0
        offset = partition.log_start_offset
        # To the log end, not the high watermark (Kafka's GroupMetadataManager loads with
        # FetchIsolation.LOG_END): a new leader's HW may still trail records the old
        # coordinator acknowledged, and a commit left out would read as an older offset.
        while offset < partition.log_end_offset:
            data = partition.read(offset, 1 << 20, True, to_log_end=True).records
            if not data:
                break
            for batch in iter_batches(data):
                if batch.is_control:
                    if batch.next_offset > offset:
                        self._replay_control(batch, index)
                    offset = batch.next_offset
                    continue
                producer_id = batch.producer_id if batch.is_transactional else -1
                for rec in batch.records():
                    if rec.offset >= offset and rec.key is not None:
                        self.coordinator.replay(rec.key, rec.value, rec.offset, producer_id)
                        count += 1
                offset = batch.next_offset
        return count

    def _replay_control(self, batch: Any, index: int) -> None:
        """A control batch: its record key is ``version int16 | type int16`` (0 ABORT,
        1 COMMIT); other control types are not transaction markers."""
        for rec in batch.records():
            if rec.key is None or len(rec.key) < 4:
                continue
            _version, control_type = _CONTROL_KEY.unpack_from(rec.key, 0)
            if control_type in (0, 1):
                self.coordinator.replay_end_txn(batch.producer_id, control_type == 1, index)

    def complete_txn_offsets(self, producer_id: int, producer_epoch: int, commit: bool,
                             partitions: list[int]) -> None:
        """The transaction marker of ``producer_id`` was appended to these
        ``__consumer_offsets`` partitions (called by WriteTxnMarkers after the append):
        its pending transactional offsets there are committed or dropped.  The marker's
        epoch was checked by the log when it was appended."""
        self.coordinator.complete_txn(producer_id, commit, partitions)

    def offsets_leadership(self, index: int, leader: bool) -> None:
        """Cluster mode: this broker became (or stopped being) the leader of
        ``__consumer_offsets`` partition ``index`` (Kafka's onElection / onResignation).
        Becoming leader replays the partition and owns it from then on; stopping unloads
        its groups (parked JoinGroup/SyncGroup answered NOT_COORDINATOR, timers dropped),
        so a later leadership replays the log again, with whatever was written meanwhile.
        The replay runs on the loop in one go, so no request sees the partition loading."""
        if not leader:
            if index in self._loaded_partitions:
                self._loaded_partitions.discard(index)
                self.apply(self.coordinator.unload_partition(index))
                log.info("unloaded the groups of %s-%d", GROUP_METADATA_TOPIC, index)
            return
        if index in self._loaded_partitions:
            return
        self.coordinator.begin_load(index)
        try:
            count = self._replay_partition(index)
        finally:
            self.coordinator.complete_load(index)
        self._loaded_partitions.add(index)
        log.info("loaded %d group coordinator record(s) from %s-%d", count,
                 GROUP_METADATA_TOPIC, index)

    def on_partitions_deleted(self, partitions: list[tuple[str, int]]) -> None:
        """A topic was deleted (single node: DeleteTopics; cluster mode: an UpdateMetadata
        carrying its partitions with leader -2, which every live broker gets, as Kafka's
        ZooKeeper-mode brokers call onPartitionsDeleted from handleUpdateMetadataRequest):
        the committed offsets of its partitions leave every group this broker coordinates,
        and their tombstones are appended to ``__consumer_offsets`` so a replay does not
        bring them back."""
        if not partitions:
            return
        result = self.coordinator.on_partitions_deleted(partitions)
        removed = result.response
        self.apply(result)
        if removed:
            topics = sorted({t for t, _ in partitions})
            log.info("Removed %d offsets associated with deleted partitions of %s", removed,
                     ", ".join(topics))

    async def stop(self) -> None:
        """On the loop, before the state shuts down: the commits waiting for their
        replication end (the replica manager, stopped first, answered them), and the timer
        is dropped."""
        for task in await cancel_and_wait(list(self._replicating)):
            log.warning("group coordinator append did not stop: %s", task_name(task))
        if self._timer is not None:
            self._timer.cancel()
            self._timer = self._timer_deadline_ms = None

    # ------------------------------------------------------------ results
    def apply(self, result: Result) -> asyncio.Task[None] | None:
        """Store a coordinator call's writes, report their outcomes, and do the same for
        the follow-ups; afterwards the call's answers may leave.  None when that is done
        now; in cluster mode a call with writes waits for their replication: the task
        that finishes it."""
        if result.writes and (self._replicated() or _SLOW_APPEND_MS):
            task = asyncio.get_running_loop().create_task(self._apply_replicated(result))
            self._replicating.add(task)
            task.add_done_callback(self._replicating.discard)
            return task
        current: Result | None = result
        while current is not None:
            current = current.appended([self.append(w)[0] for w in current.writes])
        self._arm_timer()
        return None

    def _replicated(self) -> bool:
        cluster = getattr(self.state, "cluster", None)
        return cluster is not None and getattr(cluster, "replicas", None) is not None

    async def _apply_replicated(self, result: Result) -> None:
        cluster: Any = self.state.cluster
        timeout_ms = self.state.config["offsets.commit.timeout.ms"]
        current: Result | None = result
        try:
            while current is not None:
                appended = [self.append(w, required_acks=-1 if cluster is not None else 1)
                            for w in current.writes]
                required: dict[tuple[str, int], int] = {}
                for code, tp, end in appended:
                    if code is ErrorCode.NONE:
                        required[tp] = max(required.get(tp, 0), end)
                if cluster is None:   # the test seam (above): a single node that waits
                    replicated = await self._slow_append_wait(required)
                else:
                    replicated = await cluster.replicas.delayed_produce.wait(required, timeout_ms) \
                        if required else {}
                current = current.appended([replicated[tp] if code is ErrorCode.NONE else code
                                            for code, tp, _ in appended])
        finally:
            self._arm_timer()

    _slowed = 0

    async def _slow_append_wait(self, required: dict[tuple[str, int], int]) -> dict[tuple[str, int], ErrorCode]:
        """The test seam's wait (module top): every append succeeds, late."""
        GroupService._slowed += 1
        await asyncio.sleep(_SLOW_APPEND_MS * (GroupService._slowed % 3) / 2000)
        return dict.fromkeys(required, ErrorCode.NONE)

    def append(self, write: Write, required_acks: int = 1) -> tuple[ErrorCode, tuple[str, int], int]:
        """Append one write as one batch to its group's partition: (NONE or the log's error
        code (Kafka's ReplicaManager answers the same codes to the coordinator), the
        partition, the offset after the batch, -1 on error)."""
        tp = (GROUP_METADATA_TOPIC, -1)
        try:
            self.ensure_topic()
            tp = (GROUP_METADATA_TOPIC, self.coordinator.partition_for(write.group_id))
            partition = self.state.partition(*tp)
            if partition is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                now = self.state.clock.milliseconds()
                txn = {} if write.producer_id < 0 else {
                    "producer_id": write.producer_id, "producer_epoch": write.producer_epoch,
                    "base_sequence": 0, "is_transactional": True}
                batch = bytearray(build_batch([
                    (bytes(r.key), None if r.value is None else bytes(r.value), [], now)
                    for r in write.records], **txn))
                info = partition.append_records_as_leader(
                    memoryview(batch), required_acks, origin=AppendOrigin.COORDINATOR)
                write.base_offset = info.first_offset
                return ErrorCode.NONE, tp, info.last_offset + 1
        except LogError as e:
            code = e.error
            log.warning("appending %d record(s) of group %s to %s failed: %s %s",
                        len(write.records), write.group_id, GROUP_METADATA_TOPIC, code.name, e)
            return code, tp, -1
        except OSError:
            log.exception("appending %d record(s) of group %s to %s failed with an I/O error",
                          len(write.records), write.group_id, GROUP_METADATA_TOPIC)
            return ErrorCode.KAFKA_STORAGE_ERROR, tp, -1
        except Exception:
            log.exception("appending %d record(s) of group %s to %s failed",
                          len(write.records), write.group_id, GROUP_METADATA_TOPIC)
            return ErrorCode.UNKNOWN_SERVER_ERROR, tp, -1
        log.warning("appending %d record(s) of group %s to %s failed: %s", len(write.records),
                    write.group_id, GROUP_METADATA_TOPIC, code.name)
        return code, tp, -1

    def answer(self, result: Result) -> Any:
        """The handler's return value: the response now, or an awaitable of it."""
        replicating = self.apply(result)
        if replicating is not None:
            return self._answer_after(replicating, result)
        if result.pending is None:
            return result.response
        return self._pending_response(result)

    def _pending_response(self, result: Result) -> Any:
        pending = result.pending
        assert pending is not None
        if pending.done():
            return pending.response
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(response: Any) -> None:
            if not fut.done():
                fut.set_result(response)

        pending.add_done_callback(done)
        return fut

    async def _answer_after(self, replicating: asyncio.Task[None], result: Result) -> Any:
        await replicating
        if result.pending is None:
            return result.response
        return await _maybe_await(self._pending_response(result))

    def tick(self) -> None:
        deadline = self.coordinator.next_deadline_ms()
        if deadline is not None and deadline <= self.state.clock.milliseconds():
            self.apply(self.coordinator.poll())  # a replicated write finishes in its task

    def _arm_timer(self) -> None:
        """Keep one loop timer at the coordinator's next deadline (ms on the broker clock)."""
        deadline = self.coordinator.next_deadline_ms()
        if deadline == self._timer_deadline_ms:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = self._timer_deadline_ms = None
        if deadline is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not serving (tests driving the state directly): tick() covers it
            return
        delay_s = max(0, deadline - self.state.clock.milliseconds()) / 1000
        self._timer, self._timer_deadline_ms = loop.call_later(delay_s, self._on_timer), deadline

    def _on_timer(self) -> None:
        self._timer = self._timer_deadline_ms = None
        self.tick()
        self._arm_timer()  # tick() re-arms only when a deadline had passed


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
