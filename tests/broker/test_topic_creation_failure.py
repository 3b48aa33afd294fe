"""A creation that fails part-way (a log dir error opening one partition) is all or nothing:
the partitions it had opened are never registered and their directories go, the topic's id
and configs are forgotten, and CreateTopics / CreatePartitions answer KAFKA_STORAGE_ERROR
with Kafka's message (LogManager.getOrCreateLog: "Error while creating log for t-p in dir d").

The failure is real, not mocked: a plain file where the partition's directory would go
makes opening that log fail with an OSError on the executor thread.
"""

from __future__ import annotations

import os

from kbroker import Broker
from wire.error_codes import ErrorCode
from wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
)

from .test_topic_creation_off_loop import _call, create, metadata


def _config(tmp_path) -> dict[str, str]:
    return {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path), "num.partitions": "1"}


def _partition_dirs(tmp_path, topic: str) -> list[str]:
    return sorted(n for n in os.listdir(tmp_path) if n.startswith(f"{topic}-") and not n.endswith("-delete")
                  and os.path.isdir(os.path.join(tmp_path, n)))


def test_a_create_topics_that_fails_part_way_answers_kafka_storage_error_and_leaves_nothing_registered(tmp_path):
    with Broker.start(_config(tmp_path)) as b:
        bootstrap, state = b.bootstrap_servers, b.broker.state
        (tmp_path / "broken-150").write_bytes(b"not a directory")
        topic = CreateTopicsRequest.CreatableTopic(
            name="broken", num_partitions=300, replication_factor=1, assignments=[],
            configs=[CreateTopicsRequest.CreatableTopicConfig(name="retention.ms", value="1000")])
        answer = _call(bootstrap, CreateTopicsRequest(topics=[topic], timeout_ms=60_000), 7, CreateTopicsResponse)[1]
        after = metadata(bootstrap, "broken")
        registered = [tp for tp in state.partitions if tp[0] == "broken"]
        logs = [tp for tp, _ in state.log_manager.snapshot() if tp[0] == "broken"]
        topic_id, configs = state.topic_ids.id_of("broken"), state.topic_configs.overrides.get("broken")
        dirs = _partition_dirs(tmp_path, "broken")
        (tmp_path / "broken-150").unlink()   # the dir is fixed: the name is free again
        again = create(bootstrap, "broken", 300).topics[0]
        visible = metadata(bootstrap, "broken")
    r = answer.topics[0]
    assert r.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert r.error_message == f"Error while creating log for broken-150 in dir {tmp_path}"
    assert after.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert registered == [] and logs == [] and dirs == []
    assert topic_id is None and configs is None
    assert again.error_code == ErrorCode.NONE and len(visible.partitions) == 300


def test_a_create_partitions_that_fails_part_way_leaves_the_topic_as_it_was(tmp_path):
    with Broker.start(_config(tmp_path)) as b:
        bootstrap, state = b.bootstrap_servers, b.broker.state
        (tmp_path / "grown-5").write_bytes(b"not a directory")
        assert create(bootstrap, "grown", 2).topics[0].error_code == ErrorCode.NONE
        req = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name="grown", count=200, assignments=None)], timeout_ms=60_000, validate_only=False)
        answer = _call(bootstrap, req, 3, CreatePartitionsResponse)[1].results[0]
        after = metadata(bootstrap, "grown")
        registered = sorted(tp for tp in state.partitions if tp[0] == "grown")
        dirs = _partition_dirs(tmp_path, "grown")
    assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert answer.error_message == f"Error while creating log for grown-5 in dir {tmp_path}"
    assert after.error_code == ErrorCode.NONE and len(after.partitions) == 2
    assert registered == [("grown", 0), ("grown", 1)]
    assert dirs == ["grown-0", "grown-1"]


def test_an_auto_creation_that_fails_part_way_answers_kafka_storage_error_in_metadata(tmp_path):
    config = {**_config(tmp_path), "num.partitions": "300"}
    with Broker.start(config) as b:
        bootstrap, state = b.bootstrap_servers, b.broker.state
        (tmp_path / "auto-150").write_bytes(b"not a directory")
        answer = metadata(bootstrap, "auto", auto=True)
        registered = [tp for tp in state.partitions if tp[0] == "auto"]
        dirs = _partition_dirs(tmp_path, "auto")
    # Kafka's Errors.forException(KafkaStorageException), not UNKNOWN_SERVER_ERROR
    assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert answer.name == "auto" and answer.partitions == []
    assert registered == [] and dirs == []
