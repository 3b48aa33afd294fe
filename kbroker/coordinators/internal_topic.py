"""``InternalTopicHost``: one internal topic (``__consumer_offsets``, ``__transaction_state``)
hosted for the coordinator whose state it stores: Kafka's ``CoordinatorRuntime`` /
``CoordinatorLoader`` / ``PartitionWriter`` seam, for one topic.

Theory of operation.

* The coordinator is pure (groups/, txn/).  Its adapter (kbroker/coordinators/group_service.py,
  kbroker/coordinators/txn_service.py) is the host's *tenant*: it says how to load and unload one
  partition and what to do when the partition count is pinned (``Tenant``); the host says
  when, and does the topic's I/O.  Nothing about single node or cluster mode is left in the
  tenant: the two modes are the two implementations below.
* The topic.  Single node (``LocalTopicHost``): created on first use with the configured
  count (``<prefix>.num.partitions``) and the tenant's topic configs, synchronously by
  ``ensure`` or off the loop by ``create_off_loop`` (kbroker/replica/topic_creation.py, for
  FindCoordinator); this broker leads every partition.  ZooKeeper mode (``ZkTopicHost``):
  FindCoordinator creates it through ZooKeeper (kbroker/zk/zk_coordinators.py), LeaderAndIsr
  opens the partitions this broker holds; the host only follows.
* The partition count.  Keys are hashed over the topic's real count, not the config: it is
  pinned the first time it is known (single node: from the local topic, at start-up or when
  it is created; ZooKeeper mode: from the topic znode, kbroker/replica/replica_manager.py, or the
  metadata cache, kbroker/zk/zk_coordinators.py) and never changes afterwards, as Kafka's
  coordinators fix theirs: partitions added later would move keys away from their records.
* Loading.  A partition is owned by the tenant only once it is replayed.  Single node: every
  partition at start-up (the configured count while the topic does not exist yet; those the
  pinned count adds, when the topic appears), before anything is served.  ZooKeeper mode:
  when this broker becomes the partition's leader, unloaded when it stops (the replica
  manager's leadership hooks: ``ClusterRuntime.attach`` registers the host with
  ``ReplicaManager.follow_internal_topic``).  A replay reads the partition from its log
  start to its log end (Kafka's loaders read with FetchIsolation.LOG_END: a new leader's
  high watermark may still trail records the old coordinator acknowledged), whole batches,
  records without a key skipped (a coordinator record always has one); control batches go
  to the tenant's ``on_control`` or are skipped.
* Appends.  One call is one batch, ``AppendOrigin.COORDINATOR``, acks=all in both modes
  (Kafka's ``offsets.commit.required.acks`` = -1; the transaction log is written with -1 as
  well): refused NOT_ENOUGH_REPLICAS while the ISR is below ``min.insync.replicas``
  (kbroker/replica/partition.py; a single node has no ISR to check), NOT_LEADER_OR_FOLLOWER when
  this broker does not lead the partition.  A transactional write carries its producer
  (id, epoch, transactional bit, base sequence 0, as Kafka's group coordinator writes a
  TxnOffsetCommit).  The outcome of an append is an error code, never an exception.  The
  append itself is synchronous (the log, on the loop, as every produce); only its
  replication is waited for (``wait_for_acks``, through the ``Replicas`` port handed in:
  ``LocalReplicas`` answers at once, the ``ReplicaManager`` in its produce purgatory), so
  appends happen in call order and answers wait for what they depend on.
  ``waits_for_acks`` tells the tenant whether that wait is real (cluster mode, or the test
  seam below); when it is not, the outcome is the append's own.

Format: each append is one magic-2 record batch (wire/record_batch.py) of the tenant's
(key, value) records, all stamped with the broker clock's time, no headers; the key and
value encodings are the tenant's (groups/records.py, txn/records.py).

Invariants: the pinned count never changes; a tenant owns a partition only between the end
of its replay and its unload, and a replay runs on the loop in one go (no request sees it
half done); appends leave in call order, each to the log before the call returns; the
host never raises out of ``append``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from kbroker.replica.partition import LEADER_EPOCH
from kbroker.runtime.tasks import cancel_and_wait, task_name
from log.errors import LogError
from log.producer_state import AppendOrigin
from wire.error_codes import ErrorCode
from wire.record_batch import RecordBatch, build_batch, iter_batches

if TYPE_CHECKING:
    from kbroker.metadata.catalog import TopicInfo
    from kbroker.replica.appends import Appends
    from kbroker.replica.partition import Partition
    from log.clock import Clock
    from wire.record_batch import Record

__all__ = ["Appended", "InternalTopic", "InternalTopicHost", "LocalTopicHost", "Tenant", "ZkTopicHost",
           "open_host"]

TopicPartition = tuple[str, int]

# Test seam: on a single node, the outcome of each __consumer_offsets append is known only
# after a delay, as if waiting for replication: the k-th such wait lasts 0, 1/2 or 1 times
# this many ms (k mod 3), so outcomes come back out of append order, as replication's do
# across partitions and connections.  Nothing but the compat tests sets it.
SLOW_OFFSETS_APPEND_MS = int(os.environ.get("KBROKER_TEST_SLOW_OFFSETS_APPEND_MS", "0") or 0)
if SLOW_OFFSETS_APPEND_MS:
    logging.getLogger("kbroker.groups").warning(
        "KBROKER_TEST_SLOW_OFFSETS_APPEND_MS: __consumer_offsets appends complete after up to %d ms",
        SLOW_OFFSETS_APPEND_MS)


class _Replicas(Protocol):
    """The slice of the ``Replicas`` port (kbroker/server/services.py) an append needs."""

    @property
    def replicated(self) -> bool: ...

    def leader_error(self, topic: str, index: int) -> ErrorCode | None: ...

    def append_records(self, entries: Sequence[tuple[TopicPartition, memoryview]], required_acks: int,
                       origin: AppendOrigin = ...) -> Appends: ...

    def wait_for_acks(self, required: dict[TopicPartition, int],
                      timeout_ms: int) -> Awaitable[dict[TopicPartition, ErrorCode]]: ...


class _Creations(Protocol):
    def ensure_topic(self, name: str, count: int, configs: dict[str, str] | None = None) -> Awaitable[None]: ...


class _StaticConfig(Protocol):
    @property
    def cluster_mode(self) -> bool: ...


class _Config(Protocol):
    def __getitem__(self, name: str) -> Any: ...


class Broker(Protocol):
    """What a host reads of the broker's partition store (kbroker/replica/broker_state.py)."""

    @property
    def static_config(self) -> _StaticConfig: ...

    @property
    def config(self) -> _Config:
        """The effective config: read per use (AlterConfigs replaces it)."""
        ...

    @property
    def clock(self) -> Clock: ...

    @property
    def topics(self) -> Mapping[str, TopicInfo]: ...

    @property
    def creations(self) -> _Creations: ...

    def partition(self, topic: str, index: int) -> Partition | None: ...

    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> TopicInfo | None: ...


