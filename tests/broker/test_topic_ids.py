"""Topic ids on a single node (KIP-516): given at creation, the same in CreateTopics,
Metadata and every partition's partition.metadata, kept across restarts, looked up by id
(Metadata v12, DeleteTopics v6), new after delete + create; data from before topic ids gets
an id; partitions of one topic holding different ids stop the start-up."""

from __future__ import annotations

import os
import uuid

import pytest

from kbroker import Broker
from log.log_dir_checks import LogDirError
from log.partition_metadata_file import PartitionMetadataFile, encode_partition_metadata
from wire.error_codes import ErrorCode
from wire.messages import (
    ZERO_UUID,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
)

from .test_embedded_broker import _call

CONFIG = {"listeners": "PLAINTEXT://127.0.0.1:0"}


def create(b: Broker, name: str, partitions: int) -> uuid.UUID:
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                                               assignments=[], configs=[])
    _, resp = _call(b.bootstrap_servers, CreateTopicsRequest(topics=[topic], timeout_ms=60000), 7,
                    CreateTopicsResponse)
    assert resp.topics[0].error_code == ErrorCode.NONE
    return resp.topics[0].topic_id


def metadata(b: Broker, names: list[str] | None = None, ids: list[uuid.UUID] | None = None) -> MetadataResponse:
    T = MetadataRequest.MetadataRequestTopic
    topics = [T(name=n, topic_id=ZERO_UUID) for n in names or []] + [T(name=None, topic_id=i) for i in ids or []]
    _, resp = _call(b.bootstrap_servers, MetadataRequest(topics=topics, allow_auto_topic_creation=False), 12,
                    MetadataResponse)
    return resp


def file_ids(log_dir, name: str, partitions: int) -> set[uuid.UUID]:
    return {PartitionMetadataFile(os.path.join(log_dir, f"{name}-{p}")).read() for p in range(partitions)}


def test_createtopics_metadata_and_every_partition_metadata_file_hold_the_same_id_across_a_restart(tmp_path):
    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        tid = create(b, "ids", 3)
        assert tid != ZERO_UUID
        t = metadata(b, ["ids"]).topics[0]
        assert (t.error_code, t.name, t.topic_id) == (0, "ids", tid)
    # a clean shutdown wrote every pending file
    assert file_ids(tmp_path, "ids", 3) == {tid}
    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        assert metadata(b, ["ids"]).topics[0].topic_id == tid


def test_metadata_v12_looks_topics_up_by_id_and_answers_unknown_ids_with_unknown_topic_id(tmp_path):
    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        tid = create(b, "by-id", 2)
        unknown = uuid.uuid4()
        resp = metadata(b, ids=[tid, unknown, tid])
        assert [(t.error_code, t.name, t.topic_id, len(t.partitions)) for t in resp.topics] == [
            (0, "by-id", tid, 2), (ErrorCode.UNKNOWN_TOPIC_ID, None, unknown, 0)]


def test_deletetopics_v6_deletes_by_id_and_a_topic_created_again_gets_a_new_id(tmp_path):
    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        first = create(b, "again", 1)
        D = DeleteTopicsRequest.DeleteTopicState
        unknown = uuid.uuid4()
        _, resp = _call(b.bootstrap_servers, DeleteTopicsRequest(
            topics=[D(name=None, topic_id=first), D(name=None, topic_id=unknown), D(name="again", topic_id=first)],
            timeout_ms=60000), 6, DeleteTopicsResponse)
        assert [(r.name, r.topic_id, r.error_code) for r in resp.responses] == [
            ("again", first, ErrorCode.NONE), (None, unknown, ErrorCode.UNKNOWN_TOPIC_ID),
            ("again", first, ErrorCode.INVALID_REQUEST)]
        assert metadata(b, ids=[first]).topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        second = create(b, "again", 1)
        assert second not in (first, ZERO_UUID)
        assert metadata(b, ["again"]).topics[0].topic_id == second


def test_partitions_written_before_topic_ids_get_one_id_at_start_up(tmp_path):
    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        create(b, "old", 2)
    for p in range(2):
        os.remove(tmp_path / f"old-{p}" / "partition.metadata")
    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        tid = metadata(b, ["old"]).topics[0].topic_id
        assert tid != ZERO_UUID
    assert file_ids(tmp_path, "old", 2) == {tid}


def test_a_partition_missing_its_file_takes_the_id_of_the_others(tmp_path):
    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        tid = create(b, "half", 2)
    os.remove(tmp_path / "half-1" / "partition.metadata")
    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        assert metadata(b, ["half"]).topics[0].topic_id == tid
    assert file_ids(tmp_path, "half", 2) == {tid}


