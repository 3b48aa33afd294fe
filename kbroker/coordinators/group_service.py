"""``GroupService``: adapts the pure ``groups.GroupCoordinator`` to the running broker.

Its jobs, and nothing else:
* ``__consumer_offsets`` is hosted by kbroker/coordinators/internal_topic.py (created on the first
  FindCoordinator, as Kafka does, with ``offsets.topic.num.partitions`` partitions and
  ``offsets_topic_configs``; its partition count pinned the first time it is known; loaded
  and unloaded on leadership; replayed; appended to).  This service is its tenant: a load
  replays a partition into the coordinator (begin_load / replay / complete_load) and owns
  it; an unload (cluster mode: leadership went) drops its groups, whose parked requests
  answer NOT_COORDINATOR; requests for groups of partitions not owned answer
  NOT_COORDINATOR.  A topic found on disk keeps its own partition count: the coordinator
  hashes group ids over it, whatever ``offsets.topic.num.partitions`` says now (Kafka reads
  the count from the topic).
* Store, then propagate (``groups.result``): each write of a coordinator call is appended
  as one batch to its group's partition, its outcome (NONE, or the log's error code) is
  reported with ``Result.appended``, follow-ups likewise, and only then does the call's
  answer leave.  A failed append is an answer (the coordinator maps it to Kafka's group or
  offset error), never a closed connection.  The append is acks=all, as Kafka's
  coordinator makes (``offsets.commit.required.acks`` = -1): in cluster mode refused with
  NOT_ENOUGH_REPLICAS while the ISR is below ``min.insync.replicas``, and its outcome is
  known only once the ISR has the batch (at most ``offsets.commit.timeout.ms``:
  REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER otherwise),
  so a commit that was answered survives the loss of the coordinator's broker.  Writes are
  appended in call order at once; only the waiting for replication is asynchronous (other
  calls go on meanwhile: the coordinator's continuations re-check the group, as Kafka's
  callbacks do).
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
import functools
import inspect
import logging
import struct
from typing import TYPE_CHECKING, Any

from groups import GroupConfig, GroupCoordinator, Result
from groups.result import Write
from kbroker.coordinators.internal_topic import (
    SLOW_OFFSETS_APPEND_MS,
    Appended,
    InternalTopic,
    open_host,
)
from wire.error_codes import ErrorCode
from wire.topic_names import GROUP_METADATA_TOPIC

if TYPE_CHECKING:
    from kbroker.replica.broker_state import BrokerState
    from kbroker.replica.local_replicas import LocalReplicas
    from kbroker.replica.replica_manager import ReplicaManager
    from wire.record_batch import Record, RecordBatch

log = logging.getLogger("kbroker.groups")
_CONTROL_KEY = struct.Struct(">hh")  # control record key: version, type


def offsets_topic_configs(cfg: Any) -> dict[str, str]:
    """Kafka's ``GroupCoordinator.offsetsTopicConfigs`` (``cfg``: the effective config)."""
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(cfg["offsets.topic.segment.bytes"]),
        "compression.type": "producer",
    }


OFFSETS_TOPIC = InternalTopic(GROUP_METADATA_TOPIC, "offsets.topic.num.partitions", offsets_topic_configs,
                              load_buffer_size="offsets.load.buffer.size",
                              append_timeout_ms="offsets.commit.timeout.ms")


