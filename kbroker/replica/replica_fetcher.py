"""Follower side of replication: fetching from leaders (Kafka's ``ReplicaFetcherManager``,
``AbstractFetcherThread`` and ``ReplicaFetcherThread``).

One :class:`ReplicaFetcher` task per (source broker, fetcher id); a partition goes to
fetcher ``abs(31 * topic.hashCode() + partition) % num.replica.fetchers`` as Kafka's
``getFetcherId`` places it.  Each fetcher keeps one connection to its leader and a KIP-227
fetch session with it (kbroker/replica/fetch_session_client.py: full first, then incremental
requests naming only partitions whose parameters changed), and sends Fetch
v12 with ``replica_id`` = this broker, per partition ``current_leader_epoch`` (the epoch of
the LeaderAndIsr that made us follow), ``fetch_offset`` = our LEO, ``last_fetched_epoch`` =
the latest epoch of our leader epoch cache, our ``log_start_offset``, and Kafka's limits
(``replica.fetch.wait.max.ms``, ``replica.fetch.min.bytes``, ``replica.fetch.max.bytes`` per
partition, ``replica.fetch.response.max.bytes`` per response).

On an answer, per partition (dropped when the partition was removed, re-added at another
epoch, or its LEO changed since the request: Kafka's ``fetchOffset`` check):

* **DivergingEpoch** (the leader's answer to ``last_fetched_epoch``, KIP-595/KAFKA-10554):
  truncate as Kafka's ``getOffsetTruncationState`` decides — to min(our end offset for that
  epoch, the leader's end offset) when we know the epoch, else to our end offset of the
  largest epoch below it (the next fetch names an older epoch and the leader checks again).
  ``Log.truncate_to`` trims the epoch cache and producer state too.  Since our leaders always
  answer DivergingEpoch (v12), the OffsetForLeaderEpoch truncation path of older Kafka is not
  used.  A log with no epochs at all first truncates to its HW (``initialFetchOffset``).
* **Records**: ``append_records_as_follower`` keeps the leader's batches as they are (offsets, leader
  epochs, producer ids and sequences: deduplication survives a failover); then HW =
  min(leader HW, our LEO) and the log start offset follows the leader's (never past our HW).
* **OFFSET_OUT_OF_RANGE** (``handleOutOfRangeError`` / ``fetchOffsetAndTruncate``): ask the
  leader's LEO (ListOffsets latest, as a replica); if it is below ours, truncate to it;
  otherwise ask its log start offset, and if that is above our LEO start over there
  (``truncate_fully_and_start_at``).
* **NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION**, other errors,
  and a failed connection: the partition waits ``replica.fetch.backoff.ms`` and is retried.
  **FENCED_LEADER_EPOCH**: our LeaderAndIsr is older than the leader's; the partition stops
  until a LeaderAndIsr re-adds it (Kafka's ``onPartitionFenced``).

All of this runs on the event loop like a produce append does (same ``Log`` calls; a
truncation's segment files are deleted asynchronously, fsyncs happen on the background
thread).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbroker.client import AsyncConnection
from kbroker.interbroker import inter_broker_client  # TLS / SASL of the inter-broker listener
from kbroker.replica.fetch_session_client import FetchSessionHandler
from log.errors import LogError
from log.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from wire.error_codes import ErrorCode
from wire.java_hash import java_string_hash
from wire.messages import FetchRequest, ListOffsetsRequest

if TYPE_CHECKING:
    from kbroker.replica.broker_state import BrokerState
    from kbroker.replica.partition import Partition

__all__ = ["ReplicaFetcherManager", "fetcher_id"]

log = logging.getLogger("kbroker.replica_fetcher")

FETCH_VERSION = 12
LIST_OFFSETS_VERSION = 4
TopicPartition = tuple[str, int]


def fetcher_id(topic: str, partition: int, num_fetchers: int) -> int:
    """Kafka's ``AbstractFetcherManager.getFetcherId``."""
    h = (31 * java_string_hash(topic) + partition) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    return (h & 0x7FFFFFFF if h != -(1 << 31) else 0) % num_fetchers


@dataclass(slots=True)
class FetchSettings:
    broker_id: int
    wait_max_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 1 << 20
    response_max_bytes: int = 10 << 20
    backoff_ms: int = 1000
    socket_timeout_ms: int = 30000
    num_fetchers: int = 1

    @classmethod
    def from_config(cls, broker_id: int, config: Any) -> FetchSettings:
        return cls(broker_id, config["replica.fetch.wait.max.ms"], config["replica.fetch.min.bytes"],
                   config["replica.fetch.max.bytes"], config["replica.fetch.response.max.bytes"],
                   config["replica.fetch.backoff.ms"], config["replica.socket.timeout.ms"],
                   config["num.replica.fetchers"])


