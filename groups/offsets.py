"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete and expiry.

A port of Kafka's ``OffsetMetadataManager`` for classic groups.  Unlike membership, offsets
change only by replaying records: a commit builds OffsetCommit records and replays them once
they are appended (the coordinator's continuation), so the live map and a map rebuilt from
``__consumer_offsets`` cannot drift.

Rules kept from Kafka:

* A commit to an unknown group with generation < 0 creates a "simple" group (Empty, no
  protocol type) for assign()-mode consumers; with a generation >= 0 it answers
  ILLEGAL_GENERATION (OffsetCommit < v9).  ``ClassicGroup`` validation otherwise: Dead ->
  COORDINATOR_NOT_AVAILABLE; generation < 0 in Empty -> accepted; a member -> must exist
  (UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID) and match the generation (ILLEGAL_GENERATION);
  no member id outside Empty -> UNKNOWN_MEMBER_ID; CompletingRebalance ->
  REBALANCE_IN_PROGRESS.  A group-level error is every partition's error.
* ``retention_time_ms`` (v2-v4) other than -1 sets an expire timestamp (value v1); metadata
  longer than ``offset.metadata.max.bytes`` -> OFFSET_METADATA_TOO_LARGE for that partition;
  a null metadata is stored as "".
* OffsetFetch never fails for an unknown group or partition: offset -1, leader epoch -1,
  metadata "" (PROTOCOL-NOTES trap 39).  Null topics means "every committed offset".
* TxnOffsetCommit (``txn_commit``): validated as Kafka's ``validateOffsetCommit`` with
  ``isTransactional`` (no member id and generation -1 is accepted in any state, and
  CompletingRebalance is not refused); its records replay into ``txn`` (groups/txn_offsets.py)
  and become committed offsets only with the transaction's COMMIT marker.  OffsetFetch with
  ``require_stable`` answers UNSTABLE_OFFSET_COMMIT (offset -1) for a partition with one.
* A deleted topic's partitions (``deleted_partitions_tombstones``): every group's committed
  and pending transactional offsets of them are tombstoned (Kafka's onPartitionsDeleted), so
  a topic created again under the same name starts with no committed offset.
* Expiry (``offsets.retention.minutes``): only for topics the group does not subscribe to;
  an offset with an expire timestamp expires then; otherwise retention counts from the
  moment the group became Empty (consumer groups), or from the commit (simple groups).
  Groups that are Empty with nothing left are deleted (GroupMetadata tombstone).
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from groups.classic_group import ClassicGroup, GroupError
from groups.config import GroupConfig
from groups.group_state import GroupState
from groups.offset_and_metadata import OffsetAndMetadata
from groups.records import (
    Record,
    decode_key,
    decode_value,
    offset_commit_record,
    offset_commit_tombstone,
)
from groups.txn_offsets import PendingTxnOffsets
from wire.error_codes import ErrorCode
from wire.messages import (
    OffsetCommitKey,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitValue,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

__all__ = ["OffsetManager", "FetchedPartition"]

E = ErrorCode
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error_code: int = 0


def validate_offset_commit(group: ClassicGroup, member_id: str, instance_id: str | None,
                           generation_id: int, is_transactional: bool = False) -> None:
    """Kafka's ``ClassicGroup.validateOffsetCommit``."""
    if group.is_in(GroupState.DEAD):
        raise GroupError(E.COORDINATOR_NOT_AVAILABLE)
    if generation_id < 0 and group.is_in(GroupState.EMPTY):
        return
    if generation_id >= 0 or member_id != "" or instance_id is not None:
        group.validate_member(member_id, instance_id)
        if generation_id != group.generation_id:
            raise GroupError(E.ILLEGAL_GENERATION)
    elif not is_transactional and not group.is_in(GroupState.EMPTY):
        # without member id and generation only an Empty group takes commits; Kafka accepts
        # transactional ones in any state
        raise GroupError(E.UNKNOWN_MEMBER_ID)
    if not is_transactional and group.is_in(GroupState.COMPLETING_REBALANCE):
        raise GroupError(E.REBALANCE_IN_PROGRESS)


class OffsetManager:
    def __init__(self, groups: dict[str, ClassicGroup], config: GroupConfig) -> None:
        self.groups = groups
        self.config = config
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        self.txn = PendingTxnOffsets()
        # the ids of groups of the other type (KIP-848 consumer groups): their offsets are
        # kept here too, without a classic "simple" group
        self.other_groups: Container[str] = ()

    # -- replay ----------------------------------------------------------------------------

    def replay(self, key: OffsetCommitKey, value: OffsetCommitValue | None, now_ms: int,
               record_offset: int = -1, producer_id: int = -1) -> None:
        """Kafka's ``OffsetMetadataManager.replay``: ``producer_id`` >= 0 is a record of a
        transactional batch (pending until its marker)."""
        tp = (key.topic, key.partition)
        if value is None:
            by_tp = self.offsets.get(key.group)
            if by_tp is not None:
                by_tp.pop(tp, None)
                if not by_tp:
                    del self.offsets[key.group]
            self.txn.drop_partition(key.group, tp)
            return
        if key.group not in self.groups and key.group not in self.other_groups:
            # A commit without membership: Kafka makes a "simple" group (Empty, no type).
            self.groups[key.group] = ClassicGroup(key.group, GroupState.EMPTY,
                                                  current_state_timestamp_ms=now_ms)
        offset = OffsetAndMetadata.from_value(value, record_offset)
        if producer_id >= 0:
            self.txn.add(producer_id, key.group, tp, offset)
            return
        by_tp = self.offsets.setdefault(key.group, {})
        current = by_tp.get(tp)
        # Outcomes of appends may come back out of log order (each waits for its own
        # replication): the commit later in the log wins, as in Kafka's
        # GroupMetadata.onOffsetCommitAppend (``olderThan``: by the record's offset).
        if current is None or current.older_than(offset):
            by_tp[tp] = offset

    def apply(self, records: list[Record], now_ms: int, base_offset: int = -1,
              producer_id: int = -1) -> None:
        """Replay records appended as one batch from ``base_offset`` (-1: unknown)."""
        for i, rec in enumerate(records):
            key = decode_key(rec.key)
            if isinstance(key, OffsetCommitKey):
                self.replay(key, decode_value(key, rec.value), now_ms,
                            base_offset + i if base_offset >= 0 else -1, producer_id)

    def complete_txn(self, producer_id: int, group_ids: set[str] | None, commit: bool) -> None:
        """Kafka's ``replayEndTransactionMarker`` for the groups of one partition."""
        done = self.txn.complete(producer_id, group_ids)
        if not commit:
            return
        for group_id, pending in done.items():
            by_tp = self.offsets.setdefault(group_id, {})
            for tp, offset in pending.items():
                current = by_tp.get(tp)
                if current is None or current.older_than(offset):
                    by_tp[tp] = offset
            if not by_tp:
                del self.offsets[group_id]

    # -- OffsetCommit ----------------------------------------------------------------------

    def commit(self, req: OffsetCommitRequest, version: int, now_ms: int,
               group: ClassicGroup | None, *, validated: bool = False,
               error: ErrorCode | None = None) -> tuple[OffsetCommitResponse, list[Record]]:
        """Validate and build the records (the caller applies them and creates a simple
        group if needed).  ``group`` is the existing group or None; ``validated``: the caller
        checked the request (a consumer-protocol group) and ``error`` is its verdict."""
        generation = req.generation_id_or_member_epoch
        if validated:
            pass
        elif group is None:
            if generation >= 0:
                error = E.ILLEGAL_GENERATION
        else:
            try:
                validate_offset_commit(group, req.member_id,
                                       req.group_instance_id if version >= 7 else None, generation)
            except GroupError as err:
                error = err.code
        records: list[Record] = []
        expire_ms = None
        if 2 <= version <= 4 and req.retention_time_ms != -1:
            expire_ms = now_ms + req.retention_time_ms
        topics = self._commit_partitions(
            req.group_id, req.topics, error, now_ms, expire_ms, version >= 6, records,
            OffsetCommitResponse.OffsetCommitResponseTopic,
            OffsetCommitResponse.OffsetCommitResponsePartition)
        return OffsetCommitResponse(topics=topics), records

    def _commit_partitions(self, group_id: str, request_topics: Any, error: ErrorCode | None,
                           now_ms: int, expire_ms: int | None, with_leader_epoch: bool,
                           records: list[Record], topic_cls: Any, partition_cls: Any) -> list[Any]:
        """The per-partition part of OffsetCommit and TxnOffsetCommit (the same in Kafka):
        each partition answers ``error`` if the request failed as a whole, else
        OFFSET_METADATA_TOO_LARGE or NONE, and a NONE adds its record to ``records``."""
        topics = []
        for t in request_topics:
            parts = []
            for p in t.partitions:
                code = error
                if code is None:
                    metadata = p.committed_metadata or ""
                    if len(metadata.encode("utf-8")) > self.config.offset_metadata_max_bytes:
                        code = E.OFFSET_METADATA_TOO_LARGE
                    else:
                        code = E.NONE
                        records.append(offset_commit_record(
                            group_id, t.name, p.partition_index, offset=p.committed_offset,
                            leader_epoch=p.committed_leader_epoch if with_leader_epoch else -1,
                            metadata=metadata, commit_timestamp_ms=now_ms,
                            expire_timestamp_ms=expire_ms))
                parts.append(partition_cls(partition_index=p.partition_index, error_code=int(code)))
            topics.append(topic_cls(name=t.name, partitions=parts))
        return topics

    # -- TxnOffsetCommit -------------------------------------------------------------------

    def txn_commit(self, req: TxnOffsetCommitRequest, version: int, now_ms: int,
                   group: ClassicGroup | None, *, validated: bool = False,
                   error: ErrorCode | None = None
                   ) -> tuple[TxnOffsetCommitResponse, list[Record], ErrorCode | None]:
        """Kafka's ``commitTransactionalOffset``: (response, records, group-level error).
        The records go to ``__consumer_offsets`` as a transactional batch of the request's
        producer; a group-level error (unknown group with generation >= 0: ILLEGAL_GENERATION,
        or ``validate_offset_commit``'s) is every partition's error and writes nothing."""
        generation = req.generation_id_or_member_epoch if version >= 3 else -1
        if validated:
            pass
        elif group is None:
            if generation >= 0:
                error = E.ILLEGAL_GENERATION
        else:
            try:
                validate_offset_commit(
                    group, req.member_id if version >= 3 else "",
                    req.group_instance_id if version >= 3 else None, generation,
                    is_transactional=True)
            except GroupError as err:
                error = err.code
        records: list[Record] = []
        topics = self._commit_partitions(
            req.group_id, req.topics, error, now_ms, None, version >= 2, records,
            TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic,
            TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition)
        return TxnOffsetCommitResponse(topics=topics), records, error

    # -- OffsetFetch -----------------------------------------------------------------------

    def fetch(self, group_id: str, topics: list[tuple[str, list[int]]] | None,
              require_stable: bool = False) -> list[FetchedPartition]:
        """One group's committed offsets; ``topics`` None = all of them (sorted).  With
        ``require_stable`` a partition with a pending transactional offset answers
        UNSTABLE_OFFSET_COMMIT with offset -1 (Kafka's ``fetchOffsets``/``fetchAllOffsets``)."""
        by_tp = self.offsets.get(group_id, {})
        unstable = self.txn.pending_partitions(group_id) if require_stable else set()

        def unstable_entry(t: str, p: int) -> FetchedPartition:
            return FetchedPartition(t, p, -1, -1, "", int(E.UNSTABLE_OFFSET_COMMIT))

        if topics is None:
            return [unstable_entry(t, p) if (t, p) in unstable
                    else FetchedPartition(t, p, o.offset, o.leader_epoch, o.metadata)
                    for (t, p), o in sorted(by_tp.items())]
        out = []
        for name, partitions in topics:
            for p in partitions:
                o = by_tp.get((name, p))
                if (name, p) in unstable:
                    out.append(unstable_entry(name, p))
                elif o is None:
                    out.append(FetchedPartition(name, p, -1, -1, ""))
                else:
                    out.append(FetchedPartition(name, p, o.offset, o.leader_epoch, o.metadata))
        return out

    @staticmethod
    def group_topics(fetched: list[FetchedPartition], batched: bool) -> list:
        """Shape fetched partitions as OffsetFetchResponse topics (v8 ``batched`` names)."""
        topic_cls = (OffsetFetchResponse.OffsetFetchResponseTopics if batched
                     else OffsetFetchResponse.OffsetFetchResponseTopic)
        part_cls = (OffsetFetchResponse.OffsetFetchResponsePartitions if batched
                    else OffsetFetchResponse.OffsetFetchResponsePartition)
        topics: dict[str, list] = {}
        for f in fetched:
            topics.setdefault(f.topic, []).append(part_cls(
                partition_index=f.partition, committed_offset=f.offset,
                committed_leader_epoch=f.leader_epoch, metadata=f.metadata,
                error_code=f.error_code))
        return [topic_cls(name=name, partitions=parts) for name, parts in topics.items()]

    # -- OffsetDelete ----------------------------------------------------------------------

    def delete(self, req: OffsetDeleteRequest) -> tuple[OffsetDeleteResponse, list[Record]]:
        group = self.groups.get(req.group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return OffsetDeleteResponse(error_code=int(E.GROUP_ID_NOT_FOUND)), []
        if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE,
                       GroupState.COMPLETING_REBALANCE) and not group.uses_consumer_protocol():
            return OffsetDeleteResponse(error_code=int(E.NON_EMPTY_GROUP)), []
        by_tp = self.offsets.get(req.group_id, {})
        records: list[Record] = []
        topics = []
        for t in req.topics:
            subscribed = group.is_subscribed_to_topic(t.name)
            parts = []
            for p in t.partitions:
                code = E.NONE
                if subscribed:
                    code = E.GROUP_SUBSCRIBED_TO_TOPIC
                elif (t.name, p.partition_index) in by_tp or self.txn.has_pending(
                        req.group_id, (t.name, p.partition_index)):
                    # Kafka: a tombstone also when only a pending transactional offset exists
                    records.append(offset_commit_tombstone(req.group_id, t.name,
                                                           p.partition_index))
                parts.append(OffsetDeleteResponse.OffsetDeleteResponsePartition(
                    partition_index=p.partition_index, error_code=int(code)))
            topics.append(OffsetDeleteResponse.OffsetDeleteResponseTopic(name=t.name,
                                                                         partitions=parts))
        return OffsetDeleteResponse(error_code=0, topics=topics), records

    def delete_all(self, group_id: str) -> list[Record]:
        """Tombstones for every offset of ``group_id`` (DeleteGroups), pending transactional
        ones included (Kafka's ``deleteAllOffsets``)."""
        tps = set(self.offsets.get(group_id, {})) | self.txn.pending_partitions(group_id)
        return [offset_commit_tombstone(group_id, t, p) for (t, p) in sorted(tps)]

    # -- deleted topics --------------------------------------------------------------------

    def deleted_partitions_tombstones(self, partitions: set[TopicPartition]) -> dict[str, list[Record]]:
        """Kafka's ``OffsetMetadataManager.onPartitionsDeleted``: per group, a tombstone for
        each of ``partitions`` (a deleted topic's) that has a committed offset or a pending
        transactional one.  Groups are left alone otherwise (an Empty group left with no
        offset goes with the next expiry pass, as in Kafka)."""
        out: dict[str, list[Record]] = {}
        for group_id in sorted(set(self.offsets) | set(self.txn.open_by_group)):
            tps = (set(self.offsets.get(group_id, {})) | self.txn.pending_partitions(group_id)) & partitions
            if tps:
                out[group_id] = [offset_commit_tombstone(group_id, t, p) for (t, p) in sorted(tps)]
        return out

    # -- expiry ----------------------------------------------------------------------------

    def expire(self, group: ClassicGroup, now_ms: int) -> tuple[list[Record], bool]:
        """Kafka's ``cleanupExpiredOffsets``: tombstones for the expired offsets of
        ``group`` and whether none is left."""
        by_tp = self.offsets.get(group.group_id)
        if not by_tp:
            return [], not self.txn.has_pending(group.group_id)
        # Kafka's offsetExpirationCondition.
        if group.protocol_type is not None:
            if group.is_in(GroupState.EMPTY):
                def base(o: OffsetAndMetadata) -> int:
                    ts = group.current_state_timestamp_ms
                    return o.commit_timestamp_ms if ts is None else ts
            elif group.uses_consumer_protocol() and group.subscribed_topics is not None \
                    and group.is_in(GroupState.STABLE):
                def base(o: OffsetAndMetadata) -> int:
                    return o.commit_timestamp_ms
            else:
                return [], False
        else:
            def base(o: OffsetAndMetadata) -> int:
                return o.commit_timestamp_ms
        retention = self.config.offsets_retention_ms
        records: list[Record] = []
        # Kafka keeps a group with open transactional offsets, and their partitions' offsets
        all_expired = not self.txn.has_pending(group.group_id)
        pending = self.txn.pending_partitions(group.group_id)
        for (topic, partition), o in sorted(by_tp.items()):
            if group.is_subscribed_to_topic(topic) or (topic, partition) in pending:
                all_expired = False
                continue
            if o.expire_timestamp_ms is not None:
                expired = now_ms >= o.expire_timestamp_ms
            else:
                expired = now_ms - base(o) >= retention
            if expired:
                records.append(offset_commit_tombstone(group.group_id, topic, partition))
            else:
                all_expired = False
        return records, all_expired
