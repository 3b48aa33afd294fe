"""Byte-exact cross-checks of our codec against kafka-python 3's independent protocol classes.

kafka-python 3 (``kafka.protocol``) builds its own codec from a vendored copy of Kafka's JSON
schemas (Kafka ~4.2): its own field parser, its own generated encoders/decoders, its own data
containers.  For the fourteen APIs a client needs most (requests and responses) and every
version both sides implement, each test draws a value with our hypothesis strategies,
converts it field by field into kafka-python's objects, and checks three things:

1. bytes equal: ``wire.codec.encode(x, v) == kafka_python(x).encode(version=v)``;
2. kafka-python decodes our bytes back to x (converted back into our dataclasses);
3. we decode kafka-python's bytes back to x.

Header bytes are checked too (request header v1/v2, response header v0/v1 through
``with_header`` + ``encode(header=True)``, and the reverse decode).

What is compared, and what could not be (and why):

* Versions: the intersection of our table's validVersions (Kafka 4.4.0's schemas in
  wire/codegen/schemas, with the kept old versions of wire/codegen/kept.py) and
  kafka-python's own schemas' validVersions.  Kafka 4 also dropped old versions from its schemas (KIP-896: Produce 0-2,
  Fetch 0-3, ListOffsets 0, OffsetCommit 0-1, OffsetFetch 0, CreateTopics 0-1); its JSON
  classes no longer describe them, so those versions are compared instead against
  kafka-python's older hand-written per-version classes (``kafka.protocol.old``), body bytes
  and values both ways (those classes have no header handling of their own to compare).
  ``test_both_schemas_agree_on_the_fields_of_every_shared_version`` pins the intersection.
* MetadataResponse ``ClusterAuthorizedOperations``/``TopicAuthorizedOperations``:
  kafka-python patches them into a "bitfield" (a set of bit numbers, ``None`` for
  INT32_MIN, the "not requested" value).  We convert our int32 to that set and back; the
  mapping is lossless, so the fields are compared through it.
* ApiVersionsResponse with a non-zero error code at v1+: kafka-python deliberately decodes
  the body as v0 (a broker answers UNSUPPORTED_VERSION with a v0 body, KIP-511), so its
  decode of our v1+ bytes is only compared for error_code 0.  The encode direction and our
  decode of its bytes are compared for every error code.
* Request header v0 (ControlledShutdown v0 only): kafka-python's RequestHeader schema
  starts at v1, so it cannot write or read header v0; tests/unit/wire/test_headers.py covers it.
* kafka-python writes a tagged struct's own tagged-field section as empty (``tagged=None``)
  and tagged fields in declaration order; no tagged struct among these fourteen APIs has
  tagged fields of its own, and their tagged fields are declared in tag order, so both
  quirks are invisible here (the bytes-equal assertion would catch them otherwise).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.api_header import RequestHeader as KpRequestHeader
from kafka.protocol.api_header import ResponseHeader as KpResponseHeader
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafka.protocol.schemas.fields.base import BaseField
from kafka.protocol.schemas.fields.codecs import BitField

from tests.properties.wire.message_strategies import message_value
from wire import codec, headers
from wire.schema import SPECS, ZERO_UUID, FieldSpec, MessageSpec, StructSpec

KP_CLASSES: dict[str, Any] = {
    c.__name__: c
    for c in (
        ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
        ProduceRequest, ProduceResponse, FetchRequest, FetchResponse,
        ListOffsetsRequest, ListOffsetsResponse, FindCoordinatorRequest, FindCoordinatorResponse,
        JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse,
        HeartbeatRequest, HeartbeatResponse, LeaveGroupRequest, LeaveGroupResponse,
        OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
        CreateTopicsRequest, CreateTopicsResponse, InitProducerIdRequest, InitProducerIdResponse,
    )
}

# kafka-python's json_patch renames these two int32 fields and makes them bitfields.
BITFIELDS = {"ClusterAuthorizedOperations", "TopicAuthorizedOperations"}
INT32_MIN = -(1 << 31)


def kp_json_versions(kp_cls: Any) -> tuple[int, int]:
    lo, hi = BaseField.parse_versions(kp_cls.json["validVersions"])
    return lo, hi


def shared_versions(name: str) -> list[int]:
    ours = SPECS[name].versions()
    lo, hi = kp_json_versions(KP_CLASSES[name])
    return [v for v in ours if lo <= v <= hi]


PAIRS = [(name, v) for name in KP_CLASSES for v in shared_versions(name)]


# ------------------------------------------------------------------ field matching


def kp_field_for(kp_struct: Any, f: FieldSpec) -> Any:
    """kafka-python's field for our field ``f`` (matched by Kafka's own field name)."""
    for kf in kp_struct._fields:
        if kf._name == f.name or (f.name in BITFIELDS and kf.name == "authorized_operations"):
            return kf
    raise AssertionError(f"kafka-python has no field {f.name} in {kp_struct._name}")


def bits_of(value: int) -> set[int] | None:
    bits = {b for b in range(32) if (value & 0xFFFFFFFF) >> b & 1}
    return None if bits == {31} else bits


def int_of(bits: set[int] | None) -> int:
    if bits is None:
        return INT32_MIN
    raw = BitField.to_32_bit_field(bits)
    return raw - (1 << 32) if raw & 0x80000000 else raw


# ------------------------------------------------------------------ ours -> kafka-python


def to_kp(spec: StructSpec, kp_struct: Any, obj: Any, v: int, flex: bool, top: Any = None) -> Any:
    kw: dict[str, Any] = {}
    for f in spec.fields:
        if not f.present(v):
            continue
        val = getattr(obj, f.py)
        if flex and f.is_tagged(v) and f.is_default(val):
            continue  # not on the wire: leave kafka-python's own default in place
        kf = kp_field_for(kp_struct, f)
        kw[kf.name] = _to_kp_field(f, kf, val, v, flex)
    cls = top if top is not None else kp_struct.data_class
    return cls(version=v, **kw)


def _to_kp_field(f: FieldSpec, kf: Any, val: Any, v: int, flex: bool) -> Any:
    if val is None:
        return None
    if f.struct is not None:
        if f.is_array:
            return [to_kp(f.struct, kf.array_of, x, v, flex) for x in val]
        return to_kp(f.struct, kf, val, v, flex)
    if f.name in BITFIELDS:
        return bits_of(val)
    if f.elem in ("bytes", "records"):
        return bytes(val)
    return list(val) if f.is_array else val


# ------------------------------------------------------------------ kafka-python -> ours


def from_kp(spec: StructSpec, kp_struct: Any, kobj: Any, v: int, flex: bool) -> Any:
    kw: dict[str, Any] = {}
    for f in spec.fields:
        if not f.present(v):
            continue
        kf = kp_field_for(kp_struct, f)
        val = getattr(kobj, kf.name)
        if flex and f.is_tagged(v) and val is None and f.default is not None:
            kw[f.py] = f.make_default()  # kafka-python's "absent tagged struct" is None
            continue
        kw[f.py] = _from_kp_field(f, kf, val, v, flex)
    return spec.cls(**kw)


def _from_kp_field(f: FieldSpec, kf: Any, val: Any, v: int, flex: bool) -> Any:
    if f.name in BITFIELDS:
        return int_of(val)
    if f.elem == "uuid" and not f.is_array and val is None:
        return ZERO_UUID  # kafka-python reads the all-zero uuid as None
    if val is None:
        return None
    if f.struct is not None:
        if f.is_array:
            return [from_kp(f.struct, kf.array_of, x, v, flex) for x in val]
        return from_kp(f.struct, kf, val, v, flex)
    if f.elem in ("bytes", "records"):
        return bytes(val)
    if f.elem == "uuid" and not isinstance(val, uuid.UUID):
        return uuid.UUID(val)
    return list(val) if f.is_array else val


def kp_value(spec: MessageSpec, msg: Any, v: int) -> Any:
    kp_cls = KP_CLASSES[spec.name]
    return to_kp(spec, kp_cls._struct, msg, v, spec.is_flexible(v), top=kp_cls)


def ours_from_kp(spec: MessageSpec, kobj: Any, v: int) -> Any:
    return from_kp(spec, KP_CLASSES[spec.name]._struct, kobj, v, spec.is_flexible(v))


def normalized(spec: MessageSpec, msg: Any, v: int) -> Any:
    """``msg`` with records/bytes as bytes (our decoder hands out memoryviews)."""
    return codec.decode(spec.cls, codec.encode(msg, v), v)


# ------------------------------------------------------------------ schemas agree


def _compare_struct(spec: StructSpec, kp_struct: Any, v: int, flex: bool, path: str) -> list[str]:
    diffs: list[str] = []
    ours = [f for f in spec.fields if f.present(v)]
    kp_present = [kf for kf in kp_struct._fields if kf.for_version_q(v)]
    if len(ours) != len(kp_present):
        diffs.append(f"{path}: {[f.name for f in ours]} vs {[kf._name for kf in kp_present]}")
        return diffs
    for f, kf in zip(ours, kp_present, strict=True):
        where = f"{path}.{f.name}"
        if kf is not kp_field_for(kp_struct, f):
            diffs.append(f"{where}: field order differs ({kf._name})")
            continue
        ktype = kf._json["type"] if f.name not in BITFIELDS else "int32"
        if ktype != f.type:
            diffs.append(f"{where}: type {f.type} vs {ktype}")
        if f.is_nullable(v) != kf.nullable_for_version_q(v):
            diffs.append(f"{where}: nullable {f.is_nullable(v)} vs {kf.nullable_for_version_q(v)}")
        if flex and (f.is_tagged(v), f.tag if f.is_tagged(v) else None) != (
            kf.tagged_field_q(v), kf.tag if kf.tagged_field_q(v) else None
        ):
            diffs.append(f"{where}: tagging differs")
        if f.struct is not None:
            sub = kf.array_of if f.is_array else kf
            diffs += _compare_struct(f.struct, sub, v, flex, where)
    return diffs


def test_the_cross_check_covers_fourteen_apis_requests_and_responses():
    assert len(KP_CLASSES) == 28
    assert {SPECS[n].api_key for n in KP_CLASSES} == {18, 3, 0, 1, 2, 10, 11, 14, 12, 13, 8, 9, 19, 22}
    assert all(shared_versions(n) for n in KP_CLASSES)
    assert len(PAIRS) > 200


@pytest.mark.parametrize("name", sorted(KP_CLASSES))
def test_both_schemas_agree_on_the_fields_of_every_shared_version(name):
    spec = SPECS[name]
    kp_cls = KP_CLASSES[name]
    assert spec.api_key == kp_cls.API_KEY
    diffs: list[str] = []
    for v in shared_versions(name):
        assert spec.is_flexible(v) == kp_cls.flexible_version_q(v), v
        diffs += _compare_struct(spec, kp_cls._struct, v, spec.is_flexible(v), f"{name} v{v}")
    assert diffs == []


# ------------------------------------------------------------------ bytes and values


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_we_and_kafka_python_write_the_same_bytes_and_read_each_others(name, version, data):
    spec = SPECS[name]
    msg = data.draw(message_value(spec, version))
    ours = codec.encode(msg, version)
    kobj = kp_value(spec, msg, version)
    theirs = kobj.encode(version=version)
    assert theirs == ours

    # We read kafka-python's bytes back to the same value.
    assert codec.decode(spec.cls, theirs, version, strict=True) == msg

    # kafka-python reads our bytes back to the same value.
    if name == "ApiVersionsResponse" and version > 0 and msg.error_code != 0:
        return  # kafka-python reads any error body as v0 (see the module docstring)
    back = KP_CLASSES[name].decode(ours, version=version)
    assert ours_from_kp(spec, back, version) == normalized(spec, msg, version)


# ------------------------------------------------------------------ headers


@pytest.mark.parametrize(("name", "version"), [p for p in PAIRS if p[0].endswith("Request")],
                         ids=[f"{n}-v{v}" for n, v in PAIRS if n.endswith("Request")])
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), correlation_id=st.integers(-(1 << 31), (1 << 31) - 1),
       client_id=st.one_of(st.none(), st.text(max_size=20)))
def test_request_frames_with_headers_are_byte_identical(name, version, data, correlation_id,
                                                         client_id):
    spec = SPECS[name]
    msg = data.draw(message_value(spec, version))
    ours = headers.encode_request(msg, version, correlation_id, client_id)
    kobj = kp_value(spec, msg, version)
    kobj.with_header(correlation_id=correlation_id, client_id=client_id)
    theirs = kobj.encode(version=version, header=True, framed=True)
    assert theirs == ours
    hv = headers.request_header_version(spec.api_key, version)  # type: ignore[arg-type]
    assert hv == (2 if spec.is_flexible(version) else 1)

    # kafka-python parses our header ...
    khead = KP_CLASSES[name].parse_header(_bytes_io(ours[4:]), version=version)
    assert (khead.request_api_key, khead.request_api_version, khead.correlation_id,
            khead.client_id) == (spec.api_key, version, correlation_id, client_id)
    # ... and we parse theirs.
    head, body_at = headers.decode_request_header(theirs[4:])
    assert (head.request_api_key, head.request_api_version, head.correlation_id,
            head.client_id) == (spec.api_key, version, correlation_id, client_id)
    assert codec.decode(spec.cls, memoryview(theirs)[4 + body_at:], version, strict=True) == msg


@pytest.mark.parametrize(("name", "version"), [p for p in PAIRS if p[0].endswith("Response")],
                         ids=[f"{n}-v{v}" for n, v in PAIRS if n.endswith("Response")])
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), correlation_id=st.integers(-(1 << 31), (1 << 31) - 1))
def test_response_frames_with_headers_are_byte_identical(name, version, data, correlation_id):
    spec = SPECS[name]
    msg = data.draw(message_value(spec, version))
    if name == "ApiVersionsResponse":
        msg.error_code = 0  # kafka-python reads an error body as v0 (module docstring)
    ours = b"".join(headers.encode_response(msg, version, correlation_id))
    kobj = kp_value(spec, msg, version)
    kobj.with_header(correlation_id=correlation_id)
    # (no version= here: kafka-python's API_VERSION setter would write request_api_version
    # into a ResponseHeader and fail; the object already carries its version)
    theirs = kobj.encode(header=True, framed=True)
    assert theirs == ours
    hv = headers.response_header_version(spec.api_key, version)  # type: ignore[arg-type]
    assert hv == (1 if spec.is_flexible(version) and name != "ApiVersionsResponse" else 0)

    back = KP_CLASSES[name].decode(ours, version=version, header=True, framed=True)
    assert back.header.correlation_id == correlation_id
    assert ours_from_kp(spec, back, version) == normalized(spec, msg, version)
    cid, mine = headers.decode_response(spec.cls, memoryview(theirs)[4:], version)
    assert cid == correlation_id and mine == msg


def test_kafka_python_request_header_schema_has_no_v0_so_header_v0_is_checked_elsewhere():
    lo, _hi = BaseField.parse_versions(KpRequestHeader._json["validVersions"])
    assert lo == 1
    assert BaseField.parse_versions(KpResponseHeader._json["validVersions"]) == (0, 1)


def _bytes_io(b: bytes) -> Any:
    import io

    return io.BytesIO(b)


# ------------------------------------------------------------------ versions Kafka 4 dropped

# kafka-python 3's JSON schemas start where Kafka 4 does (KIP-896), but it still ships its
# earlier, hand-written protocol classes (``kafka.protocol.old``: one Struct class per
# version, tuples of fields in wire order).  They are a second independent encoder, and
# the only one for the old versions: cross-check them there.
OLD_MODULES = {
    "Produce": "produce", "Fetch": "fetch", "ListOffsets": "list_offsets",
    "OffsetCommit": "commit", "OffsetFetch": "commit", "CreateTopics": "admin",
}


def _old_class(name: str, version: int) -> Any:
    import importlib

    api = name.removesuffix("Request").removesuffix("Response")
    module = importlib.import_module(f"kafka.protocol.old.{OLD_MODULES[api]}")
    return getattr(module, f"{name}_v{version}")


OLD_PAIRS = [
    (name, v)
    for name in KP_CLASSES
    if name.removesuffix("Request").removesuffix("Response") in OLD_MODULES
    for v in SPECS[name].versions()
    if v < kp_json_versions(KP_CLASSES[name])[0]
]


def as_tuple(spec: StructSpec, obj: Any, v: int) -> tuple[Any, ...]:
    """A struct value as kafka-python's old classes hold it: fields in wire order."""
    out = []
    for f in spec.fields:
        if not f.present(v):
            continue
        val = getattr(obj, f.py)
        if val is not None:
            if f.struct is not None:
                val = ([as_tuple(f.struct, x, v) for x in val] if f.is_array
                       else as_tuple(f.struct, val, v))
            elif f.elem in ("bytes", "records"):
                val = bytes(val)
            elif f.is_array:
                val = list(val)
        out.append(val)
    return tuple(out)


