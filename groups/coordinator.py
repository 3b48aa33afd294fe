"""``GroupCoordinator``: the one object the broker's handlers talk to.

Every method takes a decoded request and its API version and returns a
:class:`groups.result.Result`; see the package docstring for the contract.  This module
does the request-level checks Kafka's ``GroupCoordinatorService`` does (loading, group id,
session timeout bounds), shapes per-version responses, runs the timers, and rebuilds state
from ``__consumer_offsets`` (``replay``).  Membership lives in ``group_manager``, offsets in
``offsets``.
"""

from __future__ import annotations

from collections.abc import Callable

from groups.admin import GroupAdmin
from groups.append_errors import group_metadata_error, offset_commit_error
from groups.classic_group import ClassicGroup
from groups.config import GroupConfig
from groups.consumer import records as consumer_records
from groups.consumer.commits import commit_error, fetch_error
from groups.consumer.describe import described_group
from groups.consumer.heartbeat import ConsumerGroupHeartbeats
from groups.consumer.topics import TopicsImage
from groups.group_manager import GroupManager
from groups.group_state import GroupState
from groups.loading import GroupLoading
from groups.migration import Migration
from groups.offsets import OffsetManager
from groups.pending import Pending
from groups.records import (
    Record,
    group_metadata_tombstone,
    offset_commit_tombstone,
)
from groups.responses import join_error, sync_error
from groups.result import Result, Write
from groups.timers import Timers
from log.clock import Clock
from wire.error_codes import ErrorCode
from wire.java_hash import partition_for
from wire.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

__all__ = ["GroupCoordinator"]

E = ErrorCode
EXPIRY_KEY = "offsets-expiry"


