"""One committed (or transactionally pending) offset of a group's partition.

A leaf module: both ``groups/offsets.py`` (committed offsets) and ``groups/txn_offsets.py``
(offsets pending until their transaction's marker) hold these, and neither may import the
other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wire.messages import OffsetCommitValue

__all__ = ["OffsetAndMetadata"]


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int  # -1: none
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None
    # offset of the record in __consumer_offsets (-1: unknown); orders a transactional
    # commit against a regular one when its COMMIT marker arrives.  Not part of equality:
    # where a record sits is not what was committed.
    record_offset: int = field(default=-1, compare=False)

    @classmethod
    def from_value(cls, v: OffsetCommitValue, record_offset: int = -1) -> OffsetAndMetadata:
        return cls(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                   None if v.expire_timestamp == -1 else v.expire_timestamp, record_offset)

    def older_than(self, other: OffsetAndMetadata) -> bool:
        """Kafka's rule when a COMMIT marker arrives: the pending offset wins unless the
        committed one's record is later (unknown offsets never lose)."""
        if self.record_offset < 0 or other.record_offset < 0:
            return True
        return self.record_offset < other.record_offset
