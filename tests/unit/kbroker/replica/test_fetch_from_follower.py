"""Fetch from follower (KIP-392) without processes: the rack-aware selector
(kbroker/replica/replica_selector.py), the Fetch handler's leader and follower paths
(kbroker/handlers/fetch.py) over real partitions, reads between the HW and the LEO
(kbroker/replica/partition.py) and the replica.selector.class config."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cluster.partition_state import PartitionState
from kbroker.configs.config import BrokerConfig, ConfigError
from kbroker.handlers.fetch import _read_all
from kbroker.metadata.metadata_view import BrokerView
from kbroker.replica.replica_selector import (
    RACK_AWARE_SELECTOR,
    ReplicaView,
    preferred_read_replica,
    select_rack_aware,
)
from log.errors import OffsetOutOfRangeError
from tests.support.fakes import context as fake_context
from tests.support.fakes import services
from tests.unit.kbroker.replica.test_partition_replication import replicated
from tests.unit.log.helpers import batch
from wire.error_codes import ErrorCode
from wire.messages import FetchRequest

RACKS = {1: "r1", 2: "r2", 3: "r3"}


# -- the selector -----------------------------------------------------------------------------

def view(broker_id: int, rack: str | None, leo: int = 10, lag_ms: int = 0) -> ReplicaView:
    return ReplicaView(broker_id, rack, leo, lag_ms)


def test_the_rack_aware_selector_picks_the_leader_without_a_client_rack_or_a_replica_in_it():
    leader = view(1, "r1")
    replicas = [leader, view(2, "r2"), view(3, "r3")]
    assert select_rack_aware("", leader, replicas) is leader
    assert select_rack_aware("r9", leader, replicas) is leader


def test_the_rack_aware_selector_keeps_the_leader_when_it_shares_the_clients_rack():
    leader = view(1, "r1")
    assert select_rack_aware("r1", leader, [leader, view(2, "r1", leo=99)]) is leader


def test_the_rack_aware_selector_picks_the_most_caught_up_replica_of_the_clients_rack():
    leader = view(1, "r1")
    behind, ahead, fresher = view(2, "r2", leo=8), view(3, "r2", leo=10, lag_ms=50), view(4, "r2", leo=10)
    assert select_rack_aware("r2", leader, [leader, behind, ahead, fresher]) is fresher


def leader_state(isr=(1, 2, 3)) -> PartitionState:
    rep = PartitionState(1, 30_000)
    rep.make_leader(1, 0, list(isr), [1, 2, 3], 10, 1_000)
    return rep


def racks(broker_id: int) -> tuple[bool, str | None]:
    return (broker_id in RACKS, RACKS.get(broker_id))


def test_a_follower_is_preferred_only_while_in_the_isr_and_holding_the_fetch_offset():
    rep = leader_state()
    rep.update_follower_fetch_state(2, 10, 0, 1_000, 10)
    rep.update_follower_fetch_state(3, 6, 4, 1_000, 10)
    assert preferred_read_replica(rep, 10, 10, "r2", racks, 1_000) == 2
    assert preferred_read_replica(rep, 10, 10, "r1", racks, 1_000) == -1   # the leader's own rack
    assert preferred_read_replica(rep, 10, 7, "r3", racks, 1_000) == -1    # broker 3's LEO is 6
    assert preferred_read_replica(rep, 10, 3, "r3", racks, 1_000) == -1    # broker 3's log starts at 4
    assert preferred_read_replica(rep, 10, 5, "r3", racks, 1_000) == 3
    not_in_isr = leader_state(isr=(1, 3))
    not_in_isr.update_follower_fetch_state(2, 10, 0, 1_000, 10)
    assert preferred_read_replica(not_in_isr, 10, 10, "r2", racks, 1_000) == -1
    unknown_broker = leader_state()
    unknown_broker.update_follower_fetch_state(2, 10, 0, 1_000, 10)
    assert preferred_read_replica(unknown_broker, 10, 10, "r2", lambda b: (b != 2, RACKS.get(b)), 1_000) == -1


# -- the handler ------------------------------------------------------------------------------

class FakeReplicas:
    """The replica manager as the Fetch handler sees it."""

    def __init__(self, node_id: int, partition, leading: bool) -> None:
        self.partition = partition
        self.leading = leading
        self.node_id = node_id

    replicated = True
    reads_from_followers = True

    def is_follower(self, replica_id: int) -> bool:
        return replica_id >= 0

    def leader_error(self, topic: str, index: int):
        return None if self.leading else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def follower_partition(self, topic: str, index: int):
        return None if self.leading else self.partition


def context(partition, node_id: int, leading: bool, version: int, selector: str | None = RACK_AWARE_SELECTOR):
    props = {"replica.selector.class": selector} if selector else {}
    live = [BrokerView(b, "127.0.0.1", 9090 + b, rack) for b, rack in sorted(RACKS.items())]
    ports = services(replicas=FakeReplicas(node_id, partition, leading), node_id=node_id,
                     config=SimpleNamespace(config=BrokerConfig(props)),
                     catalog=SimpleNamespace(partition=lambda t, i: partition if (t, i) == ("t", 0) else None),
                     metadata=SimpleNamespace(view=lambda: SimpleNamespace(brokers=lambda: live)))
    return fake_context(1, version, ports)


def consumer_fetch(offset: int, rack: str, epoch: int = -1) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic="t", partitions=[
                            FetchRequest.FetchPartition(partition=0, current_leader_epoch=epoch, fetch_offset=offset,
                                                        last_fetched_epoch=-1, log_start_offset=-1,
                                                        partition_max_bytes=1 << 20)])],
                        forgotten_topics_data=[], rack_id=rack)


def answer(ctx, req):
    resp, total, errors = _read_all(ctx, req)
    return resp.responses[0].partitions[0], total, errors


@pytest.fixture
def leader(tmp_path):
    """Broker 1 leads t-0 at epoch 1 (ISR 1,2,3): 5 records, both followers fetched them all."""
    p = replicated(tmp_path / "leader")
    p.make_leader(1, 0, [1, 2, 3], [1, 2, 3], local_id=1, replica_lag_time_max_ms=30_000)
    p.append_records_as_leader(memoryview(batch(5)), -1)
    for f in (2, 3):
        assert p.update_follower_fetch_state(f, 5, 0, 5)
    assert p.high_watermark == 5
    return p


@pytest.fixture
def follower(tmp_path):
    """Broker 2 follows t-0 at epoch 1: LEO 5, HW 3."""
    p = replicated(tmp_path / "follower")
    p.append_records_as_follower(batch(3, base_offset=0, partition_leader_epoch=1))   # epoch 1 from 0
    p.append_records_as_follower(batch(2, base_offset=3, partition_leader_epoch=1))
    p.update_offsets_from_leader(3, 0)
    p.make_follower(1)
    return p


def test_the_leader_names_a_follower_in_the_consumers_rack_and_sends_no_records(leader):
    pd, total, done = answer(context(leader, 1, True, 12), consumer_fetch(2, "r2"))
    assert (pd.error_code, pd.preferred_read_replica, pd.records, total) == (ErrorCode.NONE, 2, b"", 0)
    assert (pd.high_watermark, pd.last_stable_offset, pd.log_start_offset) == (5, 5, 0)
    assert done   # answered at once, as Kafka completes a fetch naming a preferred replica


def test_the_leader_serves_itself_without_a_selector_a_rack_a_v11_request_or_a_same_rack_client(leader):
    for ctx, req in [(context(leader, 1, True, 12, selector=None), consumer_fetch(0, "r2")),
                     (context(leader, 1, True, 12), consumer_fetch(0, "")),
                     (context(leader, 1, True, 10), consumer_fetch(0, "r2")),
                     (context(leader, 1, True, 11), consumer_fetch(0, "r1"))]:
        pd, total, _ = answer(ctx, req)
        assert pd.error_code == ErrorCode.NONE and pd.preferred_read_replica == -1 and total > 0


def test_the_leaders_epoch_checks_come_before_the_selection(leader):
    pd, _, _ = answer(context(leader, 1, True, 12), consumer_fetch(0, "r2", epoch=0))
    assert (pd.error_code, pd.preferred_read_replica) == (ErrorCode.FENCED_LEADER_EPOCH, -1)
    pd, _, _ = answer(context(leader, 1, True, 12), consumer_fetch(0, "r2", epoch=2))
    assert pd.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_a_follower_serves_a_v11_consumer_fetch_up_to_its_own_high_watermark(follower):
    pd, total, _ = answer(context(follower, 2, False, 11), consumer_fetch(0, "r2"))
    assert (pd.error_code, pd.preferred_read_replica, pd.high_watermark) == (ErrorCode.NONE, -1, 3)
    assert total == len(batch(3, base_offset=0, partition_leader_epoch=1))   # the first batch only


def test_a_follower_answers_no_records_between_its_hw_and_leo_and_out_of_range_past_its_leo(follower):
    pd, total, _ = answer(context(follower, 2, False, 12), consumer_fetch(4, "r2"))
    assert (pd.error_code, total, pd.high_watermark) == (ErrorCode.NONE, 0, 3)
    pd, _, _ = answer(context(follower, 2, False, 12), consumer_fetch(6, "r2"))
    assert pd.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_follower_refuses_v10_consumer_fetches_and_checks_the_leader_epoch(follower):
    pd, _, _ = answer(context(follower, 2, False, 10), consumer_fetch(0, "r2"))
    assert pd.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    pd, _, _ = answer(context(follower, 2, False, 12), consumer_fetch(0, "r2", epoch=0))
    assert pd.error_code == ErrorCode.FENCED_LEADER_EPOCH
    pd, _, _ = answer(context(follower, 2, False, 12), consumer_fetch(0, "r2", epoch=2))
    assert pd.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_a_leader_read_between_hw_and_leo_is_empty_and_past_the_leo_out_of_range(tmp_path):
    p = replicated(tmp_path)
    p.make_leader(1, 0, [1, 2], [1, 2], local_id=1, replica_lag_time_max_ms=30_000)
    p.append_records_as_leader(memoryview(batch(3)), 1)
    assert (p.high_watermark, p.log_end_offset) == (0, 3)
    assert p.read(2, 1 << 20, True).records == b""
    with pytest.raises(OffsetOutOfRangeError):
        p.read(4, 1 << 20, True)


# -- config -----------------------------------------------------------------------------------

def test_replica_selector_class_defaults_to_none_and_accepts_only_kafkas_rack_aware_selector():
    assert BrokerConfig({})["replica.selector.class"] is None
    assert BrokerConfig({"replica.selector.class": RACK_AWARE_SELECTOR})["replica.selector.class"] == RACK_AWARE_SELECTOR
    with pytest.raises(ConfigError, match="replica.selector.class"):
        BrokerConfig({"replica.selector.class": "com.example.MySelector"})
