"""``Partition``: the broker's view of one topic partition it leads (Kafka's Partition).

The only place in kbroker/ that calls into a ``log.log.Log``.  Single node: this broker
leads every partition, at the latest epoch of the log's leader epoch cache
(``leader-epoch-checkpoint``), or at epoch 0 when the cache is empty: then, as Kafka's
makeLeader does, epoch 0 is assigned (at the log start offset: every batch kbroker wrote
carries partitionLeaderEpoch 0; for a new partition that is offset 0).  Appends stamp the
epoch into each batch.  The high watermark follows the log end offset
(the Log does that when opened with ``high_watermark_follows_log_end``).  The last
stable offset equals the high watermark until transactions exist.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from log.config import LogConfig
from log.errors import OffsetOutOfRangeError, PolicyViolationError
from log.log import FetchIsolation, Log
from log.types import LogAppendInfo

if TYPE_CHECKING:
    from kbroker.fetch_waiters import FetchWaiters

LEADER_EPOCH = 0


@dataclass(slots=True)
class ReadResult:
    records: bytes               # whole stored batches, as stored (never re-encoded)
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int


class Partition:
    __slots__ = ("topic", "index", "log", "waiters", "leader_epoch")

    def __init__(self, topic: str, index: int, log: Log, waiters: FetchWaiters):
        self.topic = topic
        self.index = index
        self.log = log
        self.waiters = waiters
        latest = log.latest_epoch
        if latest is None:
            log.maybe_assign_epoch_start_offset(LEADER_EPOCH, log.log_start_offset)
            latest = LEADER_EPOCH
        self.leader_epoch = latest

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int] | None:
        """OffsetForLeaderEpoch: (epoch, end offset) from the leader epoch cache, or None."""
        return self.log.end_offset_for_epoch(leader_epoch)

    def update_config(self, config: LogConfig) -> None:
        """A topic or broker config change: takes effect on the next append, roll or
        retention pass."""
        self.log.update_config(config)

    @property
    def size_in_bytes(self) -> int:
        return self.log.size()

    @property
    def log_dir(self) -> str:
        """The log dir holding this partition's directory."""
        return os.path.dirname(os.path.abspath(self.log.dir))

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords (Kafka's Partition.deleteRecordsOnLeader): move the log start
        offset to ``offset`` (-1 = the high watermark); returns the new low watermark.
        POLICY_VIOLATION without cleanup.policy=delete; OFFSET_OUT_OF_RANGE below 0 or above
        the high watermark.  Segments wholly below are removed by the next retention pass."""
        if not self.log.config.delete:
            raise PolicyViolationError(f"Records of partition {self.topic}-{self.index} can not be "
                                       "deleted due to the configured policy")
        target = self.log.high_watermark if offset == -1 else offset
        if target < 0:
            raise OffsetOutOfRangeError(f"The offset {offset} for partition {self.topic}-{self.index} is not valid")
        self.log.maybe_increment_log_start_offset(target, "ClientRecordDeletion")
        return self.log.log_start_offset

    def append_records_as_leader(self, records: memoryview) -> LogAppendInfo:
        """Validate, assign offsets in place and append; wakes parked fetches.
        Raises log.errors.LogError subclasses (each names the Kafka error to answer)."""
        info = self.log.append_as_leader(records, self.leader_epoch)
        if not info.duplicate:
            self.waiters.notify((self.topic, self.index))
        return info

    def read(self, fetch_offset: int, max_bytes: int, min_one_message: bool,
             read_committed: bool = False) -> ReadResult:
        """Whole batches from the one containing ``fetch_offset`` up to the high watermark.
        Raises log.errors.OffsetOutOfRangeError below the log start or above the HW."""
        hw = self.log.high_watermark
        if fetch_offset > hw:
            raise OffsetOutOfRangeError(
                f"Received request for offset {fetch_offset} for partition {self.topic}-{self.index}, "
                f"but the high watermark is {hw}")
        isolation = FetchIsolation.TXN_COMMITTED if read_committed else FetchIsolation.HIGH_WATERMARK
        if fetch_offset == hw:
            data = b""
        else:
            info = self.log.read(fetch_offset, max_bytes, isolation, min_one_message)
            data = info.records.read()
        return ReadResult(data, hw, hw, self.log.log_start_offset)