class Tenant(Protocol):
    """The coordinator's side of the seam (Kafka's ``CoordinatorShard`` load hooks)."""

    def on_partitions_pinned(self, count: int) -> None:
        """Keys are hashed over ``count`` partitions from now on (called once)."""
        ...

    def on_load(self, index: int) -> int | None:
        """Replay partition ``index`` (``InternalTopicHost.replay``) and own it: the number of
        records replayed, or None when it is loaded already and nothing was done."""
        ...

    def on_unload(self, index: int) -> None:
        """This broker no longer leads partition ``index``: forget what it holds."""
        ...

    def on_loaded(self, records: int, index: int | None) -> None:
        """Report a load (its log line): of one partition, or of all at start-up (None)."""
        ...


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """One internal topic and the configs its host reads (by name, from the effective config)."""

    name: str
    num_partitions: str          # the count it is created with: <prefix>.num.partitions
    configs: Callable[[Any], dict[str, str]]   # its enforced topic configs
    load_buffer_size: str        # bytes per read of a replay
    append_timeout_ms: str       # how long an append's replication is waited for


class Appended(NamedTuple):
    """An append's outcome: NONE or the error to report; the partition (-1 when it could not
    be chosen); the batch's first offset and the offset after it (-1 on error)."""

    error: ErrorCode
    index: int
    first_offset: int
    end_offset: int


OnRecord = Callable[[RecordBatch, "Record"], None]
OnControl = Callable[[RecordBatch], None]


