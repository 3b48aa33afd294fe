"""Request and response headers: which version each (api, version) uses, and their bytes.

The rules (RequestHeader.json / ResponseHeader.json, KIP-482, KIP-511): flexible requests
use request header v2, others v1, except ControlledShutdown v0 (header v0); flexible
responses use response header v1, others v0, except ApiVersions (always v0, because a
client parses it before it knows which versions the broker speaks).  The client_id in
request header v2 stays an int16-length string, not a compact one.
"""

from __future__ import annotations

import struct

import pytest

from wire import messages as m
from wire.codec import encode
from wire.errors import DecodeError
from wire.headers import (
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from wire.schema import REQUESTS, RESPONSES

API_VERSIONS = 18
CONTROLLED_SHUTDOWN = 7


@pytest.mark.parametrize("version", range(5))
def test_api_versions_responses_use_header_v0_at_every_version_even_flexible_ones(version):
    assert response_header_version(API_VERSIONS, version) == 0
    resp = m.ApiVersionsResponse(error_code=0, api_keys=[
        m.ApiVersionsResponse.ApiVersion(api_key=0, min_version=0, max_version=9)])
    frame = b"".join(encode_response(resp, version, correlation_id=77))
    body = encode(resp, version)
    # size, correlation id, body: no tagged-field byte between header and body
    assert frame == struct.pack(">ii", 4 + len(body), 77) + body
    cid, back = decode_response(m.ApiVersionsResponse, frame[4:], version)
    assert (cid, back) == (77, resp)


def test_api_versions_v3_and_v4_bodies_are_flexible_although_their_header_is_not():
    assert RESPONSES[API_VERSIONS].is_flexible(3) and RESPONSES[API_VERSIONS].is_flexible(4)
    assert request_header_version(API_VERSIONS, 3) == 2  # the request side follows the rule


@pytest.mark.parametrize(("api_key", "version"), [
    (k, v) for k, s in sorted(REQUESTS.items()) for v in s.versions()
])
def test_the_header_versions_follow_flexible_versions_with_the_two_exceptions(api_key, version):
    flexible = REQUESTS[api_key].is_flexible(version)
    if api_key == CONTROLLED_SHUTDOWN and version == 0:
        expect_request = 0
    else:
        expect_request = 2 if flexible else 1
    assert request_header_version(api_key, version) == expect_request
    expect_response = 0 if api_key == API_VERSIONS else (1 if flexible else 0)
    assert response_header_version(api_key, version) == expect_response


def test_flexible_requests_use_header_v2_with_an_int16_length_client_id():
    req = m.MetadataRequest(topics=None, allow_auto_topic_creation=True)
    frame = encode_request(req, 9, correlation_id=5, client_id="abc")
    body = encode(req, 9)
    head = struct.pack(">hhi", 3, 9, 5) + b"\x00\x03abc" + b"\x00"  # not compact: \x04abc
    assert frame == struct.pack(">i", len(head) + len(body)) + head + body
    parsed, at = decode_request_header(frame[4:])
    assert (parsed.request_api_key, parsed.request_api_version, parsed.correlation_id,
            parsed.client_id) == (3, 9, 5, "abc")
    assert at == len(head)


def test_a_null_client_id_is_minus_one_in_header_v1_and_v2():
    for version, tail in ((8, b""), (9, b"\x00")):
        frame = encode_request(m.MetadataRequest(topics=[]), version, 1, None)
        head = struct.pack(">hhi", 3, version, 1) + b"\xff\xff" + tail
        assert frame[4 : 4 + len(head)] == head
        parsed, at = decode_request_header(frame[4:])
        assert parsed.client_id is None and at == 10 + len(tail)


def test_non_flexible_requests_use_header_v1_without_a_tagged_field_section():
    frame = encode_request(m.MetadataRequest(topics=[]), 8, 9, "c")
    assert frame[4:] == struct.pack(">hhi", 3, 8, 9) + b"\x00\x01c" + encode(
        m.MetadataRequest(topics=[]), 8)


def test_controlled_shutdown_v0_uses_header_v0_without_a_client_id():
    req = m.ControlledShutdownRequest(broker_id=3)
    assert request_header_version(CONTROLLED_SHUTDOWN, 0) == 0
    assert request_header_version(CONTROLLED_SHUTDOWN, 1) == 1
    frame = encode_request(req, 0, correlation_id=42, client_id="ignored")
    assert frame == struct.pack(">ihhi", 8 + 4, CONTROLLED_SHUTDOWN, 0, 42) + struct.pack(">i", 3)
    parsed, at = decode_request_header(frame[4:])
    assert (parsed.request_api_key, parsed.correlation_id, parsed.client_id, at) == (7, 42, None, 8)


def test_flexible_responses_carry_an_empty_tagged_field_section_after_the_correlation_id():
    resp = m.HeartbeatResponse(error_code=27)
    frame = b"".join(encode_response(resp, 4, correlation_id=3))
    body = encode(resp, 4)
    assert frame == struct.pack(">ii", 5 + len(body), 3) + b"\x00" + body
    assert decode_response(m.HeartbeatResponse, frame[4:], 4) == (3, resp)
    frame0 = b"".join(encode_response(resp, 3, correlation_id=3))
    assert frame0 == struct.pack(">ii", 4 + len(encode(resp, 3)), 3) + encode(resp, 3)


def test_unknown_tagged_fields_in_headers_are_skipped():
    body = encode(m.HeartbeatRequest(group_id="g"), 4)
    head = struct.pack(">hhi", 12, 4, 8) + b"\x00\x01c" + b"\x02" + b"\x05\x02hi" + b"\x09\x00"
    parsed, at = decode_request_header(head + body)
    assert (parsed.correlation_id, parsed.client_id, at) == (8, "c", len(head))
    resp_head = struct.pack(">i", 8) + b"\x01" + b"\x00\x03abc"
    cid, msg = decode_response(m.HeartbeatResponse, resp_head + encode(
        m.HeartbeatResponse(error_code=1), 4), 4)
    assert (cid, msg.error_code) == (8, 1)


def test_an_unknown_api_key_is_read_with_header_v1_so_it_can_be_answered():
    frame = struct.pack(">hhi", 999, 3, 17) + b"\x00\x02id" + b"junk"
    parsed, at = decode_request_header(frame)
    assert (parsed.request_api_key, parsed.request_api_version, parsed.correlation_id,
            parsed.client_id, at) == (999, 3, 17, "id", 12)


def test_an_unsupported_api_versions_version_is_still_parsed_for_its_correlation_id():
    frame = struct.pack(">hhi", API_VERSIONS, 127, 99) + b"\x00\x00" + b"\x00"
    parsed, _ = decode_request_header(frame)
    assert (parsed.request_api_version, parsed.correlation_id, parsed.client_id) == (127, 99, "")


@pytest.mark.parametrize("frame", [
    b"", b"\x00\x03\x00", struct.pack(">hhi", 3, 1, 1),  # no client_id length
    struct.pack(">hhi", 3, 1, 1) + b"\x00",
    struct.pack(">hhi", 3, 1, 1) + b"\x00\x05ab",  # client_id past the end
    struct.pack(">hhi", 3, 9, 1) + b"\xff\xff",  # flexible: tagged section missing
    struct.pack(">hhi", 3, 9, 1) + b"\xff\xff\x01\x00\x7f",  # tagged field past the end
    struct.pack(">hhi", 3, 9, 1) + b"\xff\xff\xff\xff\xff\xff\xff",  # overlong varint
])
def test_malformed_request_headers_raise_decode_error(frame):
    with pytest.raises(DecodeError):
        decode_request_header(frame)


@pytest.mark.parametrize("frame", [b"", b"\x00\x00\x00", struct.pack(">i", 1) + b"\x01\x00\x7f",
                                   struct.pack(">i", 1) + b"\x80"])
def test_malformed_response_headers_raise_decode_error(frame):
    with pytest.raises(DecodeError):
        decode_response(m.HeartbeatResponse, frame, 4)


def test_a_client_id_that_is_not_utf8_is_read_with_replacement_characters_as_java_does():
    frame = b"\x00\x12\x00\x02\x00\x00\x00\x09\x00\x03\xff\xfe\xfd"
    header, offset = decode_request_header(frame)
    assert (header.client_id, header.correlation_id, offset) == ("\ufffd\ufffd\ufffd", 9, len(frame))


def test_a_body_string_that_is_not_utf8_is_read_with_replacement_characters_as_java_does():
    from wire import decode
    from wire.messages import MetadataRequest

    body = b"\x00\x00\x00\x01\x00\x02a\xff"
    assert decode(MetadataRequest, body, 1).topics[0].name == "a\ufffd"
