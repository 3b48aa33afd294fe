"""A topic whose compression.type names a codec stores every produced batch in that codec."""

from __future__ import annotations

import time

import pytest

from log.config import LogConfig
from log.errors import RecordTooLargeError
from log.validator import validate_and_assign_offsets
from wire.record_batch import build_batch, iter_batches

NOW = int(time.time() * 1000)
CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _batch(codec: int, n: int = 20) -> bytearray:
    return bytearray(build_batch(
        [(f"k{i}".encode(), b"v" * 50, [("h", f"{i}".encode())], NOW + i) for i in range(n)],
        compression=codec, producer_id=7, producer_epoch=2, base_sequence=5))


@pytest.mark.parametrize("topic_codec", sorted(CODECS))
@pytest.mark.parametrize("sent_codec", sorted(CODECS.values()))
def test_a_batch_is_stored_in_the_topics_codec_with_its_records_and_producer_fields_intact(topic_codec, sent_codec):
    sent = _batch(sent_codec)
    (original,) = iter_batches(bytes(sent))
    result = validate_and_assign_offsets(sent, 100, NOW, LogConfig.from_properties({"compression.type": topic_codec}))
    (stored,) = iter_batches(bytes(result.records))
    assert stored.compression == CODECS[topic_codec]
    assert stored.is_crc_valid()
    assert (stored.base_offset, stored.last_offset_delta, stored.producer_id, stored.producer_epoch,
            stored.base_sequence) == (100, 19, 7, 2, 5)
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in stored.records()] == \
        [(100 + i, r.key, r.value, r.headers, r.timestamp) for i, r in enumerate(original.records())]
    assert (result.first_offset, result.last_offset, result.max_timestamp) == (100, 119, NOW + 19)


def test_producer_keeps_the_batch_byte_for_byte_apart_from_its_offset():
    sent = _batch(3)
    copy = bytes(sent)
    result = validate_and_assign_offsets(sent, 0, NOW, LogConfig.from_properties({"compression.type": "producer"}))
    assert bytes(result.records) == copy  # base offset 0 assigned onto base offset 0


def test_a_batch_that_grows_past_max_message_bytes_when_decompressed_is_refused():
    sent = _batch(4, n=200)
    config = LogConfig.from_properties({"compression.type": "uncompressed", "max.message.bytes": str(len(sent) + 100)})
    with pytest.raises(RecordTooLargeError):
        validate_and_assign_offsets(sent, 0, NOW, config)


def test_the_codec_level_is_used_when_recompressing():
    sent = _batch(0, n=200)
    low = validate_and_assign_offsets(bytearray(sent), 0, NOW, LogConfig.from_properties(
        {"compression.type": "gzip", "compression.gzip.level": "1"}))
    high = validate_and_assign_offsets(bytearray(sent), 0, NOW, LogConfig.from_properties(
        {"compression.type": "gzip", "compression.gzip.level": "9"}))
    assert bytes(low.records) != bytes(high.records)
