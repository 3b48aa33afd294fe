"""Metadata's per-topic answer over the cluster metadata view (kbroker/metadata/metadata_view.py),
the one code path both modes share: Kafka's getPartitionMetadata errors and v0 filtering."""

from __future__ import annotations

import uuid

from kbroker.handlers.metadata import TOPIC_OPERATIONS, metadata_topic
from tests.unit.kbroker.handlers.test_describe_topic_partitions import cluster_view
from wire.error_codes import ErrorCode


def rows(version: int) -> list[tuple]:
    view = cluster_view()
    topic = view.topic("t")
    assert topic is not None
    t = metadata_topic(view, topic, TOPIC_OPERATIONS, version)
    assert (t.error_code, t.topic_id, t.topic_authorized_operations) == (0, uuid.UUID(int=42), TOPIC_OPERATIONS)
    return [(p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes,
             p.offline_replicas) for p in t.partitions]


def test_metadata_lists_every_replica_and_answers_leader_not_available_for_a_dead_leader():
    assert rows(12) == [
        (0, ErrorCode.NONE, 1, 4, [1, 2, 3], [1, 2], [3]),
        (1, ErrorCode.LEADER_NOT_AVAILABLE, -1, 7, [3, 2, 1], [3], [3]),
    ]


def test_metadata_v0_lists_live_replicas_only_and_answers_replica_not_available_when_one_is_missing():
    assert rows(0) == [
        (0, ErrorCode.REPLICA_NOT_AVAILABLE, 1, 4, [1, 2], [1, 2], [3]),
        (1, ErrorCode.LEADER_NOT_AVAILABLE, -1, 7, [2, 1], [], [3]),
    ]


def test_the_cluster_view_lists_live_brokers_on_the_listener_and_the_runtimes_controller():
    view = cluster_view()
    assert [(b.node_id, b.host, b.port, b.rack) for b in view.brokers()] == [
        (1, "127.0.0.1", 9091, None), (2, "127.0.0.1", 9092, None)]
    assert (view.controller_id, view.topic_names(), view.has_topic("t"), view.has_topic("u")) == (
        2, ["t"], True, False)