def _plain(x: Any) -> Any:
    """kafka-python's decoded Structs/tuples/lists as plain tuples and lists."""
    if hasattr(x, "SCHEMA"):
        return tuple(_plain(getattr(x, n)) for n in x.SCHEMA.names)
    if isinstance(x, tuple):
        return tuple(_plain(i) for i in x)
    if isinstance(x, list):
        return [_plain(i) for i in x]
    if isinstance(x, memoryview | bytearray):
        return bytes(x)
    return x


def test_the_old_classes_cover_every_version_kafka_4_dropped():
    assert {(n, v) for n, v in OLD_PAIRS} >= {
        ("ProduceRequest", 0), ("ProduceResponse", 2), ("FetchRequest", 3),
        ("ListOffsetsResponse", 0), ("OffsetCommitRequest", 1), ("OffsetFetchResponse", 0),
        ("CreateTopicsRequest", 1)}
    assert len(OLD_PAIRS) == 2 * (3 + 4 + 1 + 2 + 1 + 2)


@pytest.mark.parametrize(("name", "version"), OLD_PAIRS, ids=[f"{n}-v{v}" for n, v in OLD_PAIRS])
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_we_and_kafka_pythons_old_classes_agree_on_the_versions_kafka_4_dropped(name, version,
                                                                                  data):
    spec = SPECS[name]
    old = _old_class(name, version)
    msg = data.draw(message_value(spec, version))
    ours = codec.encode(msg, version)
    theirs = old(*as_tuple(spec, msg, version)).encode()
    assert theirs == ours
    assert codec.decode(spec.cls, theirs, version, strict=True) == msg
    assert _plain(old.decode(ours)) == as_tuple(spec, msg, version)
