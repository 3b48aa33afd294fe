"""Metadata's per-topic answers are cached (kbroker/metadata/metadata_view.py) and every change of a
topic is in the very next answer: creation, deletion, partition count, topic id, and in
cluster mode leader, ISR, leader epoch, replicas and a broker going away."""

from __future__ import annotations

import uuid

import pytest

import kbroker.handlers  # noqa: F401  (registers the handlers)
from kbroker.app.wiring import build_services
from kbroker.configs.config import BrokerConfig
from kbroker.metadata.metadata_cache import MetadataCache
from kbroker.metadata.metadata_view import ClusterMetadata
from kbroker.replica.broker_state import BrokerState
from kbroker.server.registry import REGISTRY
from kbroker.server.services import Services
from tests.support.fakes import context, fixed_config, services
from wire.error_codes import ErrorCode
from wire.messages import DescribeTopicPartitionsRequest, MetadataRequest, UpdateMetadataRequest

U = UpdateMetadataRequest


def metadata(svc: Services, names=None, version=12):
    topics = None if names is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in names]
    return REGISTRY.get(3).handler(context(3, version, svc), MetadataRequest(topics=topics,
                                                                             allow_auto_topic_creation=False))


def rows(svc: Services, name, version=12):
    (t,) = [t for t in metadata(svc, [name], version).topics]
    return t.error_code, t.topic_id, [(p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes,
                                       p.isr_nodes, p.offline_replicas) for p in t.partitions]


# ------------------------------------------------------------------ single node

@pytest.fixture
def state(tmp_path):
    s = BrokerState(BrokerConfig({"log.dirs": str(tmp_path), "auto.create.topics.enable": "false"}))
    s.create_topic("t", 2)
    yield s
    s.shutdown()


@pytest.fixture
def single(state):
    return build_services(state)


def test_an_unchanged_topic_answers_from_the_cache_with_the_same_partition_entries(single):
    first, second = metadata(single, ["t"]).topics[0], metadata(single, ["t"]).topics[0]
    assert second.partitions is first.partitions
    assert [p.partition_index for p in second.partitions] == [0, 1]


def test_added_partitions_are_in_the_next_metadata_answer(state, single):
    assert len(rows(single, "t")[2]) == 2
    state.add_partitions("t", 5)
    assert [r[0] for r in rows(single, "t")[2]] == [0, 1, 2, 3, 4]