class InternalTopicHost:
    """What both modes share: pinning, loading on leadership, replay, append and the wait."""

    def __init__(self, broker: Broker, replicas: _Replicas, topic: InternalTopic, tenant: Tenant, log: logging.Logger,
                 slow_append_ms: int = 0) -> None:
        self._broker = broker
        self._replicas = replicas   # who leads what, and the acks=all wait
        self._spec = topic
        self._tenant = tenant
        self._log = log   # the tenant's logger: its lines keep their names
        self._slow_append_ms = slow_append_ms
        self._slowed = 0
        self.configured_partitions: int = broker.config[topic.num_partitions]
        self.pinned_partitions: int | None = None
        self._replicating: set[asyncio.Task[Any]] = set()

    @property
    def topic(self) -> str:
        return self._spec.name

    @property
    def partition_count(self) -> int:
        """The pinned count, else the count the topic would be created with."""
        return self.configured_partitions if self.pinned_partitions is None else self.pinned_partitions

    def topic_configs(self) -> dict[str, str]:
        return self._spec.configs(self._broker.config)

    # ------------------------------------------------------------ the topic
    def exists(self) -> bool:
        return self.topic in self._broker.topics

    def ensure(self) -> None:
        """Before an append or a lookup: the topic exists (single node) and the count is
        pinned when it can be."""
        raise NotImplementedError

    async def create_off_loop(self) -> None:
        """FindCoordinator on a single node: ``ensure`` with the partitions opened off the loop."""
        raise NotImplementedError

    def start(self) -> None:
        """Once, when the tenant is built (before anything is served)."""
        raise NotImplementedError

    def partitions_known(self, count: int) -> bool:
        """The topic's partition count: pinned (and handed to the tenant) the first time it
        is known, ignored afterwards.  True when it was pinned now."""
        if self.pinned_partitions is not None:
            return False
        self.pinned_partitions = count
        self._tenant.on_partitions_pinned(count)
        return True

    # ------------------------------------------------------------ loading
    def leadership(self, index: int, leader: bool) -> None:
        """This broker became (or stopped being) the leader of partition ``index`` (Kafka's
        onElection / onResignation): load it, or unload it.  The load runs on the loop in one
        go, so no request sees the partition half replayed."""
        if not leader:
            self._tenant.on_unload(index)
            return
        records = self._tenant.on_load(index)
        if records is not None:
            self._tenant.on_loaded(records, index)

    def leader_epoch(self, index: int) -> int:
        """The partition's leader epoch (the transaction coordinator's epoch), LEADER_EPOCH
        when this broker has no such partition (a single node before the topic exists)."""
        partition = self._broker.partition(self.topic, index)
        return LEADER_EPOCH if partition is None else partition.leader_epoch

    def replay(self, index: int, on_record: OnRecord, on_control: OnControl | None = None) -> int:
        """Feed partition ``index`` from its log start to its log end to the tenant: each
        keyed data record to ``on_record``, each control batch to ``on_control`` (skipped
        when None).  Returns the number of data records fed (0 without such a partition)."""
        partition = self._broker.partition(self.topic, index)
        if partition is None:
            return 0
        # One read-size rule: at most the tenant's own <prefix>.load.buffer.size bytes a read
        # (Kafka's GroupMetadataManager reads with offsets.load.buffer.size, its
        # TransactionStateManager with transaction.state.log.load.buffer.size), whole batches
        # whatever the size (min_one_message): the size bounds one read's memory, never what
        # is replayed.
        read_bytes = self._broker.config[self._spec.load_buffer_size]
        count = 0
        offset = partition.log_start_offset   # the first offset not replayed yet
        while offset < partition.log_end_offset:
            data = partition.read(offset, read_bytes, True, to_log_end=True).records
            if not data:
                break
            for batch in iter_batches(data):
                if batch.is_control:
                    # a read starts at the batch holding ``offset``: one wholly before it is
                    # replayed already
                    if on_control is not None and batch.next_offset > offset:
                        on_control(batch)
                else:
                    for rec in batch.records():
                        if rec.offset >= offset and rec.key is not None:
                            on_record(batch, rec)
                            count += 1
                offset = batch.next_offset
        return count

    # ------------------------------------------------------------ appends
    def append(self, partition: int | Callable[[], int], records: list[tuple[bytes, bytes | None]], *,
               producer_id: int = -1, producer_epoch: int = -1, owner: str = "") -> Appended:
        """Append ``records`` (key, value) as one batch to a partition: ``partition`` is its
        index, or what chooses it once the topic is ensured (a count pinned by ``ensure``
        places the key).  ``producer_id`` >= 0: a transactional batch of that producer.
        ``owner`` names whose records they are in the log lines."""
        index = -1
        try:
            self.ensure()
            index = partition if isinstance(partition, int) else partition()
            txn: dict[str, Any] = {} if producer_id < 0 else {
                "producer_id": producer_id, "producer_epoch": producer_epoch,
                "base_sequence": 0, "is_transactional": True}
            now = self._broker.clock.milliseconds()
            batch = bytearray(build_batch([(k, v, [], now) for k, v in records], **txn))
            # the one door for writes (kbroker/replica/appends.py); the acks=all wait is
            # ``wait_for_acks``, which the tenant runs for a batch of its appends at once
            [result] = self._replicas.append_records([((self.topic, index), memoryview(batch))], -1,
                                                     AppendOrigin.COORDINATOR).results
            if result.refusal is not None:
                raise result.refusal
            info = result.info
            if info is not None:
                return Appended(ErrorCode.NONE, index, info.first_offset, info.last_offset + 1)
            error = result.error
        except LogError as e:
            self._log.warning("appending %d record(s)%s to %s-%d failed: %s %s", len(records), owner,
                              self.topic, index, e.error.name, e)
            return Appended(e.error, index, -1, -1)
        except OSError:
            self._log.exception("appending %d record(s)%s to %s-%d failed with an I/O error", len(records),
                                owner, self.topic, index)
            return Appended(ErrorCode.KAFKA_STORAGE_ERROR, index, -1, -1)
        except Exception:
            self._log.exception("appending %d record(s)%s to %s-%d failed", len(records), owner,
                                self.topic, index)
            return Appended(ErrorCode.UNKNOWN_SERVER_ERROR, index, -1, -1)
        self._log.warning("appending %d record(s)%s to %s-%d failed: %s", len(records), owner, self.topic,
                          index, error.name)
        return Appended(error, index, -1, -1)

    @property
    def waits_for_acks(self) -> bool:
        """An append's outcome is known only after ``wait_for_acks`` (its replication, or
        the test seam's delay); else it is the append's own."""
        return self._replicas.replicated or bool(self._slow_append_ms)

    async def wait_for_acks(self, required: dict[int, int]) -> dict[int, ErrorCode]:
        """Until each partition's high watermark reaches the offset given (its batches are
        in the ISR), at most ``<append_timeout_ms>``: per partition NONE or the error
        (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER)."""
        replicas = self._replicas
        if self._slow_append_ms and not replicas.replicated:
            # the test seam (module top): every append succeeds, late
            self._slowed += 1
            await asyncio.sleep(self._slow_append_ms * (self._slowed % 3) / 2000)
            return dict.fromkeys(required, ErrorCode.NONE)
        if not required:
            return {}
        results = await replicas.wait_for_acks({(self.topic, i): end for i, end in required.items()},
                                               self._broker.config[self._spec.append_timeout_ms])
        return {i: results.get((self.topic, i), ErrorCode.NONE) for i in required}

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run a wait for replication as a task of the host (``stop`` ends those left)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._replicating.add(task)
        task.add_done_callback(self._replicating.discard)
        return task

    async def stop(self) -> None:
        """On the loop, before the state shuts down: the waits for replication end (the
        replica manager, stopped first, answered them)."""
        for task in await cancel_and_wait(list(self._replicating)):
            self._log.warning("an append to %s did not stop: %s", self.topic, task_name(task))


