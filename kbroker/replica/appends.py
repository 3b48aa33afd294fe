"""The one door for writes: ``append_records``, as Kafka's ``ReplicaManager.appendRecords``.

Produce, WriteTxnMarkers and the coordinators' internal topics (kbroker/coordinators/
internal_topic.py) append through it, by way of the ``Replicas`` port
(``LocalReplicas.append_records``, ``ReplicaManager.append_records``).  For each entry, in
the order given (a connection's requests take effect in order, so a request's appends do
too):

1. the partition must exist (UNKNOWN_TOPIC_OR_PARTITION: not in this broker's metadata);
2. an internal topic refuses a client's records (INVALID_TOPIC_EXCEPTION; a coordinator's
   own appends are allowed), as Kafka's ``appendToLocalLog``;
3. only the leader appends (NOT_LEADER_OR_FOLLOWER, Kafka's ``getPartitionOrException``);
4. the caller's ``check`` runs on the partition (the Produce handler's KIP-890
   verification of a transactional batch);
5. ``Partition.append_records_as_leader``: acks=all is refused while the ISR is below
   min.insync.replicas, then the batch is validated and appended; a ``LogError`` is the
   entry's refusal (its code, message and record errors, which Produce v8+ returns).

Everything above happens before ``append_records`` returns.  What may still be waited for is
the replication of acks=all appends on a replicated broker: ``Appends.replicated`` (Kafka's
DelayedProduce, kbroker/replica/delayed_produce.py); an entry whose records did not reach the
ISR in time keeps its offsets and gets the purgatory's error.  A single node has nothing to
wait for: its high watermark moves with the append.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from log.errors import LogError
from log.producer_state import AppendOrigin
from wire.error_codes import ErrorCode
from wire.topic_names import is_internal

if TYPE_CHECKING:
    from kbroker.replica.partition import Partition
    from log.types import LogAppendInfo

__all__ = ["AppendCheck", "Appends", "PartitionAppend", "append_records"]

TopicPartition = tuple[str, int]
# a caller's check of one entry before it is appended: NONE, or the code to answer
AppendCheck = Callable[[TopicPartition, "Partition", memoryview], ErrorCode]
# the acks=all wait: per partition the offset its high watermark must reach, the timeout in
# ms -> per partition NONE or the purgatory's error
AckWait = Callable[[dict[TopicPartition, int], int], Awaitable[dict[TopicPartition, ErrorCode]]]


@dataclass(slots=True)
class PartitionAppend:
    """One entry's outcome: NONE and the append's ``info``, or the error and, when the log
    refused the batch, the ``LogError`` itself (its message and record errors)."""

    error: ErrorCode = ErrorCode.NONE
    info: LogAppendInfo | None = None
    refusal: LogError | None = None


class Appends:
    """The outcome of one ``append_records`` call: ``results`` in entry order, already
    final unless ``waits`` (acks=all on a replicated broker), then final once
    ``replicated`` returns."""

    __slots__ = ("_tps", "_wait", "required", "results")

    def __init__(self, tps: list[TopicPartition], results: list[PartitionAppend],
                 required: dict[TopicPartition, int], wait: AckWait | None) -> None:
        self._tps = tps
        self.results = results
        self.required = required   # acks=all, replicated: partition -> offset the HW must reach
        self._wait = wait

    @property
    def waits(self) -> bool:
        return bool(self.required) and self._wait is not None

    async def replicated(self, timeout_ms: int) -> list[PartitionAppend]:
        """The results once every acks=all append is in the ISR or ``timeout_ms`` passed."""
        if self.waits:
            assert self._wait is not None
            codes = await self._wait(self.required, timeout_ms)
            for tp, result in zip(self._tps, self.results, strict=True):
                code = codes.get(tp, ErrorCode.NONE)
                if result.error == ErrorCode.NONE and code != ErrorCode.NONE:
                    result.error = code
        return self.results


def append_records(entries: Sequence[tuple[TopicPartition, memoryview]], required_acks: int,
                   origin: AppendOrigin, *,
                   partition_of: Callable[[str, int], Partition | None],
                   leader_error: Callable[[str, int], ErrorCode | None],
                   wait: AckWait | None, check: AppendCheck | None = None) -> Appends:
    """Append each entry's records to its partition as leader (the module docstring's
    steps).  ``partition_of`` / ``leader_error`` / ``wait``: the ``Replicas``
    implementation's (``wait`` None: nothing is ever waited for)."""
    tps: list[TopicPartition] = []
    results: list[PartitionAppend] = []
    required: dict[TopicPartition, int] = {}
    client = origin is AppendOrigin.CLIENT
    for tp, records in entries:
        tps.append(tp)
        result = PartitionAppend()
        results.append(result)
        not_leader = leader_error(*tp)
        partition = partition_of(*tp)
        if not_leader is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or (not_leader is None and partition is None):
            result.error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        if client and is_internal(tp[0]):
            result.error = ErrorCode.INVALID_TOPIC_EXCEPTION
            continue
        if not_leader is not None or partition is None:
            result.error = not_leader or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        if check is not None:
            code = check(tp, partition, records)
            if code:
                result.error = code
                continue
        try:
            info = partition.append_records_as_leader(records, required_acks, origin=origin)
        except LogError as e:
            result.error, result.refusal = e.error, e
            continue
        result.info = info
        if required_acks == -1 and wait is not None:
            required[tp] = max(required.get(tp, 0), info.last_offset + 1)
    return Appends(tps, results, required, wait)