def test_a_deleted_topic_is_unknown_in_the_next_answer_and_created_again_has_its_new_id_and_count(state, single):
    code, old_id, _ = rows(single, "t")
    state.finish_topic_deletion("t", state.delete_topic("t"))
    assert rows(single, "t")[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    state.create_topic("t", 3)
    code, new_id, parts = rows(single, "t")
    assert (code, len(parts)) == (0, 3)
    assert new_id not in (old_id, uuid.UUID(int=0))
    assert [t.name for t in metadata(single).topics] == ["t"]


def test_a_new_topic_is_in_the_next_answer_for_all_topics(state, single):
    assert [t.name for t in metadata(single).topics] == ["t"]
    state.create_topic("u", 1)
    assert sorted(t.name for t in metadata(single).topics) == ["t", "u"]


# ------------------------------------------------------------------ cluster (metadata cache)

def update(cache: MetadataCache, brokers=(1, 2, 3), topics=()) -> None:
    """topics: (name, topic id, [(index, leader, epoch, isr, replicas)])."""
    cache.apply_update_metadata(U(
        controller_id=1, controller_epoch=1,
        live_brokers=[U.UpdateMetadataBroker(id=b, endpoints=[U.UpdateMetadataEndpoint(
            port=9090 + b, host="127.0.0.1", listener="PLAINTEXT", security_protocol=0)], rack=None)
            for b in brokers],
        topic_states=[U.UpdateMetadataTopicState(topic_name=name, topic_id=tid, partition_states=[
            U.UpdateMetadataPartitionState(topic_name=name, partition_index=i, controller_epoch=1, leader=leader,
                                           leader_epoch=epoch, isr=list(isr), zk_version=epoch,
                                           replicas=list(replicas), offline_replicas=[])
            for i, leader, epoch, isr, replicas in parts]) for name, tid, parts in topics]))


TID = uuid.UUID(int=7)


@pytest.fixture
def cache():
    cache = MetadataCache(broker_id=1)
    update(cache, topics=[("t", TID, [(0, 1, 0, [1, 2, 3], [1, 2, 3]), (1, 2, 0, [2, 3, 1], [2, 3, 1])])])
    return cache


@pytest.fixture
def cluster(tmp_path, cache):
    """A cluster-mode broker's ports for Metadata: its metadata cache, broker 1 the controller."""
    config = fixed_config({"log.dirs": str(tmp_path), "auto.create.topics.enable": "false"})
    return services(config=config, metadata=ClusterMetadata("PLAINTEXT", cache, lambda: 1), cluster_id="c")


def test_an_unchanged_topic_answers_from_the_metadata_cache_with_the_same_partition_entries(cluster):
    first, second = metadata(cluster, ["t"]).topics[0], metadata(cluster, ["t"]).topics[0]
    assert second.partitions is first.partitions


def test_a_leader_isr_and_epoch_change_is_in_the_next_answer(cluster, cache):
    assert rows(cluster, "t")[2][0] == (0, 0, 1, 0, [1, 2, 3], [1, 2, 3], [])
    update(cache, topics=[("t", TID, [(0, 2, 1, [2, 3], [1, 2, 3])])])
    assert rows(cluster, "t")[2] == [(0, 0, 2, 1, [1, 2, 3], [2, 3], []), (1, 0, 2, 0, [2, 3, 1], [2, 3, 1], [])]


def test_a_change_of_one_partition_rebuilds_that_partition_and_keeps_the_others_entries(cluster, cache):
    before = metadata(cluster, ["t"]).topics[0].partitions
    update(cache, topics=[("t", TID, [(1, 3, 5, [3], [2, 3, 1])])])
    after = metadata(cluster, ["t"]).topics[0].partitions
    assert after[0] is before[0]
    assert (after[1].leader_id, after[1].leader_epoch, after[1].isr_nodes) == (3, 5, [3])


def test_a_reassignment_is_in_the_next_answer(cluster, cache):
    rows(cluster, "t")
    update(cache, topics=[("t", TID, [(1, 2, 1, [2, 3], [2, 3])])])
    assert rows(cluster, "t")[2][1] == (1, 0, 2, 1, [2, 3], [2, 3], [])


def test_a_broker_going_away_makes_its_leaders_unavailable_and_its_replicas_offline_in_the_next_answer(cluster, cache):
    rows(cluster, "t")
    update(cache, brokers=(1, 3))   # no partition state changes: only the live brokers
    assert rows(cluster, "t")[2] == [
        (0, 0, 1, 0, [1, 2, 3], [1, 2, 3], [2]),
        (1, ErrorCode.LEADER_NOT_AVAILABLE, -1, 0, [2, 3, 1], [2, 3, 1], [2])]
    # v0 lists live replicas only and answers REPLICA_NOT_AVAILABLE: cached apart from v1+
    assert rows(cluster, "t", version=0)[2][0] == (0, ErrorCode.REPLICA_NOT_AVAILABLE, 1, 0, [1, 3], [1, 3], [2])
    update(cache, brokers=(1, 2, 3))
    assert rows(cluster, "t")[2][1] == (1, 0, 2, 0, [2, 3, 1], [2, 3, 1], [])
    assert rows(cluster, "t", version=0)[2][0] == (0, 0, 1, 0, [1, 2, 3], [1, 2, 3], [])


def test_new_partitions_and_a_deletion_are_in_the_next_answer(cluster, cache):
    rows(cluster, "t")
    update(cache, topics=[("t", TID, [(2, 3, 0, [3], [3])])])
    assert [r[0] for r in rows(cluster, "t")[2]] == [0, 1, 2]
    update(cache, topics=[("t", TID, [(i, -2, 0, [], []) for i in range(3)])])  # LeaderDuringDelete
    assert rows(cluster, "t")[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert metadata(cluster).topics == []


def test_a_topic_created_again_answers_its_new_id_and_partitions(cluster, cache):
    rows(cluster, "t")
    update(cache, topics=[("t", TID, [(i, -2, 0, [], []) for i in range(2)])])
    new_id = uuid.UUID(int=8)
    update(cache, topics=[("t", new_id, [(0, 3, 0, [3], [3])])])
    assert rows(cluster, "t") == (0, new_id, [(0, 0, 3, 0, [3], [3], [])])


def test_describe_topic_partitions_sees_a_leader_change_made_after_a_metadata_answer(cluster, cache):
    rows(cluster, "t")
    update(cache, topics=[("t", TID, [(0, 3, 4, [3], [1, 2, 3])])])
    resp = REGISTRY.get(75).handler(context(75, 0, cluster), DescribeTopicPartitionsRequest(
        topics=[DescribeTopicPartitionsRequest.TopicRequest(name="t")], response_partition_limit=10))
    assert [(p.partition_index, p.leader_id, p.leader_epoch, p.isr_nodes) for p in resp.topics[0].partitions] == [
        (0, 3, 4, [3]), (1, 2, 0, [2, 3, 1])]