def test_partitions_of_one_topic_with_different_ids_stop_the_start_up_naming_both(tmp_path):
    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        create(b, "mixed", 2)
    (tmp_path / "mixed-1" / "partition.metadata").write_bytes(encode_partition_metadata(uuid.uuid4()))
    with pytest.raises(LogDirError, match=r"Inconsistent topic IDs for topic mixed: .*mixed-0.*mixed-1"):
        with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}):
            pass


def fetch_v13(b: Broker, topic_id: uuid.UUID, partitions: int) -> FetchResponse:
    F = FetchRequest
    req = F(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
            session_epoch=-1, topics=[F.FetchTopic(topic_id=topic_id, partitions=[
                F.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                                 log_start_offset=-1, partition_max_bytes=1 << 20) for p in range(partitions)])],
            forgotten_topics_data=[], rack_id="")
    _, resp = _call(b.bootstrap_servers, req, 13, FetchResponse)
    return resp


def test_fetch_v13_reads_a_topic_named_by_id_and_answers_an_unknown_or_deleted_id_with_unknown_topic_id(tmp_path):
    from confluent_kafka import Producer

    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        tid = create(b, "fetched", 2)
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        p.produce("fetched", value=b"x", partition=1)
        assert p.flush(60) == 0
        resp = fetch_v13(b, tid, 2)
        assert [(t.topic_id, [(q.partition_index, q.error_code, q.high_watermark) for q in t.partitions])
                for t in resp.responses] == [(tid, [(0, 0, 0), (1, 0, 1)])]
        assert len(resp.responses[0].partitions[1].records) > 0
        unknown = uuid.uuid4()
        resp = fetch_v13(b, unknown, 1)
        assert [(t.topic_id, [(q.partition_index, q.error_code) for q in t.partitions]) for t in resp.responses] == [
            (unknown, [(0, ErrorCode.UNKNOWN_TOPIC_ID)])]
        D = DeleteTopicsRequest.DeleteTopicState
        _call(b.bootstrap_servers, DeleteTopicsRequest(topics=[D(name="fetched", topic_id=ZERO_UUID)],
                                                       timeout_ms=60000), 6, DeleteTopicsResponse)
        create(b, "fetched", 2)
        assert fetch_v13(b, tid, 1).responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_added_partitions_and_the_internal_offsets_topic_carry_their_topics_id(tmp_path):
    from confluent_kafka import Consumer, TopicPartition

    from wire.messages import CreatePartitionsRequest, CreatePartitionsResponse

    with Broker.start({**CONFIG, "log.dirs": str(tmp_path), "offsets.topic.num.partitions": "2"}) as b:
        tid = create(b, "grown", 1)
        _, resp = _call(b.bootstrap_servers, CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name="grown", count=3, assignments=None)], timeout_ms=60000, validate_only=False), 3,
            CreatePartitionsResponse)
        assert resp.results[0].error_code == ErrorCode.NONE
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "ids-group"})
        c.commit(offsets=[TopicPartition("grown", 0, 0)], asynchronous=False)   # creates __consumer_offsets
        c.close()
        offsets_id = metadata(b, ["__consumer_offsets"]).topics[0].topic_id
        assert offsets_id not in (ZERO_UUID, tid)
    assert file_ids(tmp_path, "grown", 3) == {tid}
    assert file_ids(tmp_path, "__consumer_offsets", 2) == {offsets_id}


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_and_v11_refuse_a_null_topic_name_or_a_topic_id_with_invalid_request(tmp_path, version):
    T = MetadataRequest.MetadataRequestTopic
    with Broker.start({**CONFIG, "log.dirs": str(tmp_path)}) as b:
        tid = create(b, "named", 1)
        answers = [_call(b.bootstrap_servers, MetadataRequest(topics=topics, allow_auto_topic_creation=False),
                         version, MetadataResponse)[1]
                   for topics in ([T(name="named", topic_id=ZERO_UUID), T(name=None, topic_id=ZERO_UUID)],
                                  [T(name="named", topic_id=tid)])]
        fine = _call(b.bootstrap_servers, MetadataRequest(topics=[T(name="named", topic_id=ZERO_UUID)],
                                                          allow_auto_topic_creation=False), version,
                     MetadataResponse)[1]
    # Kafka: InvalidRequestException -> MetadataRequest.getErrorResponse
    null_name, with_id = answers
    assert [(t.error_code, t.name, t.topic_id, t.partitions) for t in null_name.topics] == [
        (ErrorCode.INVALID_REQUEST, "named", ZERO_UUID, []), (ErrorCode.INVALID_REQUEST, "", ZERO_UUID, [])]
    assert [(t.error_code, t.name, t.topic_id) for t in with_id.topics] == [(ErrorCode.INVALID_REQUEST, "named", tid)]
    assert null_name.brokers == [] and null_name.controller_id == -1 and null_name.cluster_id is None
    assert [(t.error_code, t.name, t.topic_id) for t in fine.topics] == [(0, "named", tid)]
