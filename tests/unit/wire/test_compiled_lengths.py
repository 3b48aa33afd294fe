"""Compact lengths of every varint width: the compiled codec's inline length encoding
(one-byte table, ``_uv_long``) writes what the interpreter writes and reads back.

The hypothesis round trips use short values, so lengths >= 128 need their own test."""

from __future__ import annotations

import pytest

from wire import codec, interpreter
from wire import messages as m
from wire.compiler import _uv_long
from wire.schema import SPECS
from wire.varint import encode_unsigned_varint

BOUNDARIES = [0, 1, 126, 127, 128, 129, 16382, 16383, 16384, 2_097_151, 2_097_152]


@pytest.mark.parametrize("n", BOUNDARIES)
def test_compact_records_strings_and_arrays_of_every_varint_width_match_the_interpreter(n):
    fetch = m.FetchResponse(responses=[m.FetchResponse.FetchableTopicResponse(
        topic="t" * n, partitions=[m.FetchResponse.PartitionData(records=memoryview(bytes(n)))])])
    meta = m.MetadataResponse(topics=[m.MetadataResponse.MetadataResponseTopic(
        name="x", partitions=[m.MetadataResponse.MetadataResponsePartition(
            replica_nodes=list(range(min(n, 16385))))])])  # widths beyond: _uv_long below
    for msg, version in ((fetch, 12), (meta, 12)):
        wire_bytes = codec.encode(msg, version)
        assert wire_bytes == interpreter.encode(SPECS[type(msg).__name__], msg, version)
        assert codec.decode(type(msg), wire_bytes, version, strict=True) == msg


def test_long_varints_equal_the_reference_encoder_at_every_byte_boundary():
    values = {2**k + d for k in range(7, 32) for d in (-1, 0, 1)} | {128, 2**32 - 1}
    for v in sorted(x for x in values if 128 <= x < 2**32):
        assert _uv_long(v) == encode_unsigned_varint(v), v
    with pytest.raises(ValueError):
        _uv_long(2**32)
