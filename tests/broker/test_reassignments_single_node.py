"""AlterPartitionReassignments / ListPartitionReassignments on a single-node broker, through
kafka-python's admin client: the only broker already holds every replica."""

from __future__ import annotations

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

from kbroker import Broker


def test_a_single_node_accepts_only_itself_as_the_replica_set_and_lists_nothing_in_progress(tmp_path):
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path), "node.id": "1"}) as b:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers, request_timeout_ms=30000)
        try:
            admin.create_topics([NewTopic("t", 2, 1)])
            t0, t1, gone = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 7)
            result = admin.alter_partition_reassignments({t0: [1], t1: [1, 2], gone: [1]})
            assert result == {t0: None, t1: InvalidReplicationAssignmentError,
                              gone: UnknownTopicOrPartitionError}
            assert admin.alter_partition_reassignments({t0: None}) == {t0: NoReassignmentInProgressError}
            assert admin.list_partition_reassignments() == {}
        finally:
            admin.close()
