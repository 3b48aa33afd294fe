"""``PartitionState``: the leader-side replication state of one partition, without I/O
(the decisions of Kafka's ``Partition`` / ``Replica``, 3.7+).

It holds the leader epoch, the partition epoch (the ``state`` znode's zkVersion, carried by
LeaderAndIsr as ``PartitionEpoch``), the committed ISR and at most one pending ISR change,
and one :class:`ReplicaState` per follower.  The caller (kbroker/replica/partition.py) feeds it
the leader's log end offset and high watermark and the clock (``now_ms``, epoch ms) and
acts on what it returns: a new high watermark, an ISR change to submit (AlterPartition),
whether an acks=all produce is done.  It never does them.

Rules (Kafka's, with the source named):

* **Maximal ISR** (``PendingExpandIsr`` / ``PendingShrinkIsr``): while an expand is in
  flight the HW and acks=all already count the joining replica (ISR ∪ {new}); while a
  shrink is in flight they still count the old ISR.  Only one change is in flight
  (``isInflight``); no other is proposed until it is committed or failed.
* **Follower fetch state** (``ReplicaState.updateFetchStateOrThrow``): a fetch at offset
  ``o`` sets the follower's LEO to ``o``; ``last_caught_up_time_ms`` moves to this fetch's
  time when ``o`` >= the leader's LEO now, else to the previous fetch's time when ``o`` >=
  the leader's LEO as of that previous fetch (a follower that is always one batch behind a
  busy leader is still caught up).
* **Caught up** (``isCaughtUp``): LEO == leader LEO, or ``now - last_caught_up_time_ms <=
  replica.lag.time.max.ms``.  ISR members that are not are :meth:`out_of_sync_replicas`
  (``getOutOfSyncReplicas``; none while a change is in flight).  The leader never leaves its
  own ISR, so a shrink never empties it.
* **Expand** (``isFollowerInSync`` + ``canAddReplicaToIsr``): a replica of the assignment,
  not in the ISR, no change in flight, LEO >= HW and >= the leader epoch's start offset.
* **High watermark** (``maybeIncrementLeaderHW``): not moved at all while the committed ISR
  is smaller than the effective min ISR (KAFKA-15583, Kafka 3.7); otherwise the minimum of
  the leader's LEO and the LEO of every follower in the maximal ISR or caught up (a caught-up
  replica about to join is waited for); it only ever increases.
* **Effective min ISR** (``effectiveMinIsr``): min(min.insync.replicas, replication factor).
* **acks=all** (``checkEnoughReplicasReachOffset``): done once HW >= the required offset;
  NONE when the maximal ISR still has min ISR members, else NOT_ENOUGH_REPLICAS_AFTER_APPEND.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wire.error_codes import ErrorCode

__all__ = ["IsrProposal", "PartitionState", "ReplicaState", "UNKNOWN_OFFSET"]

UNKNOWN_OFFSET = -1  # Kafka's UnifiedLog.UnknownOffset


@dataclass(slots=True)
class ReplicaState:
    """What the leader knows of one follower (offsets; times in epoch ms)."""

    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_caught_up_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_time_ms: int = 0

    def update_fetch_state(self, fetch_offset: int, log_start_offset: int, fetch_time_ms: int,
                           leader_end_offset: int) -> None:
        """Kafka's ``updateFetchStateOrThrow`` (without the broker-epoch check)."""
        if fetch_offset >= leader_end_offset:
            caught_up = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            caught_up = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        else:
            caught_up = self.last_caught_up_time_ms
        self.log_start_offset = log_start_offset
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = max(leader_end_offset, self.last_fetch_leader_log_end_offset)
        self.last_fetch_time_ms = fetch_time_ms
        self.last_caught_up_time_ms = caught_up

    def reset(self, now_ms: int, leader_end_offset: int, is_new_leader: bool, in_sync: bool) -> None:
        """Kafka's ``resetReplicaState``: on becoming leader (everything unknown) or on a
        LeaderAndIsr for a partition already led (offsets kept).  An ISR member counts as
        caught up now (it has replica.lag.time.max.ms to fetch); others not at all."""
        self.last_caught_up_time_ms = now_ms if in_sync else 0
        if is_new_leader:
            self.log_end_offset = UNKNOWN_OFFSET
            self.log_start_offset = UNKNOWN_OFFSET
            self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_time_ms = 0
        else:
            self.last_fetch_leader_log_end_offset = leader_end_offset
            self.last_fetch_time_ms = now_ms if in_sync else 0

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        return leader_end_offset == self.log_end_offset or now_ms - self.last_caught_up_time_ms <= max_lag_ms


@dataclass(frozen=True, slots=True)
class IsrProposal:
    """An ISR change to send to the controller (AlterPartition), made at this leader epoch
    from this partition epoch."""

    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int


@dataclass(slots=True)
class _Pending:
    proposal: IsrProposal
    added: int | None = None            # expand: the joining replica
    removed: frozenset[int] = field(default_factory=frozenset)  # shrink: the leaving ones


