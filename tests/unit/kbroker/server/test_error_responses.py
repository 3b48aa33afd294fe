"""kbroker.server.error_responses: the answer to a request whose handler raised, for every API and
every version the broker serves, against Kafka's AbstractRequest.getErrorResponse."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import kbroker.handlers  # noqa: F401  (registers every API)
from kbroker.server.error_responses import CLOSE, LAYOUTS, UNKNOWN_SERVER_ERROR_TEXT, error_response
from kbroker.server.registry import REGISTRY
from wire.codec import decode, encode
from wire.error_codes import ErrorCode
from wire.messages import (
    DescribeConfigsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    OffsetFetchRequest,
    ProduceRequest,
)
from wire.schema import REQUESTS, RESPONSES, FieldSpec

UNKNOWN = ErrorCode.UNKNOWN_SERVER_ERROR

SERVED = [(e.api_key, v) for e in REGISTRY.entries() for v in range(e.min_version, e.max_version + 1)]


# ---------------------------------------------------------------------------- representative requests

def _sample_value(f: FieldSpec, version: int, i: int) -> Any:
    """A value for field ``f`` of the i-th element: arrays hold two elements, names differ."""
    if f.is_array:
        if f.struct is not None:
            return [_sample_struct(f.struct.cls, f.struct.fields, version, j) for j in range(2)]
        return [_sample_scalar(f.elem, f"{f.py}{j}", j) for j in range(2)]
    if f.struct is not None:
        return _sample_struct(f.struct.cls, f.struct.fields, version, i)
    return _sample_scalar(f.elem, f"{f.py}{i}", i)


def _sample_scalar(elem: str, name: str, i: int) -> Any:
    if elem == "string":
        return name
    if elem == "bool":
        return True
    if elem in ("bytes", "records"):
        return b""
    if elem == "uuid":
        return uuid.UUID(int=i + 1)
    if elem == "int8":
        return 2  # a valid config resource type (TOPIC) and isolation level / key type
    return i + 1


def _sample_struct(cls: type, fields: tuple[FieldSpec, ...], version: int, i: int) -> Any:
    obj = cls()
    for f in fields:
        if f.present(version):
            setattr(obj, f.py, _sample_value(f, version, i))
    return obj


def representative_request(api_key: int, version: int, **overrides: Any) -> Any:
    """A request with two entries in every array, encoded and decoded at ``version`` (what a
    handler sees)."""
    spec = REQUESTS[api_key]
    req = _sample_struct(spec.cls, spec.fields, version, 0)
    if api_key == 0:
        req.acks = -1
    for k, v in overrides.items():
        setattr(req, k, v)
    return decode(spec.cls, encode(req, version), version, strict=True)


def error_codes(msg: Any, fields: tuple[FieldSpec, ...], version: int, path: str = "") -> dict[str, int]:
    """Every error_code present in the version, by path (``responses[0].partitions[1]``)."""
    out = {}
    for f in fields:
        if not f.present(version):
            continue
        if f.py in ("error_code", "partition_error_code"):  # the latter: AddPartitionsToTxn
            out[path or "."] = getattr(msg, f.py)
        elif f.is_array and f.struct is not None:
            for i, entry in enumerate(getattr(msg, f.py) or ()):
                out.update(error_codes(entry, f.struct.fields, version, f"{path}{f.py}[{i}]."))
    return out


def roundtrip(api_key: int, version: int, request: Any) -> Any:
    resp = error_response(api_key, version, request)
    cls = RESPONSES[api_key].cls
    return decode(cls, encode(resp, version), version, strict=True)


# ---------------------------------------------------------------------------- every API, every version

# Versions whose layout has no place for an error at all: Kafka answers them empty too
# (DescribeLogDirsRequest.getErrorResponse: no results; the top-level code is v3+).
NO_ERROR_FIELD = {(35, 1), (35, 2)}


@pytest.mark.parametrize(("api_key", "version"), SERVED)
def test_the_error_response_of_every_served_api_and_version_encodes_decodes_and_carries_unknown_server_error(
        api_key, version):
    decoded = roundtrip(api_key, version, representative_request(api_key, version))
    codes = error_codes(decoded, RESPONSES[api_key].fields, version)
    if (api_key, version) in NO_ERROR_FIELD:
        assert codes == {}
        return
    assert codes, f"api key {api_key} v{version}: no error code anywhere"
    assert set(codes.values()) == {UNKNOWN}, codes


@pytest.mark.parametrize(("api_key", "version"), SERVED)
def test_every_error_message_is_null_except_where_kafka_writes_its_error_text(api_key, version):
    decoded = roundtrip(api_key, version, representative_request(api_key, version))
    expected = UNKNOWN_SERVER_ERROR_TEXT if api_key in (10, 32) else None
    messages = []

    def walk(msg: Any, fields: tuple[FieldSpec, ...]) -> None:
        for f in fields:
            if not f.present(version):
                continue
            if f.py == "error_message":
                messages.append(getattr(msg, f.py))
            elif f.is_array and f.struct is not None:
                for e in getattr(msg, f.py) or ():
                    walk(e, f.struct.fields)

    walk(decoded, RESPONSES[api_key].fields)
    assert all(m == expected for m in messages), messages


def test_every_registered_api_whose_response_lists_entries_with_errors_has_a_layout_or_is_known_not_to():
    # Kafka answers these with the top-level code and no entries: LeaveGroup (members),
    # DescribeLogDirs (results), OffsetDelete (topics).
    top_level_only = {13, 35, 47}

    def has_entry_errors(fields: tuple[FieldSpec, ...]) -> bool:
        return any(f.is_array and f.struct is not None
                   and any(g.py == "error_code" or (g.is_array and g.struct is not None and has_entry_errors((g,)))
                           for g in f.struct.fields)
                   for f in fields)

    for e in REGISTRY.entries():
        if has_entry_errors(RESPONSES[e.api_key].fields):
            assert e.api_key in LAYOUTS or e.api_key in top_level_only, e.api_key


# ---------------------------------------------------------------------------- Kafka's layouts, API by API

def test_produce_answers_every_partition_with_invalid_offsets_and_an_acks_0_produce_closes():
    req = representative_request(0, 9)
    resp = error_response(0, 9, req)
    assert [(t.name, [(p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset,
                       p.record_errors, p.error_message) for p in t.partition_responses])
            for t in resp.responses] == [
        (t.name, [(p.index, UNKNOWN, -1, -1, -1, [], None) for p in t.partition_data]) for t in req.topic_data]
    assert len(req.topic_data) == 2 and len(req.topic_data[0].partition_data) == 2
    assert error_response(0, 9, representative_request(0, 9, acks=0)) is CLOSE


@pytest.mark.parametrize("version", [4, 7, 11, 12])
def test_fetch_answers_the_top_level_code_from_v7_and_every_partition_with_empty_records(version):
    req = representative_request(1, version)
    resp = roundtrip(1, version, req)
    assert resp.error_code == (UNKNOWN if version >= 7 else 0)  # absent before v7: decodes as 0
    assert resp.session_id == (req.session_id if version >= 7 else 0)
    assert [(t.topic, [(p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset,
                        p.log_start_offset, bytes(p.records)) for p in t.partitions]) for t in resp.responses] == [
        (t.topic, [(p.partition, UNKNOWN, -1, -1, -1, b"") for p in t.partitions]) for t in req.topics]


def test_metadata_answers_each_requested_topic_without_partitions_or_brokers():
    resp = roundtrip(3, 12, representative_request(3, 12))
    assert [(t.name, t.error_code, t.partitions) for t in resp.topics] == [
        ("name0", UNKNOWN, []), ("name1", UNKNOWN, [])]
    assert resp.brokers == []
    # a topic asked for by id only has a null name, which the response cannot hold before v12
    by_id = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=uuid.UUID(int=7), name=None)])
    resp = roundtrip(3, 11, by_id)
    assert [(t.name, t.topic_id, t.error_code) for t in resp.topics] == [("", uuid.UUID(int=7), UNKNOWN)]
    # all topics (null): no topic entries at all, as Kafka
    assert roundtrip(3, 12, MetadataRequest(topics=None)).topics == []


def test_offset_fetch_answers_per_partition_in_v1_top_level_in_v2_to_v7_and_per_group_in_v8():
    v1 = roundtrip(9, 1, OffsetFetchRequest(group_id="g", topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 3])]))
    assert [(t.name, [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in t.partitions])
            for t in v1.topics] == [("t", [(0, -1, "", UNKNOWN), (3, -1, "", UNKNOWN)])]
    for version in range(2, 8):
        resp = roundtrip(9, version, representative_request(9, version))
        assert (resp.error_code, resp.topics) == (UNKNOWN, [])
    v8 = roundtrip(9, 8, representative_request(9, 8))
    assert [(g.group_id, g.error_code, g.topics) for g in v8.groups] == [
        ("group_id0", UNKNOWN, []), ("group_id1", UNKNOWN, [])]


def test_find_coordinator_answers_no_node_with_kafkas_error_text_once_or_per_key():
    v3 = roundtrip(10, 3, FindCoordinatorRequest(key="g", key_type=0))
    assert (v3.error_code, v3.error_message, v3.node_id, v3.host, v3.port) == (
        UNKNOWN, UNKNOWN_SERVER_ERROR_TEXT, -1, "", -1)
    v4 = roundtrip(10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]))
    assert [(c.key, c.error_code, c.error_message, c.node_id, c.host, c.port) for c in v4.coordinators] == [
        (k, UNKNOWN, UNKNOWN_SERVER_ERROR_TEXT, -1, "", -1) for k in ("a", "b")]


def test_join_group_has_no_generation_and_a_null_protocol_name_where_the_version_allows_it():
    for version in (0, 6, 7):
        resp = roundtrip(11, version, representative_request(11, version))
        assert (resp.error_code, resp.generation_id, resp.leader, resp.member_id, resp.members) == (
            UNKNOWN, -1, "", "", [])
        assert resp.protocol_name == (None if version >= 7 else "")


def test_describe_configs_answers_each_resource_with_kafkas_error_text():
    req = DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name="t", configuration_keys=None),
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=None)])
    resp = roundtrip(32, 4, req)
    assert [(r.resource_type, r.resource_name, r.error_code, r.error_message, r.configs) for r in resp.results] == [
        (2, "t", UNKNOWN, UNKNOWN_SERVER_ERROR_TEXT, []), (4, "1", UNKNOWN, UNKNOWN_SERVER_ERROR_TEXT, [])]


def test_create_topics_answers_each_topic_with_a_null_message_and_unknown_partition_counts():
    resp = roundtrip(19, 7, representative_request(19, 7))
    assert [(t.name, t.error_code, t.error_message, t.num_partitions, t.replication_factor)
            for t in resp.topics] == [(n, UNKNOWN, None, -1, -1) for n in ("name0", "name1")]


def test_delete_topics_echoes_names_before_v6_and_names_with_ids_from_v6():
    v5 = roundtrip(20, 5, representative_request(20, 5))
    assert [(r.name, r.error_code) for r in v5.responses] == [("topic_names0", UNKNOWN), ("topic_names1", UNKNOWN)]
    v6 = roundtrip(20, 6, representative_request(20, 6))
    assert [(r.name, r.topic_id, r.error_code) for r in v6.responses] == [
        ("name0", uuid.UUID(int=1), UNKNOWN), ("name1", uuid.UUID(int=2), UNKNOWN)]


def test_groups_apis_echo_their_groups_and_init_producer_id_has_no_producer():
    dg = roundtrip(15, 5, representative_request(15, 5))
    assert [(g.group_id, g.error_code) for g in dg.groups] == [("groups0", UNKNOWN), ("groups1", UNKNOWN)]
    dl = roundtrip(42, 2, representative_request(42, 2))
    assert [(g.group_id, g.error_code) for g in dl.results] == [("groups_names0", UNKNOWN),
                                                               ("groups_names1", UNKNOWN)]
    ip = roundtrip(22, 4, representative_request(22, 4))
    assert (ip.error_code, ip.producer_id, ip.producer_epoch) == (UNKNOWN, -1, -1)


def test_a_fetch_request_with_no_topics_still_gets_the_top_level_code():
    resp = roundtrip(1, 12, FetchRequest(max_wait_ms=0, topics=[]))
    assert (resp.error_code, resp.responses) == (UNKNOWN, [])


def test_produce_request_records_are_not_needed_to_answer():
    req = ProduceRequest(acks=1, topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[
        ProduceRequest.PartitionProduceData(index=4, records=None)])])
    resp = roundtrip(0, 3, req)
    assert [(p.index, p.error_code) for p in resp.responses[0].partition_responses] == [(4, UNKNOWN)]
