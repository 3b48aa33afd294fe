"""Shared helpers for the tests of log/ (and the kbroker tests that open logs): batch builders
and a small-config log factory."""

from __future__ import annotations

import os

from log.clock import ManualClock
from log.config import LogConfig
from log.log import Log
from log.scheduler import Scheduler
from wire.compression import Compression
from wire.record_batch import TimestampType, build_batch

SMALL = LogConfig(segment_bytes=4096, segment_index_bytes=1024, index_interval_bytes=256)


def batch(n: int = 3, ts: int = 1_700_000_000_000, value_size: int = 40, *, compression=Compression.NONE,
          timestamps: list[int] | None = None, log_append_time: bool = False, **kw) -> bytearray:
    stamps = timestamps if timestamps is not None else [ts + i for i in range(n)]
    recs = [(b"k%d" % i, bytes([65 + i % 26]) * value_size, None, t) for i, t in enumerate(stamps)]
    tt = TimestampType.LOG_APPEND_TIME if log_append_time else TimestampType.CREATE_TIME
    return bytearray(build_batch(recs, compression=compression, timestamp_type=tt, **kw))


def open_log(tmp_path, config: LogConfig = SMALL, clock: ManualClock | None = None,
             scheduler: Scheduler | None = None, name: str = "topic-0", **kw) -> Log:
    clock = clock or ManualClock()
    scheduler = scheduler or Scheduler(clock)
    return Log.open(os.path.join(str(tmp_path), name), config, clock, scheduler, **kw)


def reopen(log: Log, clean: bool, **kw) -> Log:
    """Reopen ``log``'s directory as after a clean shutdown or a crash (kill -9)."""
    rp = kw.pop("recovery_point", 0)
    if clean:
        log.flush()
        log.close()
    else:
        log.close_handlers()
    return Log.open(log.dir, log.config, log.clock, log.scheduler, log_start_offset=log.log_start_offset,
                    recovery_point=log.recovery_point if clean else rp,
                    had_clean_shutdown=clean, **kw)


# ---- compaction helpers

COMPACT = LogConfig(segment_bytes=2048, segment_index_bytes=1024, index_interval_bytes=256,
                    cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0)


def keyed(records, ts: int = 1_700_000_000_000, **kw) -> bytearray:
    """One batch of ``(key, value)`` pairs (str or bytes; value None = tombstone)."""
    enc = [(k.encode() if isinstance(k, str) else k, v.encode() if isinstance(v, str) else v, None, ts)
           for k, v in records]
    return bytearray(build_batch(enc, **kw))


def read_records(log: Log, start: int | None = None) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from ``start`` (the log start offset) to the high
    watermark, read through ``Log.read`` as a consumer would."""
    from wire.record_batch import iter_batches

    out = []
    offset = log.log_start_offset if start is None else start
    while offset < log.high_watermark:
        data = log.read(offset, 1 << 20).records.read()
        if not data:
            break
        for b in iter_batches(data):
            for r in b:
                if r.offset >= offset:
                    out.append((r.offset, r.key, r.value))
            offset = max(offset, b.next_offset)
    return out


def latest_per_key(records) -> dict[bytes | None, tuple[int, bytes | None]]:
    out = {}
    for offset, key, value in records:
        out[key] = (offset, value)
    return out