class PartitionState:
    def __init__(self, local_id: int, replica_lag_time_max_ms: int) -> None:
        self.local_id = local_id
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()          # committed
        self.pending: _Pending | None = None
        self.followers: dict[int, ReplicaState] = {}
        self.leader_epoch_start_offset = UNKNOWN_OFFSET

    # -- becoming leader ----------------------------------------------------------------

    def make_leader(self, leader_epoch: int, partition_epoch: int, isr: list[int], replicas: list[int],
                    leader_end_offset: int, now_ms: int) -> bool:
        """Apply a LeaderAndIsr naming this broker leader (Kafka's ``makeLeader``).  A new
        leader epoch remembers ``leader_end_offset`` as the epoch's start offset.  Follower
        states are reset every time: all unknown when this state is new (we were not
        leading), offsets kept when we lead already (a controller-made ISR change bumps the
        epoch); ISR members count as caught up now.  Returns False (nothing applied) when
        the partition epoch is older than the one held at this leader epoch."""
        is_new_epoch = leader_epoch > self.leader_epoch
        is_new_leader = self.leader_epoch < 0
        if not is_new_epoch and partition_epoch < self.partition_epoch:
            return False
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = tuple(replicas)
        self.isr = tuple(isr)
        self.pending = None
        if is_new_epoch:
            self.leader_epoch_start_offset = leader_end_offset
        followers = {}
        for r in replicas:
            if r == self.local_id:
                continue
            rs = self.followers.get(r) or ReplicaState(r)
            rs.reset(now_ms, leader_end_offset, is_new_leader, r in isr)
            followers[r] = rs
        self.followers = followers
        return True

    # -- ISR views ----------------------------------------------------------------------

    @property
    def is_inflight(self) -> bool:
        return self.pending is not None

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending is not None and self.pending.added is not None:
            return self.isr + (self.pending.added,)
        return self.isr

    def effective_min_isr(self, min_insync_replicas: int) -> int:
        return min(min_insync_replicas, max(1, len(self.replicas)))

    def is_under_min_isr(self, min_insync_replicas: int) -> bool:
        return len(self.isr) < self.effective_min_isr(min_insync_replicas)

    # -- follower fetches ---------------------------------------------------------------

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, log_start_offset: int,
                                    now_ms: int, leader_end_offset: int) -> bool:
        """A follower fetched from ``fetch_offset``; False if it is not a replica of the
        assignment (the caller answers NOT_LEADER_OR_FOLLOWER)."""
        rs = self.followers.get(replica_id)
        if rs is None:
            return False
        rs.update_fetch_state(fetch_offset, log_start_offset, now_ms, leader_end_offset)
        return True

    def maybe_expand_isr(self, replica_id: int, high_watermark: int) -> IsrProposal | None:
        """The expand a fetch by ``replica_id`` makes due, if any; it becomes the pending
        change (the caller submits it)."""
        rs = self.followers.get(replica_id)
        if rs is None or self.pending is not None or replica_id in self.isr:
            return None
        if not (rs.log_end_offset >= high_watermark and self.leader_epoch_start_offset != UNKNOWN_OFFSET
                and rs.log_end_offset >= self.leader_epoch_start_offset):
            return None
        proposal = IsrProposal(self.leader_epoch, self.isr + (replica_id,), self.partition_epoch)
        self.pending = _Pending(proposal, added=replica_id)
        return proposal

    def out_of_sync_replicas(self, now_ms: int, leader_end_offset: int, max_lag_ms: int | None = None) -> set[int]:
        """ISR members (not the leader) that are not caught up; empty while a change is in
        flight (Kafka's ``getOutOfSyncReplicas``)."""
        if self.pending is not None:
            return set()
        lag = self.replica_lag_time_max_ms if max_lag_ms is None else max_lag_ms
        out = set()
        for r in self.isr:
            if r == self.local_id:
                continue
            rs = self.followers.get(r)
            if rs is None or not rs.is_caught_up(leader_end_offset, now_ms, lag):
                out.add(r)
        return out

    def maybe_shrink_isr(self, now_ms: int, leader_end_offset: int) -> IsrProposal | None:
        """The shrink due now, if any; it becomes the pending change."""
        out = self.out_of_sync_replicas(now_ms, leader_end_offset)
        if not out:
            return None
        new_isr = tuple(r for r in self.isr if r not in out)
        proposal = IsrProposal(self.leader_epoch, new_isr, self.partition_epoch)
        self.pending = _Pending(proposal, removed=frozenset(out))
        return proposal

    # -- AlterPartition outcome ---------------------------------------------------------

    def apply_committed(self, leader_epoch: int, isr: list[int], partition_epoch: int) -> bool:
        """The controller wrote this ISR (AlterPartition answer).  Applied, and the pending
        change cleared, when it is for our leader epoch and not older than what we hold."""
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            return False
        self.isr = tuple(isr)
        self.partition_epoch = partition_epoch
        self.pending = None
        return True

    def clear_pending(self, proposal: IsrProposal | None = None) -> None:
        """The change failed (an error answer): forget it so the next check may try again.
        With ``proposal``, only if that is still the pending one."""
        if self.pending is not None and (proposal is None or self.pending.proposal == proposal):
            self.pending = None

    # -- high watermark and acks=all ----------------------------------------------------

    def maybe_increment_hw(self, high_watermark: int, leader_end_offset: int, now_ms: int,
                           min_insync_replicas: int) -> int | None:
        """The new HW if it moves up, else None (Kafka's ``maybeIncrementLeaderHW``)."""
        if self.is_under_min_isr(min_insync_replicas):
            return None
        new_hw = leader_end_offset
        maximal = self.maximal_isr
        for r, rs in self.followers.items():
            if rs.log_end_offset < new_hw and (
                    r in maximal or (rs.is_caught_up(leader_end_offset, now_ms, self.replica_lag_time_max_ms)
                                     and r in self.replicas)):
                new_hw = rs.log_end_offset
        return new_hw if new_hw > high_watermark else None

    def check_enough_replicas_reach_offset(self, required_offset: int, high_watermark: int,
                                           min_insync_replicas: int) -> tuple[bool, ErrorCode]:
        """(done, error) for an acks=all produce waiting for ``required_offset`` (its last
        offset + 1)."""
        if high_watermark < required_offset:
            return False, ErrorCode.NONE
        if self.effective_min_isr(min_insync_replicas) <= len(self.maximal_isr):
            return True, ErrorCode.NONE
        return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
