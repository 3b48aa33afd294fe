"""The answer to a request whose handler raised: UNKNOWN_SERVER_ERROR in the API's own layout.

Kafka (``RequestHandlerHelper.handleError`` -> ``AbstractRequest.getErrorResponse``) answers
a request whose handling threw with that API's own response, the error set wherever the
version has a place for it, and keeps the connection.  This module builds that response
for every API in the registry from two things:

* the schema (``wire.schema.RESPONSES``): the response starts from its defaults; then every
  ``error_code`` field present in the version, at the top and in every entry built, is set
  to UNKNOWN_SERVER_ERROR (-1), and every ``error_message`` to what Kafka writes there;
* a small per-API table (``LAYOUTS``) where the layout needs the request: which request
  array each response array echoes entry for entry (topic names, partition indexes, group
  ids, config resources), which fields Kafka fills with its "unknown" markers instead of
  the schema default (Produce ``base_offset`` -1, Fetch ``high_watermark`` -1, ...), and
  in which versions Kafka lists entries at all (OffsetFetch v2-7 answers with the
  top-level code alone).

Error messages: Kafka's ``ApiError.fromThrowable`` leaves the message null for
UNKNOWN_SERVER_ERROR (so as not to leak internals); FindCoordinator and DescribeConfigs use
``Errors.message()`` instead, Kafka's fixed text for the code.  The traceback goes to the
broker's log only.

An acks=0 Produce has no response to carry an error: Kafka closes the connection
(``getErrorResponse`` returns null -> ``closeConnection``); ``error_response`` answers
``CLOSE`` for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from wire.error_codes import ErrorCode
from wire.schema import RESPONSES, FieldSpec, Range, in_range

CLOSE = object()  # "no response can carry the error: close the connection" (acks=0 Produce)
SELF = "."        # in ``copy``: the request element itself (arrays of strings or ints)

# Errors.UNKNOWN_SERVER_ERROR.message() in Kafka's clients.
UNKNOWN_SERVER_ERROR_TEXT = "The server experienced an unexpected error when processing the request."

# A field value: a constant, or a function of (request element, response version).
Value = Any


@dataclass(frozen=True, slots=True)
class Shape:
    """How one response struct is filled from its request counterpart.

    ``copy``: response field -> request field (or ``SELF``) echoed as is.  ``values``:
    response field -> Kafka's value where it differs from the schema default (a constant or
    ``fn(request_element, version)``).  ``entries``: response arrays built entry for entry
    from a request array.  Fields absent from the version are set and ignored by the encoder.
    """

    copy: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, Value] = field(default_factory=dict)
    entries: tuple[Entries, ...] = ()


@dataclass(frozen=True, slots=True)
class Entries:
    """A response array with one entry per element of a request array."""

    request: str           # the request array (attribute of the request struct)
    response: str          # the response array (attribute of the response struct)
    shape: Shape = field(default_factory=Shape)
    versions: Range = (0, None)   # the response versions in which Kafka lists these entries


@dataclass(frozen=True, slots=True)
class Layout:
    shape: Shape = field(default_factory=Shape)
    message: str | None = None                       # what every error_message field gets
    close_if: Callable[[Any], bool] | None = None    # requests that get no response at all


def _entries(request: str, response: str, *, copy: Mapping[str, str] | None = None,
             values: Mapping[str, Value] | None = None, entries: tuple[Entries, ...] = (),
             versions: Range = (0, None)) -> Entries:
    return Entries(request, response, Shape(copy or {}, values or {}, entries), versions)


def _topics_partitions(request_topics: str, response_topics: str, request_parts: str,
                       response_parts: str, *, topic_name: str = "name",
                       response_topic_name: str | None = None, partition: str = "partition_index",
                       response_partition: str | None = None,
                       values: Mapping[str, Value] | None = None) -> tuple[Entries, ...]:
    """The common layout: topics by name, each with its partitions by index."""
    return (_entries(request_topics, response_topics,
                     copy={response_topic_name or topic_name: topic_name},
                     entries=(_entries(request_parts, response_parts,
                                       copy={response_partition or partition: partition},
                                       values=values),)),)


NO_OFFSET = -1  # Kafka's INVALID_OFFSET / INVALID_HIGH_WATERMARK / NO_TIMESTAMP / NO_PRODUCER_EPOCH

# Per API key: only what the schema cannot say.  An API missing here (Heartbeat,
# SyncGroup, ListGroups, ApiVersions, DescribeLogDirs, OffsetDelete, DescribeCluster)
# answers its schema defaults with the top-level error code (Kafka's getErrorResponse
# for each of them sets nothing else).
LAYOUTS: dict[int, Layout] = {
    # Produce: per partition (ProduceRequest.getErrorResponse); acks=0 closes.
    0: Layout(Shape(entries=_topics_partitions(
        "topic_data", "responses", "partition_data", "partition_responses",
        partition="index",
        values={"base_offset": NO_OFFSET, "log_append_time_ms": NO_OFFSET,
                "log_start_offset": NO_OFFSET})),
        close_if=lambda req: req.acks == 0),
    # Fetch: top-level (v7+) and every partition (FetchResponse.partitionResponse), the
    # session id echoed.
    1: Layout(Shape(copy={"session_id": "session_id"}, entries=_topics_partitions(
        "topics", "responses", "partitions", "partitions",
        topic_name="topic", partition="partition", response_partition="partition_index",
        values={"high_watermark": NO_OFFSET, "records": b""}))),
    # ListOffsets: per partition, offset and timestamp -1 (the schema defaults).
    2: Layout(Shape(entries=_topics_partitions("topics", "topics", "partitions", "partitions"))),
    # Metadata: per requested topic, no partitions, no brokers; a null request name
    # (v10+, by id) is answered "".
    3: Layout(Shape(entries=(_entries(
        "topics", "topics", copy={"topic_id": "topic_id"},
        values={"name": lambda t, v: t.name or ""}),))),
    # OffsetCommit: per partition.
    8: Layout(Shape(entries=_topics_partitions("topics", "topics", "partitions", "partitions"))),
    # OffsetFetch: v1 per partition (offset -1, metadata ""); v2-7 the top-level code
    # only; v8 per group, without topics.
    9: Layout(Shape(entries=(
        _entries("topics", "topics", copy={"name": "name"}, versions=(0, 1), entries=(
            _entries("partition_indexes", "partitions", copy={"partition_index": SELF},
                     values={"committed_offset": NO_OFFSET, "metadata": ""}),)),
        _entries("groups", "groups", copy={"group_id": "group_id"}, versions=(8, None)),
    ))),
    # FindCoordinator: v0-3 the single answer, v4 per key; no node, Kafka's error text.
    10: Layout(Shape(values={"node_id": -1, "host": "", "port": -1}, entries=(
        _entries("coordinator_keys", "coordinators", copy={"key": SELF},
                 values={"node_id": -1, "host": "", "port": -1}),)),
        message=UNKNOWN_SERVER_ERROR_TEXT),
    # JoinGroup: the protocol name is null where it may be (v7+), "" before.
    11: Layout(Shape(values={"protocol_name": lambda r, v: None if v >= 7 else ""})),
    # LeaveGroup v3+: the top-level code, no members (LeaveGroupRequest.getErrorResponse).
    # DescribeGroups: per group id.
    15: Layout(Shape(entries=(_entries("groups", "groups", copy={"group_id": SELF}),))),
    # CreateTopics: per topic, message null.
    19: Layout(Shape(entries=(_entries("topics", "topics", copy={"name": "name"}),))),
    # DeleteTopics: per name (v1-5) or per name/id (v6+).
    20: Layout(Shape(entries=(
        _entries("topic_names", "responses", copy={"name": SELF}, versions=(0, 5)),
        _entries("topics", "responses", copy={"name": "name", "topic_id": "topic_id"},
                 versions=(6, None)),
    ))),
    # DeleteRecords: per partition, low watermark -1.
    21: Layout(Shape(entries=_topics_partitions(
        "topics", "topics", "partitions", "partitions", values={"low_watermark": NO_OFFSET}))),
    # InitProducerId: no producer id, epoch -1.
    22: Layout(Shape(values={"producer_id": -1, "producer_epoch": -1})),
    # OffsetForLeaderEpoch: per partition, epoch and end offset -1 (the schema defaults).
    23: Layout(Shape(entries=_topics_partitions(
        "topics", "topics", "partitions", "partitions", topic_name="topic", partition="partition"))),
    # WriteTxnMarkers: per marker (producer id), topic and partition index
    # (WriteTxnMarkersRequest.getErrorResponse).
    27: Layout(Shape(entries=(_entries("markers", "markers", copy={"producer_id": "producer_id"}, entries=(
        _entries("topics", "topics", copy={"name": "name"}, entries=(
            _entries("partition_indexes", "partitions", copy={"partition_index": SELF}),)),)),))),
    # AddPartitionsToTxn: v0-3 per topic and partition; v4+ the top-level code only
    # (AddPartitionsToTxnRequest.getErrorResponse).
    24: Layout(Shape(entries=(_entries(
        "v3_and_below_topics", "results_by_topic_v3_and_below", copy={"name": "name"},
        versions=(0, 3), entries=(_entries("partitions", "results_by_partition",
                                           copy={"partition_index": SELF}),)),))),
    # TxnOffsetCommit: per topic and partition (TxnOffsetCommitRequest.getErrorResponse).
    28: Layout(Shape(entries=_topics_partitions("topics", "topics", "partitions", "partitions"))),
    # DescribeProducers: per topic and requested partition index, no producers, message null
    # (DescribeProducersRequest.getErrorResponse).
    61: Layout(Shape(entries=(_entries("topics", "topics", copy={"name": "name"}, entries=(
        _entries("partition_indexes", "partitions", copy={"partition_index": SELF}),)),))),
    # DescribeTransactions: per transactional id.
    65: Layout(Shape(entries=(_entries(
        "transactional_ids", "transaction_states", copy={"transactional_id": SELF},
        values={"transaction_start_time_ms": -1, "producer_id": -1, "producer_epoch": -1}),))),
    # DescribeConfigs: per resource, with Kafka's error text.
    32: Layout(Shape(entries=(_entries(
        "resources", "results",
        copy={"resource_type": "resource_type", "resource_name": "resource_name"}),)),
        message=UNKNOWN_SERVER_ERROR_TEXT),
    # AlterConfigs / IncrementalAlterConfigs: per resource, message null.
    33: Layout(Shape(entries=(_entries(
        "resources", "responses",
        copy={"resource_type": "resource_type", "resource_name": "resource_name"}),))),
    44: Layout(Shape(entries=(_entries(
        "resources", "responses",
        copy={"resource_type": "resource_type", "resource_name": "resource_name"}),))),
    # CreateAcls / DeleteAcls: per creation / per filter (Create/DeleteAclsRequest.getErrorResponse).
    30: Layout(Shape(entries=(_entries("creations", "results"),))),
    31: Layout(Shape(entries=(_entries("filters", "filter_results"),))),
    # AlterClientQuotas: per entry, its entity echoed (AlterClientQuotasRequest.getErrorResponse).
    49: Layout(Shape(entries=(_entries("entries", "entries", entries=(_entries(
        "entity", "entity", copy={"entity_type": "entity_type", "entity_name": "entity_name"}),)),))),
    # CreatePartitions: per topic.
    37: Layout(Shape(entries=(_entries("topics", "results", copy={"name": "name"}),))),
    # DeleteGroups: per group id.
    42: Layout(Shape(entries=(_entries("groups_names", "results", copy={"group_id": SELF}),))),
    # ConsumerGroupDescribe: one described group per group id asked for
    69: Layout(Shape(entries=(_entries("group_ids", "groups", copy={"group_id": SELF}),))),
    # AlterPartitionReassignments: per requested partition, with the top-level code too
    # (AlterPartitionReassignmentsRequest.getErrorResponse), message null.
    45: Layout(Shape(entries=(_entries("topics", "responses", copy={"name": "name"}, entries=(
        _entries("partitions", "partitions", copy={"partition_index": "partition_index"}),)),))),
    # ElectLeaders: per requested partition (a null request answers none), message null
    # (ApiError.fromThrowable keeps no text for UNKNOWN_SERVER_ERROR), as
    # ElectLeadersRequest.getErrorResponse.
    43: Layout(Shape(entries=(_entries(
        "topic_partitions", "replica_election_results", copy={"topic": "topic"}, entries=(
            _entries("partitions", "partition_result", copy={"partition_id": SELF}),)),))),
    # DescribeUserScramCredentials: the top-level code and one result per requested user (none
    # for a null "describe all"), message null (DescribeUserScramCredentialsRequest.getErrorResponse).
    50: Layout(Shape(entries=(_entries("users", "results", copy={"user": "name"}),))),
    # AlterUserScramCredentials: per distinct user of the deletions and upsertions, sorted
    # (AlterUserScramCredentialsRequest.getErrorResponse).
    51: Layout(Shape(values={"results": lambda r, v: [
        RESPONSES[51].cls.AlterUserScramCredentialsResult(user=u)
        for u in sorted({d.name for d in r.deletions} | {u.name for u in r.upsertions})]})),
    # DescribeTopicPartitions: per requested topic (an empty request lists none), not
    # internal, no partitions, no cursor (DescribeTopicPartitionsRequest.getErrorResponse).
    75: Layout(Shape(entries=(_entries("topics", "topics", copy={"name": "name"},
                                       values={"is_internal": False, "partitions": []}),))),
}

_PLAIN = Layout()


def error_response(api_key: int, version: int, request: Any) -> Any:
    """The response Kafka sends for ``request`` (decoded, at ``version``) when handling it
    raised: UNKNOWN_SERVER_ERROR in every place the layout has for an error; ``CLOSE``
    when the request takes no response (acks=0 Produce)."""
    layout = LAYOUTS.get(api_key, _PLAIN)
    if layout.close_if is not None and layout.close_if(request):
        return CLOSE
    spec = RESPONSES[api_key]
    response = spec.cls()
    _fill(response, spec.fields, request, layout.shape, version)
    _mark_errors(response, spec.fields, version, layout.message)
    return response


def _fill(out: Any, fields: tuple[FieldSpec, ...], src: Any, shape: Shape, version: int) -> None:
    for dst, attr in shape.copy.items():
        setattr(out, dst, src if attr == SELF else getattr(src, attr))
    for dst, value in shape.values.items():
        setattr(out, dst, value(src, version) if callable(value) else value)
    for entries in shape.entries:
        if not in_range(entries.versions, version):
            continue
        f = next(f for f in fields if f.py == entries.response)
        assert f.struct is not None, f"{f.name} is not an array of structs"
        built = []
        for item in getattr(src, entries.request, None) or ():   # a null array: no entries
            entry = f.struct.cls()
            _fill(entry, f.struct.fields, item, entries.shape, version)
            built.append(entry)
        setattr(out, entries.response, built)


def _mark_errors(out: Any, fields: tuple[FieldSpec, ...], version: int, message: str | None) -> None:
    """UNKNOWN_SERVER_ERROR in every error_code of ``out`` and of the entries built below it."""
    for f in fields:
        if not f.present(version):
            continue
        if f.py in ("error_code", "partition_error_code"):  # the latter: AddPartitionsToTxn
            setattr(out, f.py, ErrorCode.UNKNOWN_SERVER_ERROR)
        elif f.py == "error_message":
            setattr(out, f.py, message if message is not None or f.is_nullable(version) else "")
        elif f.is_array and f.struct is not None:
            for entry in getattr(out, f.py) or ():
                _mark_errors(entry, f.struct.fields, version, message)