class LocalTopicHost(InternalTopicHost):
    """A single node: the topic is created here, and every partition is this broker's."""

    _started = False

    def ensure(self) -> None:
        if not self.exists():
            # synchronous, on the loop: only when no FindCoordinator came first
            # (``create_off_loop``); does nothing while that creation runs
            self._broker.create_topic(self.topic, self.partition_count, self.topic_configs())
        self._pin_local()

    async def create_off_loop(self) -> None:
        if not self.exists():
            await self._broker.creations.ensure_topic(self.topic, self.partition_count, self.topic_configs())
        self.ensure()

    def start(self) -> None:
        self._pin_local()
        records = self._load_every_partition()
        self._started = True
        self._tenant.on_loaded(records, None)

    def partitions_known(self, count: int) -> bool:
        pinned = super().partitions_known(count)
        if pinned and self._started:
            # this broker leads every partition: those beyond the start-up load's count (a
            # topic created with another count than the config's) are loaded as it appears
            self._load_every_partition()
        return pinned

    def _pin_local(self) -> None:
        info = self._broker.topics.get(self.topic)
        if info is not None:
            self.partitions_known(info.partitions)

    def _load_every_partition(self) -> int:
        return sum(self._tenant.on_load(index) or 0 for index in range(self.partition_count))


class ZkTopicHost(InternalTopicHost):
    """ZooKeeper mode: FindCoordinator creates the topic through ZooKeeper
    (kbroker/zk/zk_coordinators.py), LeaderAndIsr opens the partitions this broker holds and
    says which it leads (``leadership``); the count comes from the topic znode."""

    def ensure(self) -> None:
        pass   # nothing to create here; the count arrives through partitions_known

    async def create_off_loop(self) -> None:
        pass

    def start(self) -> None:
        pass   # nothing is owned until leadership arrives


def open_host(broker: Broker, replicas: _Replicas, topic: InternalTopic, tenant: Tenant, log: logging.Logger,
              slow_append_ms: int = 0) -> InternalTopicHost:
    """The host of ``topic`` for this broker's mode; ``start()`` it once the tenant is built."""
    kind = ZkTopicHost if broker.static_config.cluster_mode else LocalTopicHost
    return kind(broker, replicas, topic, tenant, log, slow_append_ms)
