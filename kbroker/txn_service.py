"""``TxnService``: adapts the pure ``txn.TransactionCoordinator`` to the running broker
(as kbroker/group_service.py does for groups).

Its jobs:
* ``__transaction_state``: created on first use (FindCoordinator key type 1, or the first
  InitProducerId with a transactional id) with ``transaction.state.log.num.partitions``
  partitions and Kafka's enforced topic configs (``cleanup.policy=compact``,
  ``compression.type=uncompressed``, ``min.insync.replicas`` =
  ``transaction.state.log.min.isr``, ``segment.bytes`` =
  ``transaction.state.log.segment.bytes``, no unclean election).  On a single node the
  replication factor is one whatever ``transaction.state.log.replication.factor`` says,
  as for ``__consumer_offsets``; in cluster mode FindCoordinator creates it through
  ZooKeeper with that factor (kbroker/handlers/transactions.py) and refuses with
  COORDINATOR_NOT_AVAILABLE while fewer brokers are alive.  A topic found on disk keeps
  its partition count (ids are hashed over the topic's count, as Kafka reads it).
* Loading: single node: every partition is replayed at start-up (off the loop, with the
  broker state) and owned with coordinator epoch = the partition's leader epoch.
  Cluster mode: a partition is replayed when this broker becomes its leader
  (``txn_leadership``) and unloaded when it stops.
* Store: one record per state change, one batch, ``AppendOrigin.COORDINATOR``; acks=all
  in cluster mode (the outcome is known once the ISR has it, at most
  ``request.timeout.ms``), synchronous on a single node.
* Markers: kbroker/txn_marker_sender.py.
* Timers: ``tick()`` (the broker's 100 ms tick) aborts timed-out transactions every
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` and removes expired
  transactional ids every ``transaction.remove.expired.transaction.cleanup.interval.ms``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kbroker.producer_ids import ProducerIdsNotReady
from kbroker.tasks import cancel_and_wait, task_name
from kbroker.topic_names import TRANSACTION_STATE_TOPIC
from kbroker.txn_marker_sender import TxnMarkerSender
from kbroker.txn_verification import TxnVerifier
from log.errors import LogError
from log.producer_state import AppendOrigin
from txn import TransactionCoordinator, TxnConfig
from txn.coordinator import OnAppended
from wire.error_codes import ErrorCode
from wire.record_batch import build_batch, iter_batches

if TYPE_CHECKING:
    from kbroker.broker_state import BrokerState

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


class TxnService:
    def __init__(self, state: BrokerState) -> None:
        self.state = state
        cfg = state.config
        self.coordinator = TransactionCoordinator(
            TxnConfig.from_properties({k: cfg[k] for k in _CONFIG_KEYS}), state.clock,
            self._store, self._send_markers, self._generate_producer_id)
        self.markers = TxnMarkerSender(state, self.coordinator)
        self.verifier = TxnVerifier(self)
        self._replicating: set[asyncio.Task[None]] = set()
        self._partitions_fixed = False
        now = state.clock.milliseconds()
        self._next_abort_ms = now + cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
        self._next_expire_ms = now + cfg["transaction.remove.expired.transaction.cleanup.interval.ms"]
        static = getattr(state, "static_config", None)  # unit tests drive a bare state
        self._cluster_mode = static is not None and static.cluster_mode
        if not self._cluster_mode:
            self._load()

    @property
    def verification_enabled(self) -> bool:
        return bool(self.state.config["transaction.partition.verification.enable"])

    # ------------------------------------------------------------ the internal topic
    def topic_exists(self) -> bool:
        return TRANSACTION_STATE_TOPIC in self.state.topics

    def ensure_topic(self) -> None:
        """Single node: create the topic if missing (cluster mode: FindCoordinator does,
        through ZooKeeper)."""
        if self._cluster_mode or self.topic_exists():
            return
        # synchronous, on the loop: only when no FindCoordinator came first
        # (``create_topic_off_loop``); does nothing while that creation runs
        self.state.create_topic(TRANSACTION_STATE_TOPIC, self.coordinator.num_partitions,
                                topic_configs(self.state.config))

    async def create_topic_off_loop(self) -> None:
        """Single node (FindCoordinator): ``ensure_topic`` with the topic's partitions opened
        on an executor thread (kbroker/topic_creation.py)."""
        if not self._cluster_mode and not self.topic_exists():
            await self.state.creations.ensure_topic(TRANSACTION_STATE_TOPIC, self.coordinator.num_partitions,
                                                    topic_configs(self.state.config))
        self.ensure_topic()

    def _load(self) -> None:
        """Single node: own every partition; replay those on disk."""
        c = self.coordinator
        info = self.state.topics.get(TRANSACTION_STATE_TOPIC)
        if info is not None:
            self.topic_partitions_known(info.partitions)
        count = 0
        for index in range(c.num_partitions):
            c.begin_load(index)
            try:
                count += self._replay_partition(index)
            finally:
                c.complete_load(index, self._coordinator_epoch(index))
        if count:
            log.info("loaded %d transaction state record(s) from %s (%d transactional id(s))",
                     count, TRANSACTION_STATE_TOPIC, len(c.txns))

    def topic_partitions_known(self, count: int) -> None:
        """The topic's partition count (from disk, or the topic znode in cluster mode):
        transactional ids hash over it, fixed the first time it is known."""
        if self._partitions_fixed:
            return
        self._partitions_fixed = True
        if count != self.coordinator.num_partitions:
            log.info("%s has %d partition(s) (transaction.state.log.num.partitions=%d): "
                     "transactional ids are placed by the topic's count", TRANSACTION_STATE_TOPIC,
                     count, self.coordinator.num_partitions)
            self.coordinator.num_partitions = count

    def _coordinator_epoch(self, index: int) -> int:
        partition = self.state.partition(TRANSACTION_STATE_TOPIC, index)
        return partition.leader_epoch if partition is not None else self.state.leader_epoch

    def _replay_partition(self, index: int) -> int:
        partition = self.state.partition(TRANSACTION_STATE_TOPIC, index)
        if partition is None:
            return 0
        count = 0
        offset = partition.log_start_offset
        # up to the log end, as Kafka's loader reads (FetchIsolation.LOG_END): a new leader's
        # high watermark may still trail records its followers are about to confirm
        while offset < partition.log_end_offset:
            data = partition.read(offset, self.state.config["transaction.state.log.load.buffer.size"],
                                  True, to_log_end=True).records
            if not data:
                break
            for batch in iter_batches(data):
                if not batch.is_control:
                    for rec in batch.records():
                        if rec.offset >= offset and rec.key is not None:
                            self.coordinator.replay(rec.key, rec.value)
                            count += 1
                offset = batch.next_offset
        return count

    def txn_leadership(self, index: int, leader: bool) -> None:
        """Cluster mode: this broker became (or stopped being) the leader of
        ``__transaction_state`` partition ``index``: replay it and own it with the
        partition's leader epoch as coordinator epoch, or unload it."""
        c = self.coordinator
        if not leader:
            if index in c.owned or index in c.loading:
                c.unload_partition(index)
                log.info("unloaded the transactions of %s-%d", TRANSACTION_STATE_TOPIC, index)
            return
        epoch = self._coordinator_epoch(index)
        if c.owned.get(index) == epoch:
            return
        c.unload_partition(index)
        c.begin_load(index)
        try:
            count = self._replay_partition(index)
        finally:
            c.complete_load(index, epoch)
        log.info("loaded %d transaction state record(s) from %s-%d (coordinator epoch %d)", count,
                 TRANSACTION_STATE_TOPIC, index, epoch)

    # ------------------------------------------------------------ coordinator callbacks
    def _generate_producer_id(self) -> int | None:
        try:
            return self.state.producer_ids.generate()
        except ProducerIdsNotReady:
            return None

    def _send_markers(self, job: Any) -> None:
        self.markers.add(job)

    def _replicated(self) -> bool:
        cluster = getattr(self.state, "cluster", None)
        return cluster is not None and getattr(cluster, "replicas", None) is not None

    def _store(self, index: int, key: bytes, value: bytes | None, on_appended: OnAppended) -> None:
        tp = (TRANSACTION_STATE_TOPIC, index)
        replicated = self._replicated()
        try:
            self.ensure_topic()
            partition = self.state.partition(*tp)
            if partition is None:
                on_appended(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                return
            if self._replicated() and self.state.cluster.replicas.leader_error(*tp) is not None:  # type: ignore[union-attr]
                on_appended(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                return
            batch = bytearray(build_batch([(key, value, [], self.state.clock.milliseconds())]))
            info = partition.append_records_as_leader(
                memoryview(batch), -1 if replicated else 1, origin=AppendOrigin.COORDINATOR)
        except LogError as e:
            log.warning("appending to %s-%d failed: %s %s", *tp, e.error.name, e)
            on_appended(e.error)
            return
        except OSError:
            log.exception("appending to %s-%d failed with an I/O error", *tp)
            on_appended(ErrorCode.KAFKA_STORAGE_ERROR)
            return
        if not replicated:
            on_appended(ErrorCode.NONE)
            return
        task = asyncio.get_running_loop().create_task(
            self._await_replication(tp, info.last_offset + 1, on_appended))
        self._replicating.add(task)
        task.add_done_callback(self._replicating.discard)

    async def _await_replication(self, tp: tuple[str, int], end: int, on_appended: OnAppended) -> None:
        cluster: Any = self.state.cluster
        try:
            results = await cluster.replicas.delayed_produce.wait(
                {tp: end}, self.state.config["request.timeout.ms"])
            code = results.get(tp, ErrorCode.NONE)
        except Exception:  # noqa: BLE001 - reported as the append's outcome
            log.exception("waiting for the replication of %s-%d failed", *tp)
            code = ErrorCode.UNKNOWN_SERVER_ERROR
        on_appended(ErrorCode(code))

    # ------------------------------------------------------------ KIP-890 part 1
    def verify_produce(self, transactional_id: str, topic: str, index: int,
                       partition: Any, records: memoryview) -> ErrorCode:
        """Produce's check before appending a transactional batch (kbroker/txn_verification.py)."""
        return self.verifier.check_local(transactional_id, topic, index, partition, records)

    def remote_verification(self, req: Any, handle: Callable[[], Any]) -> Any:
        """Cluster mode: an awaitable that verifies with another broker's coordinator and
        then handles the Produce, or None (kbroker/txn_verification.py)."""
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
        answered them: kbroker/delayed_produce.py)."""
        await self.markers.stop()
        for task in await cancel_and_wait(list(self._replicating)):
            log.warning("transaction log append did not stop: %s", task_name(task))
