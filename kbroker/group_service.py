"""``GroupService``: adapts the pure ``groups.GroupCoordinator`` to the running broker.

Its jobs, and nothing else:
* ``__consumer_offsets``: created on the first FindCoordinator (as Kafka does) with
  ``offsets.topic.num.partitions`` partitions, ``cleanup.policy=compact`` and
  ``segment.bytes=offsets.topic.segment.bytes``; on start-up every existing partition is
  replayed into the coordinator (begin_load / replay / complete_load).
* Appending each call's records, one batch per partition (``partition_for(group)``), before
  any response of that call leaves.  The group id is read from the record key (every
  classic record key is int16 version + group string), so records from ``poll()`` that
  span several groups land in the right partitions.
* Parked JoinGroup/SyncGroup: the coordinator's pending handle resolves an asyncio future.
* Timers: after every coordinator call an event-loop timer is armed for the coordinator's
  next deadline, so a delayed join or a session expiry fires on time (Kafka's purgatory
  fires to the millisecond; a 0 ms initial rebalance delay completes the join at once).
  ``tick()`` (from the broker's background tick) is the fallback when no loop is running.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import TYPE_CHECKING, Any

from groups import GroupConfig, GroupCoordinator, Result
from groups.records import Record
from kbroker.topic_names import GROUP_METADATA_TOPIC
from log.producer_state import AppendOrigin
from wire.record_batch import build_batch, iter_batches

if TYPE_CHECKING:
    from kbroker.broker_state import BrokerState

log = logging.getLogger("kbroker.groups")
_I16 = struct.Struct(">h")


def group_of_key(key: bytes) -> str:
    """Every classic coordinator record key starts with int16 version, then the group id
    as an int16-length string."""
    (n,) = _I16.unpack_from(key, 2)
    return bytes(key[4 : 4 + n]).decode("utf-8")


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
        self._load()

    # ------------------------------------------------------------ the internal topic
    def topic_exists(self) -> bool:
        return GROUP_METADATA_TOPIC in self.state.topics

    def ensure_topic(self) -> None:
        if not self.topic_exists():
            self.state.create_topic(GROUP_METADATA_TOPIC, self.num_partitions, {
                "cleanup.policy": "compact",
                "segment.bytes": str(self.state.config["offsets.topic.segment.bytes"]),
                "compression.type": "producer",
            })

    def _load(self) -> None:
        c = self.coordinator
        c.begin_load()
        count = 0
        if self.topic_exists():
            for index in range(self.state.topics[GROUP_METADATA_TOPIC].partitions):
                partition = self.state.partition(GROUP_METADATA_TOPIC, index)
                if partition is None:
                    continue
                offset = partition.log_start_offset
                while offset < partition.high_watermark:
                    data = partition.read(offset, 1 << 20, True).records
                    if not data:
                        break
                    for batch in iter_batches(data):
                        if batch.is_control:
                            offset = batch.next_offset
                            continue
                        for rec in batch.records():
                            if rec.offset >= offset and rec.key is not None:
                                c.replay(rec.key, rec.value)
                                count += 1
                        offset = batch.next_offset
        c.complete_load()
        if count:
            log.info("loaded %d group coordinator record(s) from %s", count, GROUP_METADATA_TOPIC)

    # ------------------------------------------------------------ results
    def apply(self, result: Result) -> None:
        """Append the records of a coordinator call (before any of its responses leave)."""
        if result.records:
            self.append(result.records)
        self._arm_timer()

    def append(self, records: list[Record]) -> None:
        self.ensure_topic()
        now = self.state.clock.milliseconds()
        by_partition: dict[int, list[tuple[bytes, bytes | None, list[Any], int]]] = {}
        for r in records:
            p = self.coordinator.partition_for(group_of_key(r.key))
            by_partition.setdefault(p, []).append((bytes(r.key), None if r.value is None else bytes(r.value), [], now))
        for p, recs in by_partition.items():
            partition = self.state.partition(GROUP_METADATA_TOPIC, p)
            assert partition is not None
            batch = bytearray(build_batch(recs))
            partition.log.append_as_leader(batch, partition.leader_epoch, origin=AppendOrigin.COORDINATOR)

    def answer(self, result: Result) -> Any:
        """The handler's return value: the response now, or an awaitable of it."""
        self.apply(result)
        if result.pending is None:
            return result.response
        pending = result.pending
        if pending.done():
            return pending.response
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(response: Any) -> None:
            if not fut.done():
                fut.set_result(response)

        pending.add_done_callback(done)
        return fut

    def tick(self) -> None:
        deadline = self.coordinator.next_deadline_ms()
        if deadline is not None and deadline <= self.state.clock.milliseconds():
            self.apply(self.coordinator.poll())

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
