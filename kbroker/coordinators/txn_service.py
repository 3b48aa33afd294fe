"""``TxnService``: adapts the pure ``txn.TransactionCoordinator`` to the running broker
(as kbroker/coordinators/group_service.py does for groups).

Its jobs:
* ``__transaction_state`` is hosted by kbroker/coordinators/internal_topic.py: created on first use
  (FindCoordinator key type 1, or the first InitProducerId with a transactional id) with
  ``transaction.state.log.num.partitions`` partitions and Kafka's enforced topic configs
  (``topic_configs``: ``cleanup.policy=compact``, ``compression.type=uncompressed``,
  ``min.insync.replicas`` = ``transaction.state.log.min.isr``, ``segment.bytes`` =
  ``transaction.state.log.segment.bytes``, no unclean election).  On a single node the
  replication factor is one whatever ``transaction.state.log.replication.factor`` says, as
  for ``__consumer_offsets``; in cluster mode FindCoordinator creates it through ZooKeeper
  with that factor (kbroker/zk/zk_coordinators.py) and refuses with COORDINATOR_NOT_AVAILABLE
  while fewer brokers are alive.  A topic found on disk keeps its partition count (ids are
  hashed over the topic's count, as Kafka reads it).
* Loading (this service is the host's tenant): a partition is replayed (data records; the
  markers in it are no state) and owned with coordinator epoch = the partition's leader
  epoch: every partition at start-up on a single node (off the loop, with the broker
  state); in cluster mode when this broker becomes its leader (again at each new leader
  epoch), and unloaded when it stops.
* Store: one record per state change, one batch, acks=all (the outcome is known once the
  ISR has it, at most ``request.timeout.ms``; at once on a single node).
* Markers: kbroker/coordinators/txn_marker_sender.py.
* Timers: ``tick()`` (the broker's 100 ms tick) aborts timed-out transactions every
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` and removes expired
  transactional ids every ``transaction.remove.expired.transaction.cleanup.interval.ms``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kbroker.coordinators.internal_topic import InternalTopic, open_host
from kbroker.coordinators.producer_ids import ProducerIds, ProducerIdsNotReady
from kbroker.coordinators.txn_marker_sender import TxnMarkerSender
from kbroker.coordinators.txn_verification import TxnVerifier
from txn import TransactionCoordinator, TxnConfig
from txn.coordinator import OnAppended
from wire.error_codes import ErrorCode
from wire.topic_names import TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from kbroker.replica.broker_state import BrokerState
    from kbroker.replica.local_replicas import LocalReplicas
    from kbroker.replica.replica_manager import ReplicaManager
    from wire.record_batch import Record, RecordBatch

log = logging.getLogger("kbroker.txn")

_CONFIG_KEYS = ("transactional.id.expiration.ms", "transaction.max.timeout.ms",
                "transaction.state.log.num.partitions",
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                "transaction.remove.expired.transaction.cleanup.interval.ms")


def topic_configs(cfg: Any) -> dict[str, str]:
    """Kafka's ``TransactionStateManager.transactionTopicConfigs``."""
    return {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "min.insync.replicas": str(cfg["transaction.state.log.min.isr"]),
        "segment.bytes": str(cfg["transaction.state.log.segment.bytes"]),
        "unclean.leader.election.enable": "false",
    }


TRANSACTION_TOPIC = InternalTopic(TRANSACTION_STATE_TOPIC, "transaction.state.log.num.partitions", topic_configs,
                                  load_buffer_size="transaction.state.log.load.buffer.size",
                                  append_timeout_ms="request.timeout.ms")