class GroupCoordinator(GroupAdmin, GroupLoading):
    """The classic group coordinator for every group this broker owns.

    ``new_uuid`` makes member ids deterministic in tests (Kafka: ``UUID.randomUUID()``).
    ``loading`` starts False; ``begin_load()`` / ``complete_load()`` bracket a replay of
    ``__consumer_offsets`` during which group requests answer COORDINATOR_LOAD_IN_PROGRESS.
    ``offsets_topic_partitions`` is the partition count of ``__consumer_offsets``: the
    config's until the adapter sets the count of the topic it found on disk (Kafka reads it
    from the topic's metadata; ``offsets.topic.num.partitions`` only applies at creation).

    Ownership (Kafka's ``GroupMetadataManager`` ownedPartitions / loadingPartitions):
    ``owned_partitions`` None means this coordinator owns every ``__consumer_offsets``
    partition (a single broker).  A cluster broker sets it to an empty set and owns a
    partition from ``complete_load(p)`` (after ``begin_load(p)`` and the replay) until
    ``unload_partition(p)``.  A request for a group whose partition is loading answers
    COORDINATOR_LOAD_IN_PROGRESS, one for a partition not owned NOT_COORDINATOR, each in its
    API's own layout (Kafka's ``validateGroupStatus``).
    """

    def __init__(self, config: GroupConfig | None = None, clock: Clock | None = None, *,
                 new_uuid: Callable[[], str] | None = None,
                 topics: Callable[[], TopicsImage] | None = None) -> None:
        if clock is None:
            from log.clock import SystemClock

            clock = SystemClock()
        self.config = config or GroupConfig()
        self.clock = clock
        self.groups: dict[str, ClassicGroup] = {}
        self.timers = Timers()
        self.members = GroupManager(self.groups, self.config, clock, self.timers, new_uuid)
        self.offsets = OffsetManager(self.groups, self.config)
        # KIP-848 consumer groups: a group id names a classic group or a consumer group
        self.consumer = ConsumerGroupHeartbeats(self.config, clock, self.timers, topics, new_uuid)
        self.offsets.other_groups = self.consumer.groups
        self.migration = Migration(self)   # classic calls for consumer groups, conversions
        self.loading = False
        self.owned_partitions: set[int] | None = None
        self.loading_partitions: set[int] = set()
        self.offsets_topic_partitions = self.config.offsets_topic_num_partitions
        self._partition_cache: dict[tuple[str, int], int] = {}
        self._schedule_expiry()

    # -- helpers ---------------------------------------------------------------------------

    def _now(self) -> int:
        return self.clock.milliseconds()

    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition holding ``group_id``'s records (Java's string
        hash in Python costs ~1 µs a character: kept per group id and partition count)."""
        key = (group_id, self.offsets_topic_partitions)
        index = self._partition_cache.get(key)
        if index is None:
            if len(self._partition_cache) > 100_000:
                self._partition_cache.clear()
            index = self._partition_cache[key] = partition_for(group_id, self.offsets_topic_partitions)
        return index

    def group_error(self, group_id: str) -> ErrorCode | None:
        """COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR when this coordinator may not
        answer for ``group_id`` now, else None (Kafka checks loading first)."""
        if self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        index = self.partition_for(group_id)
        if index in self.loading_partitions:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if self.owned_partitions is not None and index not in self.owned_partitions:
            return E.NOT_COORDINATOR
        return None

    def _result(self, response=None, pending: Pending | None = None,
                writes: list[Write] | None = None) -> Result:
        """The call's Result: ``writes`` (this call's own, first), then whatever the
        membership code emitted, and the parked answers it completed.  Without writes the
        answers are released at once (nothing to store first)."""
        emitted, deliveries = self.members.take()
        emitted += self.consumer.take()
        out = Result(writes=(writes or []) + emitted, response=response, pending=pending,
                     deliveries=deliveries, follow_up=self._result)
        if not out.writes:
            out.appended()
        return out

    def _schedule_expiry(self) -> None:
        self.timers.schedule(EXPIRY_KEY, self._now() + self.config.offsets_retention_check_interval_ms,
                             self._run_expiry)

    # -- timers ----------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """When ``poll`` next has work (epoch ms), or None."""
        return self.timers.next_deadline_ms()

    def poll(self, now_ms: int | None = None) -> Result:
        """Fire every timer due at ``now_ms`` (default: the clock): session expiries, join and
        sync phase ends, initial-rebalance delays, offset expiry.  Responses of parked
        requests completed here are delivered through their callbacks; the returned
        ``records`` must be appended before those responses leave."""
        now = self._now() if now_ms is None else now_ms
        while (callback := self.timers.pop_due(now)) is not None:
            callback()
        return self._result()

    on_timer = poll

    def _run_expiry(self) -> None:
        by_group: dict[str, list[Record]] = {}
        for group_id, record in self._cleanup_group_metadata():
            by_group.setdefault(group_id, []).append(record)
        for group_id, records in by_group.items():
            self.members.add_write(Write(group_id, records))
        self._schedule_expiry()

    def _cleanup_group_metadata(self) -> list[tuple[str, Record]]:
        """Kafka's ``cleanupGroupMetadata``: expire offsets, delete Empty groups left with
        none.  Applied here, before the tombstones are stored, as Kafka does (a failed append
        is only logged: the offsets come back after a restart and expire again)."""
        now = self._now()
        records: list[tuple[str, Record]] = []
        for group in list(self.groups.values()):
            expired, all_gone = self.offsets.expire(group, now)
            records.extend((group.group_id, r) for r in expired)
            self.offsets.apply(expired, now)
            if all_gone and group.is_in(GroupState.EMPTY):
                records.append((group.group_id, group_metadata_tombstone(group.group_id)))
                self._remove_group(group)
        for cgroup in list(self.consumer.groups.values()):
            records.extend(self._expire_consumer_group(cgroup, now))
        return records

    def _expire_consumer_group(self, group, now: int) -> list[tuple[str, Record]]:
        """A consumer-protocol group's offsets expire ``offsets.retention.minutes`` after their
        commit while no member subscribes to their topic (Kafka's condition for these
        groups: the commit timestamp); an Empty group left with none is deleted."""
        group_id = group.group_id
        by_tp = self.offsets.offsets.get(group_id, {})
        subscribed = group.subscribed_topic_names()
        pending = self.offsets.txn.pending_partitions(group_id)
        expired = []
        for (topic, partition), o in sorted(by_tp.items()):
            if topic in subscribed or (topic, partition) in pending:
                continue
            deadline = o.expire_timestamp_ms if o.expire_timestamp_ms is not None \
                else o.commit_timestamp_ms + self.config.offsets_retention_ms
            if now >= deadline:
                expired.append(offset_commit_tombstone(group_id, topic, partition))
        self.offsets.apply(expired, now)
        out = [(group_id, r) for r in expired]
        if not group.members and not self.offsets.offsets.get(group_id) \
                and not self.offsets.txn.has_pending(group_id):
            changes = self._consumer_group_tombstones(group)
            self.consumer.take_over(group_id, changes)
        return out

    def on_partitions_deleted(self, partitions: list[tuple[str, int]]) -> Result:
        """A topic's partitions were deleted (Kafka's ``GroupCoordinator.onPartitionsDeleted``):
        every group this coordinator owns loses its committed and pending transactional
        offsets of them; the tombstones are one write per group, to its own partition.
        Applied here, before they are stored, as expiry is (a failed append is only logged
        by the adapter: the offsets would come back after a restart)."""
        by_group = self.offsets.deleted_partitions_tombstones(set(partitions))
        now = self._now()
        writes = []
        for group_id, records in by_group.items():
            self.offsets.apply(records, now)
            writes.append(Write(group_id, records))
        return self._result(len([r for w in writes for r in w.records]), writes=writes)

    def _remove_group(self, group: ClassicGroup) -> None:
        self.members.drop_group_timers(group)
        group.state = GroupState.DEAD
        self.groups.pop(group.group_id, None)
        self.offsets.offsets.pop(group.group_id, None)
        self.offsets.txn.drop_group(group.group_id)

    # -- membership APIs -------------------------------------------------------------------

    def join_group(self, req: JoinGroupRequest, version: int, *, client_id: str = "",
                   client_host: str = "") -> Result:
        """JoinGroup v0-7.  ``client_host`` as Kafka shows it (``/10.0.0.1``)."""
        early = self.group_error(req.group_id)
        if early is None and not req.group_id:
            early = E.INVALID_GROUP_ID
        elif early is None and not (self.config.group_min_session_timeout_ms
                                    <= req.session_timeout_ms
                                    <= self.config.group_max_session_timeout_ms):
            early = E.INVALID_SESSION_TIMEOUT
        if early is None and self.migration.owns(req.group_id):
            joined = self.migration.join_group(req, version, client_id, client_host)
            if joined is not None:
                return joined
        if early is not None:
            pending = self.members.new_pending("JoinGroup", version)
            pending.complete(join_error(req.member_id, early))
            return self._result(pending=pending)
        pending = self.members.join_group(req, version, client_id, client_host)
        return self._result(pending=pending)

    def sync_group(self, req: SyncGroupRequest, version: int) -> Result:
        """SyncGroup v0-5: the leader's request carries the assignment; followers park."""
        early = self.group_error(req.group_id) or (
            E.INVALID_GROUP_ID if not req.group_id else None)
        if early is not None:
            pending = self.members.new_pending("SyncGroup", version)
            pending.complete(sync_error(early))
            return self._result(pending=pending)
        if self.migration.owns(req.group_id):
            return self.migration.sync_group(req, version)
        return self._result(pending=self.members.sync_group(req, version))

    def heartbeat(self, req: HeartbeatRequest, version: int) -> Result:
        if (early := self.group_error(req.group_id)) is not None:
            return self._result(HeartbeatResponse(error_code=int(early)))
        if not req.group_id:
            return self._result(HeartbeatResponse(error_code=int(E.INVALID_GROUP_ID)))
        if self.migration.owns(req.group_id):
            return self.migration.heartbeat(req, version)
        return self._result(self.members.heartbeat(req, version))

    def leave_group(self, req: LeaveGroupRequest, version: int) -> Result:
        if (early := self.group_error(req.group_id)) is not None:
            return self._result(LeaveGroupResponse(error_code=int(early)))
        if not req.group_id:
            return self._result(LeaveGroupResponse(error_code=int(E.INVALID_GROUP_ID)))
        if self.migration.owns(req.group_id):
            return self.migration.leave_group(req, version)
        return self._result(self.members.leave_group(req, version))

    # -- the consumer group protocol (KIP-848) ---------------------------------------------

    def consumer_group_heartbeat(self, req: ConsumerGroupHeartbeatRequest, version: int, *,
                                 client_id: str = "", client_host: str = "") -> Result:
        """ConsumerGroupHeartbeat v0-1 (``groups/consumer/heartbeat.py``)."""
        if (early := self.group_error(req.group_id)) is not None:
            return self._result(ConsumerGroupHeartbeatResponse(error_code=int(early)))
        response, write = self.consumer.heartbeat(req, version, client_id=client_id,
                                                  client_host=client_host)
        return self._result(response, writes=[write] if write is not None else None)

    def consumer_group_describe(self, req: ConsumerGroupDescribeRequest, version: int) -> Result:
        """ConsumerGroupDescribe v0-1: GROUP_ID_NOT_FOUND for an unknown group or one of
        the classic type."""
        described = []
        image = self.consumer.topics()
        default = self.config.consumer_assignors[0]
        for group_id in req.group_ids:
            if (early := self.group_error(group_id)) is not None:
                described.append(ConsumerGroupDescribeResponse.DescribedGroup(
                    group_id=group_id, error_code=int(early)))
                continue
            group = self.consumer.groups.get(group_id)
            if group is None:
                message = (f"Group {group_id} is not a consumer group."
                           if group_id in self.groups else f"Group {group_id} not found.")
                described.append(ConsumerGroupDescribeResponse.DescribedGroup(
                    group_id=group_id, error_code=int(E.GROUP_ID_NOT_FOUND),
                    error_message=message))
                continue
            described.append(described_group(group, default, image))
        return self._result(ConsumerGroupDescribeResponse(groups=described))

    @staticmethod
    def _consumer_group_tombstones(group) -> list:
        """Kafka's ``ConsumerGroup.createGroupTombstoneRecords``, in its order."""
        cr = consumer_records
        gid = group.group_id
        changes = [cr.current_assignment_tombstone(gid, m) for m in group.members]
        changes += [cr.target_member_tombstone(gid, m) for m in group.members]
        changes.append(cr.target_metadata_tombstone(gid))
        changes += [cr.subscription_tombstone(gid, m) for m in group.members]
        changes += [cr.regex_tombstone(gid, r) for r in sorted(group.resolved_regexes)]
        changes.append(cr.partition_metadata_tombstone(gid))
        changes.append(cr.epoch_tombstone(gid))
        return changes

    # -- offsets ---------------------------------------------------------------------------

    def offset_commit(self, req: OffsetCommitRequest, version: int) -> Result:
        """OffsetCommit v2-8 (generation -1 + empty member id: a simple commit).

        Store, then propagate (Kafka's ``storeOffsets``): the offsets become visible to
        OffsetFetch, and a simple group is created for them, only once their records are
        appended; if the append fails, every partition that was to be stored answers the
        mapped error (``append_errors.offset_commit_error``) and nothing changes."""
        if (early := self.group_error(req.group_id)) is not None:
            return self._result(_commit_error(req, early))
        now = self._now()
        group = self.groups.get(req.group_id)
        consumer_group = self.consumer.groups.get(req.group_id)
        if consumer_group is not None:
            error = commit_error(consumer_group, req.member_id,
                                 req.group_instance_id if version >= 7 else None,
                                 req.generation_id_or_member_epoch, False, version,
                                 [(t.name, p.partition_index) for t in req.topics for p in t.partitions],
                                 self.consumer.topics())
            response, records = self.offsets.commit(req, version, now, None, validated=True,
                                                    error=error)
        elif group is None and req.generation_id_or_member_epoch >= 0 and version >= 9:
            # v9+: GROUP_ID_NOT_FOUND for both protocols (older versions: ILLEGAL_GENERATION)
            return self._result(_commit_error(req, E.GROUP_ID_NOT_FOUND))
        else:
            response, records = self.offsets.commit(req, version, now, group)
        if group is None and consumer_group is None and req.generation_id_or_member_epoch < 0 \
                and not records:
            # Nothing to store (every metadata too large): Kafka still adds the simple group.
            group = self.members.get_or_create(req.group_id, True)
        if group is not None and req.generation_id_or_member_epoch >= 0 and records:
            self.members.touch_member(group, req.member_id)
        if not records:
            return self._result(response)
        write = Write(req.group_id, records)

        def on_appended(append_error: ErrorCode) -> None:
            if append_error is E.NONE:
                # Replay creates the simple group of an assign()-mode consumer if needed.
                self.offsets.apply(records, now, write.base_offset)
                return
            code = int(offset_commit_error(append_error))
            for topic in response.topics:
                for partition in topic.partitions:
                    if partition.error_code == E.NONE:
                        partition.error_code = code

        write.on_appended = on_appended
        return self._result(response, writes=[write])

    def txn_offset_commit(self, req: TxnOffsetCommitRequest, version: int) -> Result:
        """TxnOffsetCommit v0-4 (Kafka's ``commitTransactionalOffsets``): the offsets are
        written as a transactional batch of the request's producer and held pending
        (``groups/txn_offsets.py``) until ``complete_txn`` sees the transaction's marker.
        An append the log refuses (e.g. INVALID_PRODUCER_EPOCH for a fenced producer) is
        every partition's error, mapped as Kafka's ``handleOperationException``."""
        if (early := self.group_error(req.group_id)) is not None:
            return self._result(_txn_commit_error(req, early))
        if not req.group_id:
            return self._result(_txn_commit_error(req, E.INVALID_GROUP_ID))
        now = self._now()
        group = self.groups.get(req.group_id)
        consumer_group = self.consumer.groups.get(req.group_id)
        if consumer_group is not None:
            verdict = commit_error(
                consumer_group, req.member_id if version >= 3 else "",
                req.group_instance_id if version >= 3 else None,
                req.generation_id_or_member_epoch if version >= 3 else -1, True, version,
                [(t.name, p.partition_index) for t in req.topics for p in t.partitions],
                self.consumer.topics())
            response, records, error = self.offsets.txn_commit(req, version, now, None,
                                                               validated=True, error=verdict)
        else:
            response, records, error = self.offsets.txn_commit(req, version, now, group)
        if group is None and consumer_group is None and error is None:
            # Kafka creates the simple group when it validates the commit
            self.members.get_or_create(req.group_id, True)
        if not records:
            return self._result(response)
        write = Write(req.group_id, records, producer_id=req.producer_id,
                      producer_epoch=req.producer_epoch)

        def on_appended(append_error: ErrorCode) -> None:
            if append_error is E.NONE:
                self.offsets.apply(records, now, write.base_offset, req.producer_id)
                return
            code = int(group_metadata_error(append_error))
            for topic in response.topics:
                for partition in topic.partitions:
                    partition.error_code = code

        write.on_appended = on_appended
        return self._result(response, writes=[write])

    def complete_txn(self, producer_id: int, commit: bool, partitions: list[int]) -> None:
        """The COMMIT/ABORT marker of ``producer_id`` was appended to these
        ``__consumer_offsets`` partitions: its pending offsets of the groups there become
        committed offsets (COMMIT) or are dropped (ABORT).  Kafka's
        ``replayEndTransactionMarker``; the marker's epoch was checked by the log."""
        wanted = set(partitions)
        group_ids = {g for g in self.offsets.txn.groups_of(producer_id)
                     if self.partition_for(g) in wanted}
        if group_ids:
            self.offsets.complete_txn(producer_id, group_ids, commit)

    def offset_fetch(self, req: OffsetFetchRequest, version: int) -> Result:
        """OffsetFetch v1-8: v0-7 one group (top-level error from v2), v8 ``groups[]``."""
        if version >= 8:
            groups = []
            for g in req.groups:
                if (early := self.group_error(g.group_id)) is None and version >= 9 \
                        and (cg := self.consumer.groups.get(g.group_id)) is not None:
                    early = fetch_error(cg, g.member_id, g.member_epoch)
                if early is not None:
                    groups.append(OffsetFetchResponse.OffsetFetchResponseGroup(
                        group_id=g.group_id, error_code=int(early)))
                    continue
                topics = None if g.topics is None else [(t.name, list(t.partition_indexes))
                                                        for t in g.topics]
                fetched = self.offsets.fetch(g.group_id, topics, req.require_stable)
                groups.append(OffsetFetchResponse.OffsetFetchResponseGroup(
                    group_id=g.group_id, topics=self.offsets.group_topics(fetched, True)))
            return self._result(OffsetFetchResponse(groups=groups))
        if (early := self.group_error(req.group_id)) is not None:
            return self._result(_fetch_error(req, version, early))
        topics = None if req.topics is None else [(t.name, list(t.partition_indexes))
                                                  for t in req.topics]
        fetched = self.offsets.fetch(req.group_id, topics, version >= 7 and req.require_stable)
        return self._result(OffsetFetchResponse(
            topics=self.offsets.group_topics(fetched, False), error_code=0))

    def offset_delete(self, req: OffsetDeleteRequest, version: int) -> Result:
        if (early := self.group_error(req.group_id)) is not None:
            return self._result(OffsetDeleteResponse(error_code=int(early)))
        response, records = self.offsets.delete(req)
        if not records:
            return self._result(response)
        # Removed at once (no later call may see them) and put back if the tombstones are
        # not stored, with the mapped error: Kafka's coordinator reverts its snapshot then.
        group_id = req.group_id
        before = dict(self.offsets.offsets.get(group_id, {}))
        self.offsets.apply(records, self._now())
        after = self.offsets.offsets.get(group_id, {})
        removed = {tp: o for tp, o in before.items() if tp not in after}

        def on_appended(append_error: ErrorCode) -> None:
            if append_error is E.NONE:
                return
            if group_id in self.groups:
                current = self.offsets.offsets.setdefault(group_id, {})
                for tp, o in removed.items():
                    current.setdefault(tp, o)  # a commit stored meanwhile is newer
            response.error_code = int(group_metadata_error(append_error))
            response.topics = []

        return self._result(response, writes=[Write(group_id, records, on_appended)])

