"""``Partition``: the broker's view of one topic partition it leads (Kafka's Partition).

The only place in kbroker/ that calls into a ``log.log.Log`` (held as ``_log``: everything
else asks the partition, as Kafka's handlers go through Partition and not UnifiedLog;
tests/unit/kbroker/replica/test_partition_is_the_door.py fails on a module that reaches past it).
Single node: this broker
leads every partition, at the latest epoch of the log's leader epoch cache
(``leader-epoch-checkpoint``), or at epoch 0 when the cache is empty: then, as Kafka's
makeLeader does, epoch 0 is assigned (at the log start offset: every batch kbroker wrote
carries partitionLeaderEpoch 0; for a new partition that is offset 0).  Appends stamp the
epoch into each batch.  The high watermark follows the log end offset
(the Log does that when opened with ``high_watermark_follows_log_end``).  The last
stable offset equals the high watermark until transactions exist.

Cluster mode (the log is opened with ``high_watermark_follows_log_end=False``): no epoch is
assigned at open (a follower's epochs are the leader's, copied with its batches; a leader's
come from LeaderAndIsr).  While this broker leads, ``replication`` holds the pure
leader-side state (cluster/partition_state.py) and this class applies its decisions: the
HW moves after each leader append (``append_records_as_leader`` then
``maybe_increment_high_watermark``, as Kafka's appendRecordsToLeader then
maybeIncrementLeaderHW; every leader append goes through here) and each follower fetch, ``on_high_watermark`` then completes parked acks=all produces, and ISR
changes go to ``submit_isr_change`` (the replica manager's AlterPartition path).  acks=all
is refused with NOT_ENOUGH_REPLICAS before the append while the committed ISR is below
min(min.insync.replicas, replication factor) (Kafka's ``appendRecordsToLeader``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cluster.partition_state import IsrProposal, PartitionState
from kbroker.metrics.counters import ISR_STATS
from kbroker.replica.record_sending import read_for_sending
from log.config import LogConfig
from log.errors import LogError, OffsetOutOfRangeError, PolicyViolationError
from log.file_records import PinnedSlice
from log.log import FetchIsolation, Log
from log.producer_state import AppendOrigin
from log.types import LogAppendInfo, TimestampAndOffset
from wire.error_codes import ErrorCode
from wire.messages import DescribeProducersResponse

if TYPE_CHECKING:
    import uuid

    from kbroker.replica.fetch_waiters import FetchWaiters

LEADER_EPOCH = 0


class NotEnoughReplicasError(LogError):
    """acks=all while the ISR is below the effective min.insync.replicas: nothing written."""

    error = ErrorCode.NOT_ENOUGH_REPLICAS


@dataclass(slots=True)
class ReadResult:
    records: bytes | PinnedSlice   # whole stored batches, as stored (never re-encoded)
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    # read_committed: the aborted transactions (log.txn_index.AbortedTxn) overlapping the
    # records read, else None
    aborted_transactions: list | None = None


class Partition:
    __slots__ = ("topic", "index", "_log", "waiters", "leader_epoch", "replication", "on_high_watermark",
                 "submit_isr_change")

    def __init__(self, topic: str, index: int, log: Log, waiters: FetchWaiters):
        self.topic = topic
        self.index = index
        self._log = log
        self.waiters = waiters
        latest = log.latest_epoch
        if latest is None:
            if log.high_watermark_follows_log_end:
                log.maybe_assign_epoch_start_offset(LEADER_EPOCH, log.log_start_offset)
            latest = LEADER_EPOCH
        self.leader_epoch = latest
        self.replication: PartitionState | None = None   # cluster mode, while leading
        self.on_high_watermark: Callable[[], None] | None = None
        self.submit_isr_change: Callable[[Partition, IsrProposal], None] | None = None

    # -- cluster mode: leading and following ---------------------------------------------

    @property
    def min_insync_replicas(self) -> int:
        return self._log.config.min_insync_replicas

    def now_ms(self) -> int:
        return self._log.clock.milliseconds()

    def make_leader(self, leader_epoch: int, partition_epoch: int, isr: list[int], replicas: list[int],
                    local_id: int, replica_lag_time_max_ms: int) -> bool:
        """LeaderAndIsr names this broker leader (Kafka's ``makeLeader``): a new epoch is
        assigned its start offset (the LEO), follower states are (re)set, the HW stays
        where it is and then moves if the ISR allows.  False when ignored (an older
        partition epoch at the same leader epoch)."""
        rep = self.replication
        if rep is None:
            rep = PartitionState(local_id, replica_lag_time_max_ms)
        rep.replica_lag_time_max_ms = replica_lag_time_max_ms
        if not rep.make_leader(leader_epoch, partition_epoch, isr, replicas, self._log.log_end_offset, self.now_ms()):
            return False
        if leader_epoch > self.leader_epoch or self._log.latest_epoch is None:
            self._log.maybe_assign_epoch_start_offset(leader_epoch, self._log.log_end_offset)
        self.leader_epoch = max(leader_epoch, self.leader_epoch)
        self.replication = rep
        self.maybe_increment_high_watermark()
        return True

    def make_follower(self, leader_epoch: int) -> None:
        """Stop leading (Kafka's ``makeFollower``): the leader-side state goes; the HW stays
        (the fetcher moves it, and truncation comes from the leader's DivergingEpoch)."""
        self.replication = None
        self.leader_epoch = max(leader_epoch, self.leader_epoch)

    def maybe_increment_high_watermark(self) -> bool:
        """Move the leader's HW as far as the ISR allows; wakes parked fetches and acks=all
        produces when it moved."""
        rep = self.replication
        if rep is None:
            return False
        new_hw = rep.maybe_increment_hw(self._log.high_watermark, self._log.log_end_offset, self.now_ms(),
                                        self.min_insync_replicas)
        if new_hw is None:
            return False
        self._log.update_high_watermark(new_hw)
        self.waiters.notify((self.topic, self.index))
        if self.on_high_watermark is not None:
            self.on_high_watermark()
        return True

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, log_start_offset: int,
                                    leader_end_offset: int) -> bool:
        """A follower fetched from ``fetch_offset`` (the leader's LEO was ``leader_end_offset``
        before the read): record it, maybe expand the ISR, maybe move the HW.  False when
        this broker does not lead or ``replica_id`` is not a replica."""
        rep = self.replication
        if rep is None or not rep.update_follower_fetch_state(replica_id, fetch_offset, log_start_offset,
                                                               self.now_ms(), leader_end_offset):
            return False
        proposal = rep.maybe_expand_isr(replica_id, self._log.high_watermark)
        if proposal is not None:
            ISR_STATS.expands += 1
            if self.submit_isr_change is not None:
                self.submit_isr_change(self, proposal)
            else:
                rep.clear_pending(proposal)
        self.maybe_increment_high_watermark()
        return True

    def maybe_shrink_isr(self) -> None:
        """Propose removing the followers that fell behind (replica.lag.time.max.ms)."""
        rep = self.replication
        if rep is None or self.submit_isr_change is None:
            return
        proposal = rep.maybe_shrink_isr(self.now_ms(), self._log.log_end_offset)
        if proposal is not None:
            ISR_STATS.shrinks += 1
            self.submit_isr_change(self, proposal)

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, ErrorCode]:
        """For a parked acks=all produce: (done, error); NOT_LEADER_OR_FOLLOWER once not leading."""
        rep = self.replication
        if rep is None:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return rep.check_enough_replicas_reach_offset(required_offset, self._log.high_watermark,
                                                      self.min_insync_replicas)

    # -- cluster mode: following (the replica fetcher's calls) ---------------------------

    @property
    def latest_epoch(self) -> int | None:
        """The latest epoch in the log's leader epoch cache (None while it is empty): a
        follower's ``last_fetched_epoch``.  Not ``leader_epoch``, the epoch this broker
        leads or follows at."""
        return self._log.latest_epoch

    def append_records_as_follower(self, records: bytes | memoryview) -> LogAppendInfo:
        """The leader's batches as they are, offsets, epochs and producer state included
        (Kafka's appendRecordsToFollowerOrFutureReplica).  Raises log.errors.LogError."""
        return self._log.append_as_follower(records)

    def update_offsets_from_leader(self, leader_high_watermark: int, leader_log_start_offset: int) -> bool:
        """After a follower's append: HW = min(the leader's HW, our LEO), waking the fetches
        parked at the old one (consumers reading from this follower, KIP-392); then the log
        start offset follows the leader's, never past our HW (ReplicaFetcherThread's
        processPartitionData).  True when the HW moved.  Raises log.errors.LogError."""
        lg = self._log
        hw_before = lg.high_watermark
        lg.update_high_watermark(min(leader_high_watermark, lg.log_end_offset))
        moved = lg.high_watermark != hw_before
        if moved:
            self.waiters.notify((self.topic, self.index))
        if leader_log_start_offset > lg.log_start_offset:
            lg.maybe_increment_log_start_offset(min(leader_log_start_offset, lg.high_watermark),
                                                "LeaderOffsetIncremented")
        return moved

    def truncate_to(self, offset: int) -> None:
        """Drop the records from ``offset`` on, with their epochs and producer state
        (Kafka's Partition.truncateTo)."""
        self._log.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every record and start the log empty at ``offset`` (the leader's log start is
        past our LEO; Kafka's Partition.truncateFullyAndStartAt)."""
        self._log.truncate_fully_and_start_at(offset)

    # -- offsets and reads ----------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        return self._log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self._log.last_stable_offset

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int] | None:
        """OffsetForLeaderEpoch: (epoch, end offset) from the leader epoch cache, or None."""
        return self._log.end_offset_for_epoch(leader_epoch)

    def update_config(self, config: LogConfig) -> None:
        """A topic or broker config change: takes effect on the next append, roll or
        retention pass."""
        self._log.update_config(config)

    @property
    def size_in_bytes(self) -> int:
        return self._log.size()

    @property
    def number_of_segments(self) -> int:
        return self._log.number_of_segments()

    @property
    def topic_id(self) -> uuid.UUID | None:
        """The topic id in the log's ``partition.metadata`` (KIP-516), None until assigned."""
        return self._log.topic_id

    def assign_topic_id(self, topic_id: uuid.UUID) -> None:
        """Record the topic id (Kafka's Partition.checkOrSetTopicId); raises
        log.errors.InconsistentTopicIdError when the log holds another one."""
        self._log.assign_topic_id(topic_id)

    @property
    def log_dir(self) -> str:
        """The log dir holding this partition's directory."""
        return os.path.dirname(os.path.abspath(self._log.dir))

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords (Kafka's Partition.deleteRecordsOnLeader): move the log start
        offset to ``offset`` (-1 = the high watermark); returns the new low watermark.
        POLICY_VIOLATION without cleanup.policy=delete; OFFSET_OUT_OF_RANGE below 0 or above
        the high watermark.  Segments wholly below are removed by the next retention pass."""
        if not self._log.config.delete:
            raise PolicyViolationError(f"Records of partition {self.topic}-{self.index} can not be "
                                       "deleted due to the configured policy")
        target = self._log.high_watermark if offset == -1 else offset
        if target < 0:
            raise OffsetOutOfRangeError(f"The offset {offset} for partition {self.topic}-{self.index} is not valid")
        self._log.maybe_increment_log_start_offset(target, "ClientRecordDeletion")
        return self._log.log_start_offset

    def fetch_offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets by timestamp (ms, or one of log.log's special timestamps): the first
        offset at or after it, None when there is none; not bounded by the HW (the caller
        applies Kafka's lastFetchableOffset).  Raises log.errors.LogError."""
        return self._log.fetch_offset_by_timestamp(timestamp)

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """Whether ``producer_id`` has a transaction open here at ``producer_epoch`` (Kafka's
        hasOngoingTransaction, KIP-890 verification): one dict lookup, without the log lock
        (on every transactional produce)."""
        entry = self._log.producer_state_manager.last_entry(producer_id)
        return entry is not None and entry.current_txn_first_offset is not None \
            and entry.producer_epoch == producer_epoch

    def active_producers(self) -> list[DescribeProducersResponse.ProducerState]:
        """DescribeProducers: the log's producers by id, read under the log's lock (Kafka's
        UnifiedLog.activeProducers)."""
        lg = self._log
        with lg.lock:
            entries = sorted(lg.producer_state_manager.active_producers().items())
            return [DescribeProducersResponse.ProducerState(
                producer_id=pid, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
                last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                current_txn_start_offset=-1 if e.current_txn_first_offset is None
                else e.current_txn_first_offset)
                for pid, e in entries]

    def append_records_as_leader(self, records: memoryview, required_acks: int = 1,
                                 origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo:
        """Validate, assign offsets in place and append; wakes parked fetches.  ``origin``:
        CLIENT for produce, COORDINATOR for the group coordinator's own records.
        Raises log.errors.LogError subclasses (each names the Kafka error to answer)."""
        rep = self.replication
        if rep is not None and required_acks == -1 and rep.is_under_min_isr(self.min_insync_replicas):
            raise NotEnoughReplicasError(
                f"The size of the current ISR {set(rep.isr)} is insufficient to satisfy the min.isr "
                f"requirement of {rep.effective_min_isr(self.min_insync_replicas)} for partition "
                f"{self.topic}-{self.index}")
        info = self._log.append_as_leader(records, self.leader_epoch, origin=origin)
        # Kafka's appendRecordsToLeader then maybeIncrementLeaderHW, whatever the origin and
        # for a duplicate too: a no-op unless this broker leads a replicated partition (a
        # single node's log moves its HW with the LEO itself)
        self.maybe_increment_high_watermark()
        if not info.duplicate:
            self.waiters.notify((self.topic, self.index))
        return info

    def read(self, fetch_offset: int, max_bytes: int, min_one_message: bool,
             read_committed: bool = False, to_log_end: bool = False, for_sending: bool = False) -> ReadResult:
        """Whole batches from the one containing ``fetch_offset`` up to the high watermark
        (``to_log_end``: up to the LEO, for a follower's fetch).  Raises
        log.errors.OffsetOutOfRangeError below the log start or above the LEO; from the HW
        up to the LEO the read is empty (Kafka's LocalLog.read: a follower serving a consumer
        has a HW behind the leader's, and a leader's HW trails its LEO until the ISR fetched).
        ``for_sending``: large records come as a sendfile-able PinnedSlice (kbroker/replica/record_sending.py)."""
        lg = self._log
        hw = lg.high_watermark
        lso = lg.last_stable_offset
        leo = lg.log_end_offset
        if fetch_offset > leo:
            raise OffsetOutOfRangeError(
                f"Received request for offset {fetch_offset} for partition {self.topic}-{self.index}, "
                f"but the log end offset is {leo}")
        aborted: list | None = None
        if to_log_end:
            bound, isolation = leo, FetchIsolation.LOG_END
        elif read_committed:   # up to the LSO (Kafka's FetchIsolation.TXN_COMMITTED)
            bound, isolation, aborted = lso, FetchIsolation.TXN_COMMITTED, []
        else:
            bound, isolation = hw, FetchIsolation.HIGH_WATERMARK
        if fetch_offset >= bound:   # nothing to read (a wide fetch's usual partition)
            if fetch_offset < lg.log_start_offset:
                raise OffsetOutOfRangeError(
                    f"Received request for offset {fetch_offset} for partition {self.topic}-{self.index}, "
                    f"but we only have log segments starting from offset: {lg.log_start_offset}.")
            return ReadResult(b"", hw, lso, lg.log_start_offset, aborted)
        if for_sending:
            data = read_for_sending(lg, fetch_offset, max_bytes, isolation, min_one_message, aborted)
        else:
            info = lg.read(fetch_offset, max_bytes, isolation, min_one_message)
            data = info.records.read()
            if aborted is not None:
                aborted[:] = info.aborted_transactions or []
        return ReadResult(data, hw, lso, lg.log_start_offset, aborted)
