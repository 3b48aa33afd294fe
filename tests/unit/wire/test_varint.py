"""Varints: known encodings, a naive reference, kafka-python agreement, bounded decoding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import util as kp_util

from wire.errors import DecodeError
from wire.varint import (
    decode_unsigned_varint,
    decode_unsigned_varlong,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_unsigned_varlong,
    encode_varint,
    encode_varlong,
    size_of_unsigned_varint,
    size_of_varint,
    size_of_varlong,
    write_unsigned_varint,
    write_varint,
    write_varlong,
)

I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)


def naive_unsigned(value: int) -> bytes:
    out = []
    while True:
        if value < 128:
            out.append(value)
            return bytes(out)
        out.append(128 | (value % 128))
        value //= 128


def naive_zigzag(value: int) -> int:
    return 2 * value if value >= 0 else -2 * value - 1


@pytest.mark.parametrize("value,encoded", [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (63, b"\x7e"),
    (64, b"\x80\x01"), (300, b"\xd8\x04"), (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
    (-(2**31), b"\xff\xff\xff\xff\x0f"),
])
def test_known_zigzag_varint_encodings(value, encoded):
    assert encode_varint(value) == encoded
    assert decode_varint(encoded) == (value, len(encoded))
    assert size_of_varint(value) == len(encoded)


def test_unsigned_varints_as_flexible_versions_use_them():
    assert encode_unsigned_varint(0) == b"\x00"
    assert encode_unsigned_varint(127) == b"\x7f"
    assert encode_unsigned_varint(128) == b"\x80\x01"
    assert encode_unsigned_varint(2**32 - 1) == b"\xff\xff\xff\xff\x0f"
    assert decode_unsigned_varint(b"\xff\xff\xff\xff\x0f") == (2**32 - 1, 5)


@given(I32)
def test_varints_match_a_naive_reference_and_kafka_python(value):
    encoded = encode_varint(value)
    assert encoded == naive_unsigned(naive_zigzag(value))
    out = bytearray()
    kp_util.encode_varint(value, out.append)
    assert bytes(out) == encoded
    assert decode_varint(b"\xaa" + encoded + b"\xbb", 1) == (value, 1 + len(encoded))
    assert size_of_varint(value) == len(encoded)


@given(I64)
def test_varlongs_match_a_naive_reference(value):
    encoded = encode_varlong(value)
    assert encoded == naive_unsigned(naive_zigzag(value))
    assert decode_varlong(memoryview(encoded)) == (value, len(encoded))
    assert size_of_varlong(value) == len(encoded)


@given(st.integers(0, 2**64 - 1))
def test_unsigned_varlongs_round_trip(value):
    encoded = encode_unsigned_varlong(value)
    assert decode_unsigned_varlong(bytearray(encoded)) == (value, len(encoded))
    assert size_of_unsigned_varint(value) == len(encoded)


def test_write_helpers_append():
    out = bytearray(b"x")
    write_varint(out, -1)
    write_varlong(out, 1)
    write_unsigned_varint(out, 128)
    assert bytes(out) == b"x\x01\x02\x80\x01"


@pytest.mark.parametrize("decoder", [decode_varint, decode_varlong, decode_unsigned_varint,
                                     decode_unsigned_varlong])
def test_truncated_varints_are_decode_errors(decoder):
    for data in (b"", b"\x80", b"\xff\xff", b"\x80\x80\x80\x80"):
        with pytest.raises(DecodeError):
            decoder(data)
    with pytest.raises(DecodeError):
        decoder(b"\x00", 1)
    with pytest.raises(DecodeError):
        decoder(b"\x00", -1)


def test_overlong_varints_are_decode_errors():
    with pytest.raises(DecodeError, match="longer"):
        decode_varint(b"\x80\x80\x80\x80\x80\x00")
    with pytest.raises(DecodeError, match="longer"):
        decode_varlong(b"\x80" * 10 + b"\x00")
    with pytest.raises(DecodeError, match="longer"):
        decode_unsigned_varint(b"\xff" * 50)


def test_values_too_wide_for_their_type_are_decode_errors():
    with pytest.raises(DecodeError, match="range"):
        decode_varint(b"\xff\xff\xff\xff\x1f")  # 35 bits in a 32-bit varint
    with pytest.raises(DecodeError, match="range"):
        decode_varlong(b"\xff" * 9 + b"\x7f")  # 70 bits in a 64-bit varlong


def test_encoders_refuse_values_outside_their_type():
    for encode, bad in ((encode_varint, 2**31), (encode_varint, -(2**31) - 1),
                        (encode_varlong, 2**63), (encode_unsigned_varint, -1),
                        (encode_unsigned_varint, 2**32), (encode_unsigned_varlong, 2**64)):
        with pytest.raises(ValueError):
            encode(bad)


@given(st.binary(max_size=12), st.integers(0, 12))
@settings(max_examples=300)
def test_any_bytes_decode_or_raise_decode_error(data, pos):
    for decoder in (decode_varint, decode_varlong, decode_unsigned_varint,
                    decode_unsigned_varlong):
        try:
            value, end = decoder(data, pos)
        except DecodeError:
            continue
        assert pos < end <= len(data)
