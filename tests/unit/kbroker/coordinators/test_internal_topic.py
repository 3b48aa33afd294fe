"""kbroker/coordinators/internal_topic.py: the host of one internal topic, over real partitions (logs in
``tmp_path``), a fake broker and a tenant that records what it is asked to do."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from kbroker.coordinators.internal_topic import (
    InternalTopic,
    LocalTopicHost,
    ZkTopicHost,
    open_host,
)
from kbroker.metadata.catalog import TopicInfo
from kbroker.replica.appends import append_records
from kbroker.replica.fetch_waiters import FetchWaiters
from kbroker.replica.local_replicas import LocalReplicas
from kbroker.replica.partition import Partition
from log.clock import ManualClock
from log.control_batch import marker_batch
from log.errors import RecordTooLargeError
from log.producer_state import AppendOrigin
from tests.unit.log.helpers import SMALL, open_log
from wire.error_codes import ErrorCode
from wire.record_batch import build_batch, iter_batches

T = "__consumer_offsets"
TOPIC = InternalTopic(T, "offsets.topic.num.partitions", lambda cfg: {"cleanup.policy": "compact"},
                      load_buffer_size="offsets.load.buffer.size", append_timeout_ms="offsets.commit.timeout.ms")
LOG = logging.getLogger("tests.internal_topic")


class _Tenant:
    """Records each call; loads a partition once, feeding its records and control batches to lists."""

    def __init__(self) -> None:
        self.host: Any = None
        self.pinned: list[int] = []
        self.loaded: set[int] = set()
        self.unloads: list[int] = []
        self.reports: list[tuple[int, int | None]] = []
        self.records: list[tuple[int, int, bytes]] = []   # (partition, offset, key)
        self.controls: list[int] = []                     # control batches' base offsets

    def on_partitions_pinned(self, count: int) -> None:
        self.pinned.append(count)

    def on_load(self, index: int) -> int | None:
        if index in self.loaded:
            return None
        self.loaded.add(index)
        return self.host.replay(index, lambda b, r: self.records.append((index, r.offset, r.key)),
                                lambda b: self.controls.append(b.base_offset))

    def on_unload(self, index: int) -> None:
        self.loaded.discard(index)
        self.unloads.append(index)

    def on_loaded(self, records: int, index: int | None) -> None:
        self.reports.append((records, index))


class _ClusterReplicas:
    """A replica manager: leads what ``leading`` says; its acks=all waits are recorded."""

    replicated = True

    def __init__(self, partition_of: Any) -> None:
        self.leading: set[tuple[str, int]] = set()
        self.waits: list[tuple[dict[tuple[str, int], int], int]] = []
        self._partition_of = partition_of

    def append_records(self, entries: Any, required_acks: int, origin: AppendOrigin = AppendOrigin.CLIENT,
                       check: Any = None) -> Any:
        return append_records(entries, required_acks, origin, partition_of=self._partition_of,
                              leader_error=self.leader_error, wait=self.wait_for_acks, check=check)

    def leader_error(self, topic: str, index: int) -> ErrorCode | None:
        if (topic, index) in self.leading:
            return None
        # as the real one: a partition the cluster does not have (this fake: not held here) is unknown
        return ErrorCode.NOT_LEADER_OR_FOLLOWER if self._partition_of(topic, index) is not None \
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    async def wait_for_acks(self, required: dict[tuple[str, int], int], timeout_ms: int) -> dict[tuple[str, int], ErrorCode]:
        self.waits.append((dict(required), timeout_ms))
        return dict.fromkeys(required, ErrorCode.NONE)


class _Broker:
    """The slice of BrokerState a host reads; partitions are real logs under ``tmp_path``."""

    def __init__(self, tmp_path: Any, *, cluster_mode: bool = False, configured: int = 3,
                 load_buffer_size: int = 5 << 20) -> None:
        self._dir = tmp_path
        self.static_config = SimpleNamespace(cluster_mode=cluster_mode)
        self.config = {"offsets.topic.num.partitions": configured, "offsets.load.buffer.size": load_buffer_size,
                       "offsets.commit.timeout.ms": 5000}
        self.clock = ManualClock(1_700_000_000_000)
        self.topics: dict[str, TopicInfo] = {}
        self.partitions: dict[tuple[str, int], Any] = {}
        self.replicas: Any = _ClusterReplicas(self.partition) if cluster_mode else LocalReplicas(self.partition)
        self.created: list[tuple[str, int, dict[str, str] | None]] = []
        self.creations = SimpleNamespace(ensure_topic=self._ensure_off_loop)

    def partition(self, topic: str, index: int) -> Any:
        return self.partitions.get((topic, index))

    def open_partition(self, topic: str, index: int, *, min_isr: int = 1, isr: tuple[int, ...] = (1,)) -> Partition:
        """Single node: its HW follows the log end.  Cluster mode: led here with ``isr``."""
        cluster = self.static_config.cluster_mode
        config = dataclasses.replace(SMALL, min_insync_replicas=min_isr)
        lg = open_log(self._dir, config, clock=self.clock, name=f"{topic}-{index}",
                      high_watermark_follows_log_end=not cluster)
        p = self.partitions[(topic, index)] = Partition(topic, index, lg, FetchWaiters())
        if cluster:
            p.make_leader(1, 0, list(isr), [1, 2, 3], local_id=1, replica_lag_time_max_ms=30_000)
            self.replicas.leading.add((topic, index))
        info = self.topics.setdefault(topic, TopicInfo(topic, 0, True))
        info.partitions = max(info.partitions, index + 1)
        return p

    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> TopicInfo:
        self.created.append((name, partitions, configs))
        for index in range(partitions):
            self.open_partition(name, index)
        return self.topics[name]

    async def _ensure_off_loop(self, name: str, count: int, configs: dict[str, str] | None = None) -> None:
        await asyncio.sleep(0)
        self.create_topic(name, count, configs)


class _Spied:
    """A partition whose leader appends are recorded (acks, origin), or fail with ``failure``."""

    def __init__(self, partition: Partition, failure: BaseException | None = None) -> None:
        self._partition = partition
        self._failure = failure
        self.appends: list[tuple[int, AppendOrigin]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._partition, name)

    def append_records_as_leader(self, records: memoryview, required_acks: int = 1,
                                 origin: AppendOrigin = AppendOrigin.CLIENT) -> Any:
        self.appends.append((required_acks, origin))
        if self._failure is not None:
            raise self._failure
        return self._partition.append_records_as_leader(records, required_acks, origin=origin)


def _host(broker: _Broker, **kw: Any) -> tuple[Any, _Tenant]:
    tenant = _Tenant()
    tenant.host = open_host(broker, broker.replicas, TOPIC, tenant, LOG, **kw)  # type: ignore[arg-type]
    return tenant.host, tenant


def _keyed(keys: list[bytes | None], **kw: Any) -> memoryview:
    return memoryview(bytearray(build_batch([(k, b"v", [], 1_700_000_000_000) for k in keys], **kw)))


# ---------------------------------------------------------------- replay

def test_a_partition_is_replayed_from_log_start_to_log_end_past_the_high_watermark(tmp_path):
    broker = _Broker(tmp_path, cluster_mode=True, load_buffer_size=64)   # one batch a read, at most
    host, tenant = _host(broker)
    p = broker.open_partition(T, 0, isr=(1, 2))   # a follower to wait for: the HW stays at 0
    for i in range(4):
        assert host.append(0, [(b"k%d" % i, b"v")]).error is ErrorCode.NONE
    assert (p.high_watermark, p.log_end_offset) == (0, 4)
    assert host.replay(0, lambda b, r: tenant.records.append((0, r.offset, r.key))) == 4
    assert tenant.records == [(0, i, b"k%d" % i) for i in range(4)]


def test_a_replay_starts_at_the_log_start_even_inside_the_first_batch_read(tmp_path):
    broker = _Broker(tmp_path)
    host, tenant = _host(broker)
    p = broker.open_partition(T, 0)
    p.append_records_as_leader(_keyed([b"a", b"b", b"c"]))
    p.delete_records_before(1)
    host.replay(0, lambda b, r: tenant.records.append((0, r.offset, r.key)))
    assert tenant.records == [(0, 1, b"b"), (0, 2, b"c")]


def test_records_without_a_key_are_not_replayed(tmp_path):
    broker = _Broker(tmp_path)
    host, tenant = _host(broker)
    broker.open_partition(T, 0).append_records_as_leader(_keyed([b"a", None, b"c"]))
    assert host.replay(0, lambda b, r: tenant.records.append((0, r.offset, r.key))) == 2
    assert tenant.records == [(0, 0, b"a"), (0, 2, b"c")]


def test_control_batches_go_to_on_control_and_are_skipped_without_it(tmp_path):
    broker = _Broker(tmp_path)
    host, tenant = _host(broker)
    p = broker.open_partition(T, 0)
    assert host.append(0, [(b"k", b"v")], producer_id=7, producer_epoch=0).error is ErrorCode.NONE
    p.append_records_as_leader(memoryview(marker_batch(commit=True, producer_id=7, producer_epoch=0,
                                                       coordinator_epoch=0, timestamp_ms=1)),
                               origin=AppendOrigin.COORDINATOR)
    records: list[int] = []
    assert host.replay(0, lambda b, r: records.append(r.offset), lambda b: tenant.controls.append(b.base_offset)) == 1
    assert (records, tenant.controls) == ([0], [1])
    assert host.replay(0, lambda b, r: records.append(r.offset)) == 1   # no on_control: skipped


def test_a_partition_this_broker_does_not_hold_replays_nothing(tmp_path):
    host, _ = _host(_Broker(tmp_path))
    assert host.replay(2, lambda b, r: pytest.fail("no partition, no record")) == 0


# ---------------------------------------------------------------- the partition count

def test_the_partition_count_is_pinned_the_first_time_it_is_known(tmp_path):
    host, tenant = _host(_Broker(tmp_path, cluster_mode=True, configured=50))
    assert host.partition_count == 50   # the config's, until the topic says
    assert host.partitions_known(7)
    assert not host.partitions_known(9)
    assert (tenant.pinned, host.partition_count) == ([7], 7)


def test_a_single_node_pins_the_count_of_the_topic_it_finds_on_disk_and_loads_it_at_start_up(tmp_path):
    broker = _Broker(tmp_path, configured=50)
    for index in range(2):
        broker.open_partition(T, index).append_records_as_leader(_keyed([b"g%d" % index]))
    host, tenant = _host(broker)
    host.start()
    assert tenant.pinned == [2]
    assert tenant.loaded == {0, 1} and tenant.records == [(0, 0, b"g0"), (1, 0, b"g1")]
    assert tenant.reports == [(2, None)]   # one report for the whole start-up load


def test_a_single_node_creates_the_topic_with_the_configured_count_on_first_use(tmp_path):
    broker = _Broker(tmp_path, configured=3)
    host, tenant = _host(broker)
    assert isinstance(host, LocalTopicHost)
    host.start()
    assert tenant.loaded == {0, 1, 2} and tenant.pinned == []   # owned before the topic exists
    assert host.append(1, [(b"k", b"v")]).error is ErrorCode.NONE
    assert broker.created == [(T, 3, {"cleanup.policy": "compact"})]
    assert tenant.pinned == [3]
    host.ensure()
    assert len(broker.created) == 1


def test_a_single_node_creates_the_topic_off_the_loop_for_find_coordinator(tmp_path):
    broker = _Broker(tmp_path, configured=2)
    host, tenant = _host(broker)
    host.start()
    asyncio.run(host.create_off_loop())
    assert broker.created == [(T, 2, {"cleanup.policy": "compact"})] and tenant.pinned == [2]


def test_a_single_node_loads_the_partitions_a_larger_pinned_count_adds(tmp_path):
    broker = _Broker(tmp_path, configured=2)
    host, tenant = _host(broker)
    host.start()
    broker.create_topic(T, 4)   # created by a client, with its own count
    host.ensure()
    assert tenant.pinned == [4] and tenant.loaded == {0, 1, 2, 3}


# ---------------------------------------------------------------- leadership

def test_in_cluster_mode_a_partition_is_loaded_when_leadership_arrives_and_unloaded_when_it_goes(tmp_path):
    broker = _Broker(tmp_path, cluster_mode=True)
    host, tenant = _host(broker)
    assert isinstance(host, ZkTopicHost)
    host.start()
    host.ensure()
    assert (tenant.loaded, broker.created) == (set(), [])   # FindCoordinator creates it, through ZooKeeper
    broker.open_partition(T, 1).append_records_as_leader(_keyed([b"a", b"b"]), -1)
    host.leadership(1, True)
    assert tenant.loaded == {1} and tenant.reports == [(2, 1)]
    host.leadership(1, True)   # a new leader epoch: the tenant holds it already, no report
    assert tenant.reports == [(2, 1)]
    host.leadership(1, False)
    assert tenant.loaded == set() and tenant.unloads == [1]


def test_the_leader_epoch_is_the_partitions_or_zero_without_one(tmp_path):
    broker = _Broker(tmp_path, cluster_mode=True)
    host, _ = _host(broker)
    broker.open_partition(T, 0)
    assert (host.leader_epoch(0), host.leader_epoch(1)) == (1, 0)


# ---------------------------------------------------------------- appends

def test_an_append_is_one_acks_all_coordinator_batch_and_a_transactional_one_carries_its_producer(tmp_path):
    broker = _Broker(tmp_path)
    host, _ = _host(broker)
    p = broker.partitions[(T, 0)] = _Spied(broker.open_partition(T, 0))
    assert host.append(0, [(b"a", b"1"), (b"b", None)]) == (ErrorCode.NONE, 0, 0, 2)
    assert host.append(0, [(b"c", b"2")], producer_id=9, producer_epoch=3) == (ErrorCode.NONE, 0, 2, 3)
    assert p.appends == [(-1, AppendOrigin.COORDINATOR)] * 2
    plain, txn = iter_batches(p.read(0, 1 << 20, True).records)
    assert (plain.is_transactional, plain.producer_id, [r.value for r in plain.records()]) == (False, -1, [b"1", None])
    assert (txn.is_transactional, txn.producer_id, txn.producer_epoch, txn.base_sequence) == (True, 9, 3, 0)


def test_an_append_below_min_isr_is_refused_with_not_enough_replicas(tmp_path):
    broker = _Broker(tmp_path, cluster_mode=True)
    host, _ = _host(broker)
    p = broker.open_partition(T, 0, min_isr=2, isr=(1,))
    assert host.append(0, [(b"k", b"v")]) == (ErrorCode.NOT_ENOUGH_REPLICAS, 0, -1, -1)
    assert p.log_end_offset == 0


def test_an_append_to_a_partition_this_broker_does_not_lead_is_refused_with_not_leader_or_follower(tmp_path):
    broker = _Broker(tmp_path, cluster_mode=True)
    host, _ = _host(broker)
    p = broker.open_partition(T, 0)
    broker.replicas.leading.clear()
    assert host.append(0, [(b"k", b"v")]).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert p.log_end_offset == 0


def test_an_append_to_a_partition_this_broker_does_not_hold_answers_unknown_topic_or_partition(tmp_path):
    host, _ = _host(_Broker(tmp_path, cluster_mode=True))
    assert host.append(4, [(b"k", b"v")]) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 4, -1, -1)


@pytest.mark.parametrize(("failure", "code"), [
    (RecordTooLargeError("over max.message.bytes"), ErrorCode.MESSAGE_TOO_LARGE),
    (OSError(5, "Input/output error"), ErrorCode.KAFKA_STORAGE_ERROR),
    (RuntimeError("a bug"), ErrorCode.UNKNOWN_SERVER_ERROR),
])
def test_a_failed_append_is_an_error_code_not_an_exception(tmp_path, failure, code):
    broker = _Broker(tmp_path)
    host, _ = _host(broker)
    broker.partitions[(T, 0)] = _Spied(broker.open_partition(T, 0), failure)
    assert host.append(0, [(b"k", b"v")]) == (code, 0, -1, -1)


def test_the_partition_is_chosen_once_the_topic_is_ensured(tmp_path):
    broker = _Broker(tmp_path, configured=3)
    host, tenant = _host(broker)
    host.start()
    chosen = host.append(lambda: tenant.pinned[-1] - 1, [(b"k", b"v")])   # needs the pinned count
    assert chosen == (ErrorCode.NONE, 2, 0, 1)


# ---------------------------------------------------------------- waiting for the ISR

def test_a_single_nodes_outcome_is_the_appends_own_and_a_cluster_waits_in_the_replicas_with_the_topics_timeout(tmp_path):
    local, _ = _host(_Broker(tmp_path / "single"))
    assert not local.waits_for_acks
    broker = _Broker(tmp_path / "cluster", cluster_mode=True)
    host, _ = _host(broker)
    assert host.waits_for_acks
    assert asyncio.run(host.wait_for_acks({0: 5, 2: 1})) == {0: ErrorCode.NONE, 2: ErrorCode.NONE}
    assert broker.replicas.waits == [({(T, 0): 5, (T, 2): 1}, 5000)]
    assert asyncio.run(host.wait_for_acks({})) == {}
    assert len(broker.replicas.waits) == 1   # nothing to wait for: no wait


def test_the_slow_append_test_seam_makes_a_single_nodes_outcomes_late(tmp_path):
    host, _ = _host(_Broker(tmp_path), slow_append_ms=40)
    assert host.waits_for_acks

    async def timed() -> list[float]:
        loop = asyncio.get_running_loop()
        spent = []
        for _ in range(3):
            start = loop.time()
            assert await host.wait_for_acks({0: 1}) == {0: ErrorCode.NONE}
            spent.append(loop.time() - start)
        return spent

    first, second, third = asyncio.run(timed())   # 1/2, 1, 0 times the seam's ms
    assert first >= 0.015 and second >= 0.035 and third < 0.015


def test_stop_ends_the_waits_left(tmp_path):
    host, _ = _host(_Broker(tmp_path, cluster_mode=True))

    async def scenario() -> asyncio.Task[Any]:
        task = host.spawn(asyncio.sleep(60))
        await host.stop()
        return task

    assert asyncio.run(scenario()).cancelled()
