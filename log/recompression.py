"""Broker-side recompression: topics whose ``compression.type`` names a codec.

Kafka's LogValidator keeps a produced batch as sent (in place) when the topic's
compression.type is ``producer`` or equals the batch's codec; otherwise it decompresses the
records and writes a new batch in the topic's codec (``buildRecordsAndAssignOffsets``)
with the same producer id/epoch/base sequence, transactional flag, partition leader
epoch and timestamp type, records keeping their keys, values, headers and timestamps,
offsets assigned consecutively from the batch's base offset, and the codec's level from
``compression.<codec>.level`` (KIP-390).  ``uncompressed`` decompresses.  Control batches
are never rewritten.  This is the one produce path that decodes records; it only runs
when an operator asked for it.
"""

from __future__ import annotations

from log.config import LogConfig
from wire.batch_header import BatchHeader, parse_header
from wire.record_batch import RecordBatch, TimestampType, build_batch, set_log_append_time

# compression.type value -> Kafka's codec id
CODEC_IDS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def target_codec(config: LogConfig) -> int | None:
    """The codec every stored batch must have, or None when producers choose (``producer``)."""
    return CODEC_IDS.get(config.compression_type)


def _level(config: LogConfig, codec: int) -> int | None:
    return {1: config.compression_gzip_level, 3: config.compression_lz4_level,
            4: config.compression_zstd_level}.get(codec)


def needs_recompression(config: LogConfig, headers: list[BatchHeader]) -> bool:
    codec = target_codec(config)
    return codec is not None and any(h.compression != codec and not h.is_control for h in headers)


def recompress(buf: memoryview, headers: list[BatchHeader], config: LogConfig,
               log_append_time: int | None) -> tuple[bytearray, list[BatchHeader]]:
    """Rewrite the (validated, offset-assigned) batches of ``buf`` into the topic's codec.
    ``log_append_time`` is set on the new batches for LogAppendTime topics."""
    codec = target_codec(config)
    assert codec is not None
    out = bytearray()
    new_headers = []
    pos = 0
    for h in headers:
        size = h.batch_length + 12
        if h.compression == codec or h.is_control:
            start = len(out)
            out += buf[pos : pos + size]
            new_headers.append(parse_header(out, start))
            pos += size
            continue
        batch = RecordBatch(buf, pos)
        start = len(out)
        out += build_batch(
            batch.records(), base_offset=h.base_offset, compression=codec,
            timestamp_type=TimestampType.LOG_APPEND_TIME if h.is_log_append_time else TimestampType.CREATE_TIME,
            producer_id=h.producer_id, producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
            is_transactional=h.is_transactional, partition_leader_epoch=h.partition_leader_epoch,
            compression_level=_level(config, codec))
        if log_append_time is not None:
            set_log_append_time(memoryview(out), start, log_append_time)
        new_headers.append(parse_header(out, start))
        pos += size
    return out, new_headers
