"""The console's pure parts: how keys and values are shown, reading a consumer assignment,
throughput from offset samples, the listener address."""

from __future__ import annotations

import struct

import pytest

from kbroker.console.client import member_assignment
from kbroker.console.render import decode, esc, human_bytes, iso_ms
from kbroker.console.server import parse_listener
from kbroker.console.throughput import ThroughputSampler


def test_auto_shows_json_pretty_text_as_is_and_binary_as_hex():
    assert decode(b'{"a":1}', "auto") == ('{\n "a": 1\n}', "json")
    assert decode(b"hello", "auto") == ("hello", "text")
    assert decode(b"{not json", "auto") == ("{not json", "text")
    assert decode(b"\xff\x00", "auto") == ("ff 00", "hex")
    assert decode(None, "auto") == ("null", "null")
    assert decode(b"hi", "hex") == ("68 69", "hex")
    assert decode(b"plain", "json") == ("plain", "text invalid-json")


def test_markup_in_record_contents_is_escaped():
    assert esc('<script>alert("x")</script>') == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"


def test_sizes_and_times_read_as_a_person_expects():
    assert [human_bytes(n) for n in (0, 1023, 1024, 5 * 1024 * 1024)] == ["0 B", "1023 B", "1.0 KiB", "5.0 MiB"]
    assert iso_ms(1_700_000_000_123) == "2023-11-14 22:13:20.123Z"
    assert iso_ms(-1) == "-"


def test_a_consumer_protocol_assignment_lists_its_partitions():
    data = struct.pack(">hi", 3, 2) + struct.pack(">h", 1) + b"a" + struct.pack(">iii", 2, 1, 0) \
        + struct.pack(">h", 1) + b"b" + struct.pack(">ii", 1, 7) + struct.pack(">i", -1)
    assert member_assignment(data) == [("a", 0), ("a", 1), ("b", 7)]
    assert member_assignment(b"\x00") == []
    assert member_assignment(None) == []


def test_throughput_is_the_offset_difference_over_time_and_a_new_topic_starts_at_zero():
    s = ThroughputSampler(client=None)  # type: ignore[arg-type]
    s.samples.extend([(100.0, {"a": 10}), (102.0, {"a": 30, "b": 500}), (104.0, {"a": 30, "b": 520})])
    assert s.rates() == {"t": [102.0, 104.0], "series": {"a": [10.0, 0.0], "b": [0.0, 10.0]}}
    assert s.rates("b") == {"t": [102.0, 104.0], "series": {"b": [0.0, 10.0]}}


def test_the_listener_is_an_http_host_and_port():
    assert parse_listener("http://127.0.0.1:9080") == ("127.0.0.1", 9080)
    assert parse_listener("localhost:0") == ("localhost", 0)
    with pytest.raises(ValueError):
        parse_listener("https://x:1")
    with pytest.raises(ValueError):
        parse_listener("http://x")
