"""Transactional offset commits held until their transaction completes.

A port of the transactional half of Kafka's ``OffsetMetadataManager`` (group-coordinator,
3.7+; the Scala ``GroupMetadata.pendingTransactionalOffsetCommits`` before it):

* A TxnOffsetCommit's records are appended to ``__consumer_offsets`` as a *transactional*
  batch of the request's producer (id, epoch, transactional bit).  Replaying such a record
  (live, once appended, or when the partition loads) puts the offset in ``pending``
  under its producer id; it is not a committed offset yet.
* The transaction's marker (a control batch in the same ``__consumer_offsets`` partition)
  completes it: COMMIT makes each pending offset the group's committed offset *unless the
  committed one was written later* (a higher record offset: "we always keep the most recent
  committed offset when we have a mix of transactional and regular offset commits"); ABORT
  drops them.  A marker only completes the groups of its own partition.
* While a partition has a pending offset, OffsetFetch with ``require_stable`` answers
  UNSTABLE_OFFSET_COMMIT for it; expiry leaves it alone, a group with one is not deleted
  as empty, and an offset tombstone drops the pending offsets of that partition.

State: ``pending[producer_id][group_id][(topic, partition)] = OffsetAndMetadata`` and
``open_by_group[group_id] = {producer ids}`` (Kafka's ``openTransactionsByGroup``).
Record offsets (``OffsetAndMetadata.record_offset``) order a transactional commit against a
regular one; -1 (unknown: a record not appended through the adapter) never loses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from groups.offset_and_metadata import OffsetAndMetadata

__all__ = ["PendingTxnOffsets"]

TopicPartition = tuple[str, int]


class PendingTxnOffsets:
    def __init__(self) -> None:
        self.pending: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = {}
        self.open_by_group: dict[str, set[int]] = {}

    def add(self, producer_id: int, group_id: str, tp: TopicPartition,
            offset: OffsetAndMetadata) -> None:
        """Replay of a transactional offset record: pending until the marker."""
        self.pending.setdefault(producer_id, {}).setdefault(group_id, {})[tp] = offset
        self.open_by_group.setdefault(group_id, set()).add(producer_id)

    def has_pending(self, group_id: str, tp: TopicPartition | None = None) -> bool:
        """Kafka's ``hasPendingTransactionalOffsets``: for one partition, or any (None)."""
        producers = self.open_by_group.get(group_id)
        if not producers:
            return False
        if tp is None:
            return True
        return any(tp in self.pending.get(pid, {}).get(group_id, {}) for pid in producers)

    def pending_partitions(self, group_id: str) -> set[TopicPartition]:
        out: set[TopicPartition] = set()
        for pid in self.open_by_group.get(group_id, ()):
            out.update(self.pending.get(pid, {}).get(group_id, {}))
        return out

    def complete(self, producer_id: int, group_ids: set[str] | None
                 ) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """The marker of ``producer_id`` for the groups in ``group_ids`` (None: all): removes
        and returns their pending offsets (the caller commits them or drops them)."""
        by_group = self.pending.get(producer_id)
        if not by_group:
            return {}
        done = {g: offs for g, offs in by_group.items() if group_ids is None or g in group_ids}
        for group_id in done:
            del by_group[group_id]
            producers = self.open_by_group.get(group_id)
            if producers is not None:
                producers.discard(producer_id)
                if not producers:
                    del self.open_by_group[group_id]
        if not by_group:
            del self.pending[producer_id]
        return done

    def drop_partition(self, group_id: str, tp: TopicPartition) -> None:
        """An offset tombstone: the pending offsets of that partition go too (Kafka)."""
        for pid in list(self.open_by_group.get(group_id, ())):
            offs = self.pending.get(pid, {}).get(group_id)
            if offs is None:
                continue
            offs.pop(tp, None)
            if not offs:
                self.complete(pid, {group_id})

    def drop_group(self, group_id: str) -> None:
        """The group is gone (deleted or unloaded)."""
        for pid in list(self.open_by_group.get(group_id, ())):
            self.complete(pid, {group_id})

    def groups_of(self, producer_id: int) -> set[str]:
        return set(self.pending.get(producer_id, {}))