def _txn_commit_error(req: TxnOffsetCommitRequest, code: ErrorCode) -> TxnOffsetCommitResponse:
    """Kafka's ``TxnOffsetCommitRequest.getErrorResponse``: every partition the error."""
    return TxnOffsetCommitResponse(topics=[
        TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
            TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition(
                partition_index=p.partition_index, error_code=int(code))
            for p in t.partitions])
        for t in req.topics])


def _commit_error(req: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=[
        OffsetCommitResponse.OffsetCommitResponseTopic(name=t.name, partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(
                partition_index=p.partition_index, error_code=int(code))
            for p in t.partitions])
        for t in req.topics])


def _fetch_error(req: OffsetFetchRequest, version: int, code: ErrorCode) -> OffsetFetchResponse:
    """OffsetFetch v1-7 refused as a whole (Kafka's ``OffsetFetchRequest.getErrorResponse``):
    v2+ carry the top-level error; v1 has none, so every requested partition carries it."""
    if version >= 2:
        return OffsetFetchResponse(error_code=int(code))
    return OffsetFetchResponse(topics=[
        OffsetFetchResponse.OffsetFetchResponseTopic(name=t.name, partitions=[
            OffsetFetchResponse.OffsetFetchResponsePartition(
                partition_index=i, committed_offset=-1, metadata="", error_code=int(code))
            for i in t.partition_indexes])
        for t in req.topics or []])