@dataclass(slots=True)
class _PartitionFetch:
    leader_epoch: int
    delayed_until: float = 0.0   # loop time
    fenced: bool = False


class ReplicaFetcher:
    """One fetch loop against one leader broker."""

    def __init__(self, state: BrokerState, settings: FetchSettings, leader_id: int,
                 endpoint: tuple[str, int]) -> None:
        self.state = state
        self.settings = settings
        self.leader_id = leader_id
        self.endpoint = endpoint
        self.partitions: dict[TopicPartition, _PartitionFetch] = {}
        self._changed = asyncio.Event()
        self._closing = False
        self._conn: AsyncConnection | None = None
        self.session = FetchSessionHandler()   # KIP-227 with the leader (kbroker/replica/fetch_session_client.py)
        self._task = asyncio.ensure_future(self._run())
        self.fetches = 0  # answers processed (tests and logs)

    # -- membership ----------------------------------------------------------------------

    def add(self, tp: TopicPartition, leader_epoch: int) -> None:
        current = self.partitions.get(tp)
        if current is not None and current.leader_epoch == leader_epoch and not current.fenced:
            return
        partition = self.state.partition(*tp)
        if partition is not None and partition.latest_epoch is None \
                and partition.log_end_offset > partition.high_watermark:
            # Kafka's initialFetchOffset: no epochs to compare, so start from the HW
            partition.truncate_to(partition.high_watermark)
        self.partitions[tp] = _PartitionFetch(leader_epoch)
        self._changed.set()

    def remove(self, tp: TopicPartition) -> None:
        if self.partitions.pop(tp, None) is not None:
            self._changed.set()

    def set_endpoint(self, endpoint: tuple[str, int]) -> None:
        if endpoint != self.endpoint:
            self.endpoint = endpoint
            self._drop_connection()

    async def close(self) -> None:
        self._closing = True
        self._changed.set()
        # Python 3.11's asyncio.wait_for can swallow a cancellation that races with its inner
        # future finishing (gh-86296, fixed in 3.12): cancel until the task has really ended,
        # and the loop stops on its own at its next turn.
        while not self._task.done():
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=1.0)
        if not self._task.cancelled() and self._task.exception() is not None:
            log.debug("replica fetcher for broker %d ended with %r", self.leader_id, self._task.exception())
        self._drop_connection()

    # -- the loop ------------------------------------------------------------------------

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._closing:
            now = loop.time()
            ready = {tp: pf for tp, pf in self.partitions.items() if not pf.fenced and pf.delayed_until <= now}
            if not ready:
                waits = [pf.delayed_until - now for pf in self.partitions.values() if not pf.fenced]
                self._changed.clear()
                try:
                    await asyncio.wait_for(self._changed.wait(), min(waits) if waits else None)
                except TimeoutError:
                    pass
                continue
            try:
                await self._fetch_once(ready)
            except asyncio.CancelledError:
                raise
            except OSError as e:   # refused, closed, reset, timed out (TimeoutError), SASL refused
                log.info("fetch from broker %d (%s:%d) failed (%r); backing off %d ms", self.leader_id,
                         *self.endpoint, e, self.settings.backoff_ms)
                self._drop_connection()
                self._delay(ready, loop.time())
            except Exception:
                log.exception("replica fetcher for broker %d failed; backing off", self.leader_id)
                self._drop_connection()
                self._delay(ready, loop.time())

    def _delay(self, tps: Any, now: float) -> None:
        for tp in tps:
            pf = self.partitions.get(tp)
            if pf is not None:
                pf.delayed_until = now + self.settings.backoff_ms / 1000.0

    def _build(self, ready: dict[TopicPartition, _PartitionFetch]) -> tuple[FetchRequest, dict, dict, bool]:
        """(request, tp -> (leader epoch, fetch offset) of every partition fetched, tp ->
        FetchPartition of the same, whether the request is full).  Incremental requests
        (KIP-227) name only what changed since the last one."""
        s = self.settings
        wanted: dict[TopicPartition, FetchRequest.FetchPartition] = {}
        sent: dict[TopicPartition, tuple[int, int]] = {}
        for tp, pf in ready.items():
            partition = self.state.partition(*tp)
            if partition is None:
                continue
            latest = partition.latest_epoch
            offset = partition.log_end_offset
            sent[tp] = (pf.leader_epoch, offset)
            wanted[tp] = FetchRequest.FetchPartition(
                partition=tp[1], current_leader_epoch=pf.leader_epoch, fetch_offset=offset,
                last_fetched_epoch=-1 if latest is None else latest, log_start_offset=partition.log_start_offset,
                partition_max_bytes=s.max_bytes)
        session_id, epoch, named, forget = self.session.build(wanted)
        topics: dict[str, list[FetchRequest.FetchPartition]] = {}
        for tp, fp in named.items():
            topics.setdefault(tp[0], []).append(fp)
        forgotten: dict[str, list[int]] = {}
        for topic, index in forget:
            forgotten.setdefault(topic, []).append(index)
        req = FetchRequest(replica_id=s.broker_id, max_wait_ms=s.wait_max_ms, min_bytes=s.min_bytes,
                           max_bytes=s.response_max_bytes, isolation_level=0, session_id=session_id,
                           session_epoch=epoch,
                           topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
                           forgotten_topics_data=[FetchRequest.ForgottenTopic(topic=t, partitions=ps)
                                                  for t, ps in forgotten.items()], rack_id="")
        return req, sent, wanted, epoch == 0

    async def _fetch_once(self, ready: dict[TopicPartition, _PartitionFetch]) -> None:
        req, sent, wanted, full = self._build(ready)
        if not sent:
            for tp in ready:
                self.partitions.pop(tp, None)
            return
        resp = await self._send(req, FETCH_VERSION,
                                (self.settings.socket_timeout_ms + self.settings.wait_max_ms) / 1000.0)
        self.fetches += 1
        if not self.session.answered(wanted, full, resp.error_code, resp.session_id):
            log.info("fetch from broker %d answered %s", self.leader_id, ErrorCode(resp.error_code).name)
            self._delay(sent, asyncio.get_running_loop().time())
            return
        for topic in resp.responses:
            for pd in topic.partitions:
                tp = (topic.topic, pd.partition_index)
                if tp in sent:
                    await self._process(tp, pd, *sent[tp])

    async def _process(self, tp: TopicPartition, pd: Any, epoch: int, fetch_offset: int) -> None:
        pf = self.partitions.get(tp)
        partition = self.state.partition(*tp)
        if pf is None or partition is None or pf.leader_epoch != epoch \
                or partition.log_end_offset != fetch_offset:
            return  # the partition moved on since the request: drop this answer
        error = pd.error_code
        if error == ErrorCode.NONE:
            div = pd.diverging_epoch
            if div is not None and (div.epoch >= 0 or div.end_offset >= 0):
                self._truncate_to_diverging(tp, partition, div.epoch, div.end_offset)
                return
            try:
                if pd.records:
                    partition.append_records_as_follower(pd.records)
                # wakes consumers parked at the old HW (reading from this follower, KIP-392)
                partition.update_offsets_from_leader(pd.high_watermark, pd.log_start_offset)
            except LogError as e:
                log.warning("appending the leader's data to %s-%d failed: %s %s", *tp, e.error.name, e)
                self._delay([tp], asyncio.get_running_loop().time())
            return
        if error == ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._handle_out_of_range(tp, partition)
            return
        if error == ErrorCode.FENCED_LEADER_EPOCH:
            log.info("%s-%d: leader %d fenced our epoch %d; waiting for a LeaderAndIsr", *tp, self.leader_id, epoch)
            pf.fenced = True
            return
        log.info("%s-%d: leader %d answered %s; retrying in %d ms", *tp, self.leader_id,
                 ErrorCode(error).name, self.settings.backoff_ms)
        self._delay([tp], asyncio.get_running_loop().time())

    def _truncate_to_diverging(self, tp: TopicPartition, partition: Partition, leader_epoch: int,
                               leader_end: int) -> None:
        """Kafka's ``getOffsetTruncationState`` for a DivergingEpoch."""
        leo = partition.log_end_offset
        ours = partition.end_offset_for_epoch(leader_epoch) if leader_epoch >= 0 else None
        if ours is None:
            target = min(leader_end, leo)
        elif ours[0] != leader_epoch:
            target = min(ours[1], leo)
        else:
            target = min(ours[1], leader_end, leo)
        target = max(target, 0)
        log.info("%s-%d: truncating from %d to %d (leader %d diverges at epoch %d, end offset %d)",
                 *tp, leo, target, self.leader_id, leader_epoch, leader_end)
        latest = partition.latest_epoch
        partition.truncate_to(target)
        if partition.log_end_offset == leo and partition.latest_epoch == latest:
            # nothing changed, so the next fetch would get the same answer: do not spin on it
            log.warning("%s-%d: DivergingEpoch (%d, %d) from leader %d changed nothing; retrying in %d ms",
                        *tp, leader_epoch, leader_end, self.leader_id, self.settings.backoff_ms)
            self._delay([tp], asyncio.get_running_loop().time())

    async def _handle_out_of_range(self, tp: TopicPartition, partition: Partition) -> None:
        leader_end = await self._leader_offset(tp, LATEST_TIMESTAMP)
        if leader_end is None:
            self._delay([tp], asyncio.get_running_loop().time())
            return
        leo = partition.log_end_offset
        if leader_end < leo:
            log.warning("%s-%d: our LEO %d is above leader %d's %d; truncating to it", *tp, leo,
                        self.leader_id, leader_end)
            partition.truncate_to(leader_end)
            return
        leader_start = await self._leader_offset(tp, EARLIEST_TIMESTAMP)
        if leader_start is None:
            self._delay([tp], asyncio.get_running_loop().time())
            return
        if leader_start > partition.log_end_offset:
            log.info("%s-%d: leader %d starts at %d, past our LEO %d; starting over there", *tp,
                     self.leader_id, leader_start, partition.log_end_offset)
            partition.truncate_fully_and_start_at(leader_start)
            return
        self._delay([tp], asyncio.get_running_loop().time())

    async def _leader_offset(self, tp: TopicPartition, timestamp: int) -> int | None:
        pf = self.partitions.get(tp)
        if pf is None:
            return None
        req = ListOffsetsRequest(replica_id=self.settings.broker_id, isolation_level=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=tp[0], partitions=[ListOffsetsRequest.ListOffsetsPartition(
                partition_index=tp[1], current_leader_epoch=pf.leader_epoch, timestamp=timestamp)])])
        resp = await self._send(req, LIST_OFFSETS_VERSION, self.settings.socket_timeout_ms / 1000.0)
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code == ErrorCode.NONE:
                    return p.offset
                log.info("%s-%d: ListOffsets from leader %d answered %s", *tp, self.leader_id,
                         ErrorCode(p.error_code).name)
        return None

    # -- the connection ------------------------------------------------------------------

    async def _send(self, message: Any, version: int, timeout_s: float) -> Any:
        async def send() -> Any:
            if self._conn is None:
                self._conn = await inter_broker_client.open_connection(
                    *self.endpoint, f"broker-{self.settings.broker_id}-fetcher")
            return await self._conn.call(message, version)
        try:
            return await asyncio.wait_for(send(), timeout_s)
        except BaseException:
            self._drop_connection()
            raise

    def _drop_connection(self) -> None:
        self.session.reset()   # a request may be lost with it: start the session over
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class ReplicaFetcherManager:
    """The fetchers of this broker, created on demand, closed when they have no partition."""

    def __init__(self, state: BrokerState, settings: FetchSettings) -> None:
        self.state = state
        self.settings = settings
        self.fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._owner: dict[TopicPartition, tuple[int, int]] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self.closed = False   # close() ran: no fetcher is made any more

    def add_partition(self, tp: TopicPartition, leader_id: int, endpoint: tuple[str, int], leader_epoch: int) -> None:
        if self.closed:
            # a LeaderAndIsr answered while the broker shuts down (its listeners still
            # answer during the log flush): no fetcher task starts that nothing would end
            log.debug("not fetching %s-%d: the replica fetchers are closed", *tp)
            return
        key = (leader_id, fetcher_id(tp[0], tp[1], self.settings.num_fetchers))
        old = self._owner.get(tp)
        if old is not None and old != key:
            self.remove_partitions([tp])
        fetcher = self.fetchers.get(key)
        if fetcher is None:
            fetcher = self.fetchers[key] = ReplicaFetcher(self.state, self.settings, leader_id, endpoint)
        else:
            fetcher.set_endpoint(endpoint)
        fetcher.add(tp, leader_epoch)
        self._owner[tp] = key

    def remove_partitions(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            key = self._owner.pop(tp, None)
            if key is None:
                continue
            fetcher = self.fetchers.get(key)
            if fetcher is None:
                continue
            fetcher.remove(tp)
            if not fetcher.partitions:
                del self.fetchers[key]
                task = asyncio.ensure_future(fetcher.close())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

    def leader_of(self, tp: TopicPartition) -> int | None:
        key = self._owner.get(tp)
        return None if key is None else key[0]

    async def close(self) -> None:
        """Every fetcher ends (those closing already too) before this returns."""
        self.closed = True
        fetchers = list(self.fetchers.values())
        self.fetchers.clear()
        self._owner.clear()
        for f in fetchers:
            await f.close()
        if self._closing:   # fetcher.close() ends its fetcher whatever happens: wait for it
            await asyncio.wait(list(self._closing))