class TxnService:
    def __init__(self, state: BrokerState, replicas: LocalReplicas | ReplicaManager, producer_ids: ProducerIds) -> None:
        """``producer_ids``: where InitProducerId's new ids come from (a local file on a
        single node, ZooKeeper blocks in a cluster, kbroker/coordinators/producer_ids.py)."""
        self.state = state
        self.producer_ids = producer_ids
        cfg = state.config
        self.coordinator = TransactionCoordinator(
            TxnConfig.from_properties({k: cfg[k] for k in _CONFIG_KEYS}), state.clock,
            self._store, self._send_markers, self._generate_producer_id)
        self.markers = TxnMarkerSender(state, self.coordinator)
        self.verifier = TxnVerifier(state, self.coordinator, self.markers)
        now = state.clock.milliseconds()
        self._next_abort_ms = now + cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
        self._next_expire_ms = now + cfg["transaction.remove.expired.transaction.cleanup.interval.ms"]
        self.host = open_host(state, replicas, TRANSACTION_TOPIC, self, log)
        self.host.start()   # on a single node: every partition, off the loop with the state

    @property
    def verification_enabled(self) -> bool:
        return bool(self.state.config["transaction.partition.verification.enable"])

    # ------------------------------------------------------------ the internal topic
    def on_partitions_pinned(self, count: int) -> None:
        """Transactional ids hash over the topic's partition count."""
        if count != self.coordinator.num_partitions:
            log.info("%s has %d partition(s) (transaction.state.log.num.partitions=%d): "
                     "transactional ids are placed by the topic's count", TRANSACTION_STATE_TOPIC,
                     count, self.coordinator.num_partitions)
            self.coordinator.num_partitions = count

    def on_load(self, index: int) -> int | None:
        """Replay ``__transaction_state`` partition ``index`` and own it with the partition's
        leader epoch as coordinator epoch (a new leader epoch of the same leader loads it
        again: a new coordinator epoch); None when owned at that epoch already."""
        c = self.coordinator
        epoch = self.host.leader_epoch(index)
        if c.owned.get(index) == epoch:
            return None
        c.unload_partition(index)
        c.begin_load(index)
        try:
            # control batches (the markers of transactions on this log) are no state records
            count = self.host.replay(index, self._replay_record)
        finally:
            c.complete_load(index, epoch)
        return count

    def _replay_record(self, batch: RecordBatch, rec: Record) -> None:
        self.coordinator.replay(rec.key, rec.value)  # type: ignore[arg-type]

    def on_unload(self, index: int) -> None:
        c = self.coordinator
        if index in c.owned or index in c.loading:
            c.unload_partition(index)
            log.info("unloaded the transactions of %s-%d", TRANSACTION_STATE_TOPIC, index)

    def on_loaded(self, records: int, index: int | None) -> None:
        if index is not None:
            log.info("loaded %d transaction state record(s) from %s-%d (coordinator epoch %d)", records,
                     TRANSACTION_STATE_TOPIC, index, self.coordinator.owned.get(index, -1))
        elif records:
            log.info("loaded %d transaction state record(s) from %s (%d transactional id(s))",
                     records, TRANSACTION_STATE_TOPIC, len(self.coordinator.txns))

    # ------------------------------------------------------------ coordinator callbacks
    def _generate_producer_id(self) -> int | None:
        try:
            return self.producer_ids.generate()
        except ProducerIdsNotReady:
            return None

    def _send_markers(self, job: Any) -> None:
        self.markers.add(job)

    def _store(self, index: int, key: bytes, value: bytes | None, on_appended: OnAppended) -> None:
        """One state record, one batch; its outcome once replicated (cluster mode)."""
        appended = self.host.append(index, [(key, value)])
        if appended.error is not ErrorCode.NONE or not self.host.waits_for_acks:
            on_appended(appended.error)
            return
        self.host.spawn(self._await_replication(index, appended.end_offset, on_appended))

    async def _await_replication(self, index: int, end: int, on_appended: OnAppended) -> None:
        try:
            code = (await self.host.wait_for_acks({index: end}))[index]
        except Exception:  # noqa: BLE001 - reported as the append's outcome
            log.exception("waiting for the replication of %s-%d failed", TRANSACTION_STATE_TOPIC, index)
            code = ErrorCode.UNKNOWN_SERVER_ERROR
        on_appended(ErrorCode(code))

    # ------------------------------------------------------------ KIP-890 part 1
    def verify_produce(self, transactional_id: str, topic: str, index: int,
                       partition: Any, records: memoryview) -> ErrorCode:
        """Produce's check before appending a transactional batch (kbroker/coordinators/txn_verification.py)."""
        return self.verifier.check_local(transactional_id, topic, index, partition, records)

    def remote_verification(self, req: Any, handle: Callable[[], Any]) -> Any:
        """Cluster mode: an awaitable that verifies with another broker's coordinator and
        then handles the Produce, or None (kbroker/coordinators/txn_verification.py)."""
        return self.verifier.remote_verification(req, handle)

    # ------------------------------------------------------------ answers
    def call(self, start: Callable[[Callable[..., None]], None], build: Callable[..., Any]) -> Any:
        """Run a coordinator call whose ``respond`` callback receives the answer's values;
        the response (``build(*values)``) now, or a future of it when the answer waits for
        replication or markers."""
        box: list[Any] = []
        fut: asyncio.Future[Any] | None = None

        def respond(*values: Any) -> None:
            if fut is None:
                box.append(build(*values))
            elif not fut.done():
                fut.set_result(build(*values))

        start(respond)
        if box:
            return box[0]
        fut = asyncio.get_running_loop().create_future()
        return fut

    # ------------------------------------------------------------ timers
    def start(self) -> None:
        """On the loop, once serving: send the markers the load found pending."""
        self.markers.start()

    def tick(self) -> None:
        now = self.state.clock.milliseconds()
        cfg = self.state.config
        if now >= self._next_abort_ms:
            self._next_abort_ms = now + cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
            self.coordinator.abort_timed_out_transactions()
        if now >= self._next_expire_ms:
            self._next_expire_ms = now + cfg["transaction.remove.expired.transaction.cleanup.interval.ms"]
            self.coordinator.remove_expired_transactional_ids()

    def close(self) -> None:
        self.markers.close()

    async def stop(self) -> None:
        """On the loop, before the state shuts down: the marker sender's task ends, and so
        do the appends waiting for their replication (the replica manager, stopped first,
        answered them: kbroker/replica/delayed_produce.py)."""
        await self.markers.stop()
        await self.host.stop()
