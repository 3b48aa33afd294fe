"""Every version of every message in the table round-trips, and the compiled codec
writes exactly the bytes of the table-driven reference interpreter."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.properties.wire.message_strategies import all_versions, message_value
from wire import codec, interpreter
from wire.schema import SPECS

PAIRS = all_versions(SPECS)


def test_the_table_covers_every_api_key_in_requests_and_responses():
    assert len(PAIRS) > 700
    req = {s.api_key for s in SPECS.values() if s.kind == "request"}
    resp = {s.api_key for s in SPECS.values() if s.kind == "response"}
    assert req == resp and {0, 1, 2, 3, 18, 22, 75} <= req


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_decode_of_encode_is_identity_and_compiled_bytes_equal_the_interpreter(name, version, data):
    spec = SPECS[name]
    msg = data.draw(message_value(spec, version))
    wire_bytes = codec.encode(msg, version)
    assert wire_bytes == interpreter.encode(spec, msg, version)
    back = codec.decode(spec.cls, wire_bytes, version, strict=True)
    assert back == msg
    ref, consumed = interpreter.decode(spec, wire_bytes, version)
    assert ref == msg and consumed == len(wire_bytes)
