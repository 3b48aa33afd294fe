"""GroupService appends each coordinator write and reports its outcome: a log error becomes
the code the coordinator maps (never an exception out of the handler), and groups are hashed
over the partition count ``__consumer_offsets`` really has."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from groups import partition_for
from kbroker.coordinators.group_service import GroupService
from kbroker.handlers.groups import handle_offset_commit
from kbroker.metadata.metadata_view import SingleNodeView
from kbroker.replica.local_replicas import LocalReplicas
from log.clock import ManualClock
from log.errors import RecordTooLargeError
from tests.support.fakes import context, services
from tests.unit.groups.helpers import GROUP, join_req, sync_req
from wire.error_codes import ErrorCode
from wire.messages import OffsetCommitRequest, OffsetFetchRequest

OFFSETS = "__consumer_offsets"


class _Log:
    def __init__(self) -> None:
        self.batches: list[bytes] = []
        self.fail: BaseException | None = None

    def append_as_leader(self, records, leader_epoch, origin=None):
        if self.fail is not None:
            raise self.fail
        self.batches.append(bytes(records))
        return _Appended(len(self.batches) - 1)


@dataclass
class _Appended:
    last_offset: int

    @property
    def first_offset(self) -> int:  # one batch stands for one offset here
        return self.last_offset


class _Partition:
    leader_epoch = 0
    log_start_offset = 0
    high_watermark = 0
    log_end_offset = 0   # nothing to replay: the service reads up to the log end

    def __init__(self) -> None:
        self.log = _Log()

    def append_records_as_leader(self, records, required_acks=1, origin=None):
        return self.log.append_as_leader(records, self.leader_epoch, origin)


@dataclass
class _Topic:
    name: str
    partitions: int


class _State:
    """The slice of BrokerState that GroupService and its internal-topic host use (and the
    single-node metadata view the OffsetCommit handler reads): a single node."""

    def __init__(self, offsets_partitions: int | None, configured: int = 50) -> None:
        self.clock = ManualClock(1_000_000)
        self.static_config = SimpleNamespace(cluster_mode=False)
        self.replicas = LocalReplicas(self.partition)
        self.config = {
            "offsets.topic.num.partitions": configured, "offsets.topic.segment.bytes": 1 << 20,
            "offsets.load.buffer.size": 5 << 20, "offsets.commit.timeout.ms": 5000,
            "group.min.session.timeout.ms": 6000, "group.max.session.timeout.ms": 1800000,
            "group.initial.rebalance.delay.ms": 0, "group.max.size": 100,
            "offsets.retention.minutes": 10080, "offsets.retention.check.interval.ms": 600000,
            "group.consumer.session.timeout.ms": 45000, "group.consumer.heartbeat.interval.ms": 5000,
            "group.consumer.max.size": 100, "group.consumer.assignors": ["uniform", "range"],
            "group.consumer.assignment.interval.ms": 1000,
            "group.consumer.migration.policy": "bidirectional",
        }
        self.topics: dict[str, _Topic] = {"t": _Topic("t", 1)}
        self.partitions = {("t", 0): _Partition()}
        if offsets_partitions is not None:
            self.create_topic(OFFSETS, offsets_partitions, {})
        self.groups = GroupService(self, self.replicas)  # type: ignore[arg-type]

    def create_topic(self, name: str, partitions: int, configs: dict) -> None:
        self.topics[name] = _Topic(name, partitions)
        for i in range(partitions):
            self.partitions[(name, i)] = _Partition()

    def partition(self, topic: str, index: int):
        return self.partitions.get((topic, index))

    def offsets_log(self, group: str) -> _Log:
        return self.partitions[(OFFSETS, self.groups.coordinator.partition_for(group))].log


class _Metadata:
    """The metadata port over the fake state: the cluster is this node."""

    def __init__(self, state: _State) -> None:
        self.state = state

    def view(self) -> SingleNodeView:
        return SingleNodeView(self.state)  # type: ignore[arg-type]


def _commit(state: _State, group: str, offset: int) -> list[int]:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                              topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                                  OffsetCommitRequest.OffsetCommitRequestPartition(
                                      partition_index=0, committed_offset=offset)])])
    ports = services(groups=state.groups, metadata=_Metadata(state))
    resp = handle_offset_commit(context(8, 8, ports), req)
    return [p.error_code for t in resp.topics for p in t.partitions]


def _fetched(state: _State, group: str) -> int:
    svc = state.groups
    req = OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
        name="t", partition_indexes=[0])])
    return svc.answer(svc.coordinator.offset_fetch(req, 7)).topics[0].partitions[0].committed_offset


def test_groups_are_hashed_over_the_partitions_the_offsets_topic_has_not_the_config():
    state = _State(offsets_partitions=3, configured=50)
    assert state.groups.coordinator.offsets_topic_partitions == 3
    assert _commit(state, "g", 7) == [0]
    assert len(state.partitions[(OFFSETS, partition_for("g", 3))].log.batches) == 1


def test_a_new_offsets_topic_is_created_with_the_configured_count_and_keeps_it():
    state = _State(offsets_partitions=None, configured=5)
    assert _commit(state, "g", 7) == [0]
    assert state.topics[OFFSETS].partitions == 5
    assert state.groups.coordinator.offsets_topic_partitions == 5


@pytest.mark.parametrize(("failure", "answer"), [
    (RecordTooLargeError("batch over max.message.bytes"), ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
    (OSError(5, "Input/output error"), ErrorCode.NOT_COORDINATOR),
    (RuntimeError("a bug"), ErrorCode.UNKNOWN_SERVER_ERROR),
])
def test_a_failed_offsets_append_is_answered_with_the_mapped_error_and_not_fetched(failure, answer):
    state = _State(offsets_partitions=3)
    assert _commit(state, "g", 5) == [0]
    state.offsets_log("g").fail = failure
    assert _commit(state, "g", 9) == [answer]
    assert _fetched(state, "g") == 5


def test_a_missing_offsets_partition_answers_coordinator_not_available():
    state = _State(offsets_partitions=3)
    del state.partitions[(OFFSETS, partition_for("g", 3))]
    assert _commit(state, "g", 9) == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert _fetched(state, "g") == -1


def test_a_sync_group_whose_assignment_append_fails_answers_not_coordinator():
    state = _State(offsets_partitions=3)
    svc = state.groups

    async def scenario():
        first = svc.answer(svc.coordinator.join_group(join_req(), 7, client_id="c"))
        member = first.member_id  # MEMBER_ID_REQUIRED
        # Parked until the join phase ends (a 0 ms initial delay: the loop timer fires it).
        joined = await asyncio.wait_for(
            svc.answer(svc.coordinator.join_group(join_req(member), 7, client_id="c")), 60)
        assert joined.error_code == 0 and joined.leader == member
        state.offsets_log(GROUP).fail = OSError(5, "Input/output error")
        req = sync_req(member, joined.generation_id, {member: b"A"})
        return svc.answer(svc.coordinator.sync_group(req, 5))

    resp = asyncio.run(scenario())
    assert resp.error_code == ErrorCode.NOT_COORDINATOR and resp.assignment == b""
