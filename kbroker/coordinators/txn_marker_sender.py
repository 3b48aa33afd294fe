"""Sends the COMMIT/ABORT markers of completing transactions (Kafka's
``TransactionMarkerChannelManager``).

The coordinator hands over :class:`txn.MarkerJob` s; each round the sender groups every
job's unwritten partitions by the partition's current leader and sends one
WriteTxnMarkers request per broker with all the markers for it (Kafka batches per
destination broker the same way).  The leader is this broker on a single node (always)
and for partitions it leads in cluster mode: then the broker side, ``local_writer``
(``kbroker.handlers.write_txn_markers.write_txn_markers`` over the broker's ports, handed
over by kbroker/app/wiring.py), is called directly, with no connection; other leaders get the
request over an inter-broker link (kbroker/interbroker/broker_channel.py).

Per partition, as Kafka's ``TransactionMarkerRequestCompletionHandler``: NONE is written;
a topic that no longer exists counts as written (Kafka drops deleted partitions from the
transaction); NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION (leader not known yet),
NOT_ENOUGH_REPLICAS*, REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, a missing leader or a
failed connection are retried after ``RETRY_BACKOFF_S`` until written; a job whose
coordinator lost the transaction (``job_is_current`` false: unloaded, or fenced by
TRANSACTION_COORDINATOR_FENCED / INVALID_PRODUCER_EPOCH from the leader) is dropped.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbroker.runtime.tasks import cancel_and_wait, task_name
from txn import MarkerJob, TransactionCoordinator
from wire.error_codes import ErrorCode
from wire.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse

if TYPE_CHECKING:
    from kbroker.metadata.metadata_cache import MetadataCache
    from kbroker.replica.broker_state import BrokerState
    from kbroker.replica.replica_manager import ReplicaManager

log = logging.getLogger("kbroker.txn_markers")

RETRY_BACKOFF_S = 0.1
REQUEST_TIMEOUT_S = 30.0
WRITE_TXN_MARKERS_VERSION = 1
_DONE_WHEN_FENCED = (ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH)
# a local call of the broker side: request -> response (or an awaitable of it)
LocalWriter = Callable[[WriteTxnMarkersRequest], Any]


@dataclass(frozen=True, slots=True)
class ClusterLinks:
    """What the transaction coordinator needs of a ZooKeeper cluster (set by
    kbroker/zk/cluster_runtime.py ``attach``; None on a single node): who leads each partition
    (the metadata cache), whether this broker leads one now (the replica manager), and the
    listener brokers talk to each other on (``inter.broker.listener.name``)."""
    cache: MetadataCache
    replicas: ReplicaManager
    inter_broker_listener: str


class TxnMarkerSender:
    def __init__(self, state: BrokerState, coordinator: TransactionCoordinator,
                 local_writer: LocalWriter | None = None) -> None:
        self.state = state
        self.coordinator = coordinator
        # this broker's WriteTxnMarkers side; until it is set (kbroker/app/wiring.py) local
        # markers wait, logged once
        self.local_writer = local_writer
        self.jobs: list[MarkerJob] = []
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._links: Any = None  # cluster mode: a BrokerChannel of our own, made on first use
        self._warned = False
        self._stopped = False  # stop() ran: no task and no link is made any more
        self.cluster: ClusterLinks | None = None   # cluster mode only

    def add(self, job: MarkerJob) -> None:
        self.jobs.append(job)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # loaded off the loop (start-up): start() picks the jobs up
            return
        self._ensure_running(loop)

    def start(self) -> None:
        """On the loop: send what the load queued."""
        if self.jobs:
            self._ensure_running(asyncio.get_running_loop())

    def _ensure_running(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._stopped:   # a transaction ended while the logs flush: its markers wait for
            return          # the next coordinator, as those of an unclean stop would
        if self._wake is None:
            self._wake = asyncio.Event()
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run())

    async def _run(self) -> None:
        assert self._wake is not None
        # (``_stopped``: a cancellation lost in a 3.11 wait_for still ends the loop, tasks.py)
        while not self._stopped:
            self._wake.clear()
            self.jobs = [j for j in self.jobs if j.partitions and self.coordinator.job_is_current(j)]
            if not self.jobs:
                await self._wake.wait()
                continue
            try:
                await self._send_round()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a bug must not stop every later transaction
                log.exception("sending transaction markers failed; retrying")
            if any(j.partitions for j in self.jobs):
                try:
                    await asyncio.wait_for(self._wake.wait(), RETRY_BACKOFF_S)
                except TimeoutError:
                    pass

    # ------------------------------------------------------------ one round
    def _leader_of(self, topic: str, index: int) -> int | None:
        """The partition's leader; None while unknown; -2 when the topic is gone."""
        cluster = self.cluster
        if cluster is None:
            if topic not in self.state.topics:
                return -2
            return self.state.node_id if self.state.partition(topic, index) is not None else -2
        if cluster.cache.topic(topic) is None:
            return -2
        leader = cluster.cache.leader(topic, index)
        return leader if leader >= 0 else None

    async def _send_round(self) -> None:
        by_broker: dict[int, list[tuple[MarkerJob, list[tuple[str, int]]]]] = {}
        for job in list(self.jobs):
            per_broker: dict[int, list[tuple[str, int]]] = {}
            for tp in sorted(job.partitions):
                leader = self._leader_of(*tp)
                if leader == -2:
                    log.info("transaction %s: %s-%d no longer exists; no marker needed",
                             job.transactional_id, *tp)
                    self.coordinator.marker_written(job, tp)
                elif leader is not None:
                    per_broker.setdefault(leader, []).append(tp)
            for broker, tps in per_broker.items():
                by_broker.setdefault(broker, []).append((job, tps))
        if by_broker:
            await asyncio.gather(*(self._send_to(broker, entries)
                                   for broker, entries in by_broker.items()))

    async def _send_to(self, broker: int, entries: list[tuple[MarkerJob, list[tuple[str, int]]]]) -> None:
        markers = []
        for job, tps in entries:
            topics: dict[str, list[int]] = {}
            for topic, index in tps:
                topics.setdefault(topic, []).append(index)
            markers.append(WriteTxnMarkersRequest.WritableTxnMarker(
                producer_id=job.producer_id, producer_epoch=job.producer_epoch,
                transaction_result=job.committed,
                topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                        for t, ps in topics.items()],
                coordinator_epoch=job.coordinator_epoch))
        request = WriteTxnMarkersRequest(markers=markers)
        response = await self._roundtrip(broker, request)
        if response is None:
            return  # retried next round
        # markers of one producer id appear once per request here (one job per transaction)
        by_pid = {m.producer_id: m for m in response.markers}
        for job, tps in entries:
            result = by_pid.get(job.producer_id)
            if result is None:
                continue
            codes = {(t.name, p.partition_index): ErrorCode(p.error_code)
                     for t in result.topics for p in t.partitions}
            for tp in tps:
                code = codes.get(tp)
                if code is ErrorCode.NONE:
                    self.coordinator.marker_written(job, tp)
                elif code in _DONE_WHEN_FENCED:
                    log.info("transaction %s: the leader of %s-%d refused its marker (%s); "
                             "dropping it", job.transactional_id, tp[0], tp[1], code.name)
                    job.partitions.clear()
                elif code is not None:
                    log.debug("transaction %s: marker for %s-%d: %s; retrying",
                              job.transactional_id, tp[0], tp[1], code.name)

    async def _roundtrip(self, broker: int, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse | None:
        if broker == self.state.node_id:
            writer = self.local_writer
            if writer is None:
                if not self._warned:
                    self._warned = True
                    log.warning("no WriteTxnMarkers broker side (kbroker.handlers.write_txn_markers):"
                                " transaction markers wait")
                return None
            response = writer(request)
            if inspect.isawaitable(response):
                response = await response
            return response
        fut = self.send_to_broker(broker, request, WRITE_TXN_MARKERS_VERSION)
        if fut is None:
            return None
        try:  # a timeout cancels the request: its link stops resending it
            return await asyncio.wait_for(fut, REQUEST_TIMEOUT_S)
        except TimeoutError:
            return None
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the sender itself is stopping
            return None  # the link was closed under the request

    def send_to_broker(self, broker: int, request: Any, version: int) -> asyncio.Future[Any] | None:
        """Cluster mode: ``request`` to another broker over this sender's inter-broker links
        (also used for KIP-890 verification, kbroker/coordinators/txn_verification.py); None when the
        broker is not known."""
        cluster = self.cluster
        if cluster is None or self._stopped:
            return None
        info = cluster.cache.broker(broker)
        if info is None or not info.endpoints:
            return None
        # The inter-broker listener (inter.broker.listener.name), as every other broker-to-
        # broker link: its security settings are what inter_broker_client authenticates with.
        e = info.endpoint(cluster.inter_broker_listener) or info.endpoints[0]
        if self._links is None:
            from kbroker.interbroker.broker_channel import BrokerChannel
            self._links = BrokerChannel(f"broker-{self.state.node_id}-txn")
        link = self._links.links.get(broker)
        if link is None or (link.host, link.port) != (e.host, e.port):
            self._links.update_brokers({**{b: (lk.host, lk.port) for b, lk in self._links.links.items()},
                                        broker: (e.host, e.port)})
        return self._links.send(broker, request, version)

    async def stop(self) -> None:
        """The sending task and every inter-broker link end before this returns; neither
        is made again (requests are still answered while the logs flush)."""
        self._stopped = True
        task, self._task = self._task, None
        if task is not None:
            for left in await cancel_and_wait([task]):
                log.warning("transaction marker task did not stop: %s", task_name(left))
        links, self._links = self._links, None
        if links is not None:
            await links.aclose()

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._links is not None:
            self._links.close()
            self._links = None