class GroupService:
    def __init__(self, state: BrokerState, replicas: LocalReplicas | ReplicaManager):
        self.state = state
        cfg = state.config
        self.coordinator = GroupCoordinator(
            GroupConfig.from_properties({k: cfg[k] for k in (
                "group.min.session.timeout.ms", "group.max.session.timeout.ms",
                "group.initial.rebalance.delay.ms", "group.max.size",
                "offsets.retention.minutes", "offsets.retention.check.interval.ms",
                "offsets.topic.num.partitions",
                "group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms",
                "group.consumer.max.size", "group.consumer.assignors",
                "group.consumer.assignment.interval.ms",
                "group.consumer.migration.policy")}),
            state.clock,
        )
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline_ms: int | None = None
        self._loaded_partitions: set[int] = set()  # __consumer_offsets partitions replayed
        # owned partition by partition as each is loaded: all of them at start-up on a single
        # node, as leadership arrives in cluster mode (kbroker/coordinators/internal_topic.py)
        self.coordinator.owned_partitions = set()
        self.host = open_host(state, replicas, OFFSETS_TOPIC, self, log, slow_append_ms=SLOW_OFFSETS_APPEND_MS)
        self.host.start()

    # ------------------------------------------------------------ the internal topic
    def ensure_topic(self) -> None:
        self.host.ensure()

    def on_partitions_pinned(self, count: int) -> None:
        """Hash group ids over the partitions the topic has (the config only sizes it at
        creation)."""
        if count != self.host.configured_partitions:
            log.info("%s has %d partition(s) (offsets.topic.num.partitions=%d): groups are "
                     "placed by the topic's count", GROUP_METADATA_TOPIC, count,
                     self.host.configured_partitions)
        self.coordinator.offsets_topic_partitions = count

    def on_load(self, index: int) -> int | None:
        """Replay ``__consumer_offsets`` partition ``index`` and own it from then on (Kafka's
        onElection); None when it is loaded already."""
        if index in self._loaded_partitions:
            return None
        self.coordinator.begin_load(index)
        try:
            count = self.host.replay(index, self._replay_record,
                                     functools.partial(self._replay_control, index=index))
        finally:
            self.coordinator.complete_load(index)
        self._loaded_partitions.add(index)
        return count

    def on_unload(self, index: int) -> None:
        """Kafka's onResignation: the partition's groups leave memory (parked JoinGroup/SyncGroup
        answered NOT_COORDINATOR, timers dropped), so a later leadership replays the log
        again, with whatever was written meanwhile."""
        if index in self._loaded_partitions:
            self._loaded_partitions.discard(index)
            self.apply(self.coordinator.unload_partition(index))
            log.info("unloaded the groups of %s-%d", GROUP_METADATA_TOPIC, index)

    def on_loaded(self, records: int, index: int | None) -> None:
        if index is not None:
            log.info("loaded %d group coordinator record(s) from %s-%d", records, GROUP_METADATA_TOPIC, index)
        elif records:
            log.info("loaded %d group coordinator record(s) from %s", records, GROUP_METADATA_TOPIC)

    def _replay_record(self, batch: RecordBatch, rec: Record) -> None:
        # a TxnOffsetCommit is pending until its transaction's marker is replayed
        producer_id = batch.producer_id if batch.is_transactional else -1
        self.coordinator.replay(rec.key, rec.value, rec.offset, producer_id)  # type: ignore[arg-type]

    def _replay_control(self, batch: RecordBatch, index: int) -> None:
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
        await self.host.stop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = self._timer_deadline_ms = None

    # ------------------------------------------------------------ results
    def apply(self, result: Result) -> asyncio.Task[None] | None:
        """Store a coordinator call's writes, report their outcomes, and do the same for
        the follow-ups; afterwards the call's answers may leave.  None when that is done
        now; when outcomes wait for replication (cluster mode) a call with writes returns
        the task that finishes it."""
        if result.writes and self.host.waits_for_acks:
            return self.host.spawn(self._apply_replicated(result))
        current: Result | None = result
        while current is not None:
            current = current.appended([self.append(w).error for w in current.writes])
        self._arm_timer()
        return None

    async def _apply_replicated(self, result: Result) -> None:
        """Every write of a round is appended at once, in call order; the round's outcomes
        are known once all of them are replicated."""
        current: Result | None = result
        try:
            while current is not None:
                appended = [self.append(w) for w in current.writes]
                required: dict[int, int] = {}
                for a in appended:
                    if a.error is ErrorCode.NONE:
                        required[a.index] = max(required.get(a.index, 0), a.end_offset)
                replicated = await self.host.wait_for_acks(required)
                current = current.appended([replicated[a.index] if a.error is ErrorCode.NONE else a.error
                                            for a in appended])
        finally:
            self._arm_timer()

    def append(self, write: Write) -> Appended:
        """Append one write as one batch to its group's partition (the partition is chosen
        once the topic is ensured: groups are hashed over the pinned count); a
        TxnOffsetCommit's write is a transactional batch of its producer."""
        appended = self.host.append(
            lambda: self.coordinator.partition_for(write.group_id),
            [(bytes(r.key), None if r.value is None else bytes(r.value)) for r in write.records],
            producer_id=write.producer_id, producer_epoch=write.producer_epoch,
            owner=f" of group {write.group_id}")
        if appended.error is ErrorCode.NONE:
            write.base_offset = appended.first_offset
        return appended

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
