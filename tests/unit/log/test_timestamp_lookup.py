"""By-timestamp lookups against a brute-force scan of every record (hypothesis)."""

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from log.config import LogConfig
from log.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from wire.compression import Compression
from wire.record_batch import iter_batches

from .helpers import batch, open_log

CFG = LogConfig(segment_bytes=1500, segment_index_bytes=240, index_interval_bytes=150,
                message_timestamp_after_max_ms=10**12)
T0 = 1_700_000_000_000

batches_st = st.lists(
    st.tuples(st.lists(st.integers(0, 5000), min_size=1, max_size=6),
              st.sampled_from([Compression.NONE, Compression.GZIP, Compression.LZ4, Compression.ZSTD])),
    min_size=1, max_size=25)


def _brute_force(log, target):
    for seg in log.log_segments():
        for b in iter_batches(open(seg.log.path, "rb").read()):
            for r in b.records():
                if r.timestamp >= target and r.offset >= log.log_start_offset:
                    return r.offset, r.timestamp
    return None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=batches_st, targets=st.lists(st.integers(-10, 5100), min_size=1, max_size=8),
       log_append_time=st.booleans())
def test_offset_for_timestamp_equals_a_brute_force_scan(tmp_path_factory, batches, targets, log_append_time):
    cfg = replace(CFG, message_timestamp_type="LogAppendTime") if log_append_time else CFG
    log = open_log(tmp_path_factory.mktemp("ts"), cfg)
    for stamps, codec in batches:
        log.clock.sleep(7)
        log.append_as_leader(batch(timestamps=[T0 + s for s in stamps], compression=codec, value_size=20))
    lo = min(s for stamps, _ in batches for s in stamps)
    for t in targets + [lo, 10**6]:
        target = T0 + t if not log_append_time else log.clock.milliseconds() - 7 * len(batches) + t // 50
        got = log.fetch_offset_by_timestamp(target)
        want = _brute_force(log, target)
        assert (None if got is None else (got.offset, got.timestamp)) == want, target


def test_earliest_latest_and_max_timestamp_lookups(tmp_path):
    log = open_log(tmp_path, CFG)
    log.append_as_leader(batch(timestamps=[T0 + 5, T0 + 1]))
    log.append_as_leader(batch(timestamps=[T0 + 2, T0 + 9, T0 + 3], compression=Compression.SNAPPY))
    log.append_as_leader(batch(timestamps=[T0 + 4]))
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == 0
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP).offset == 6
    m = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert (m.offset, m.timestamp) == (3, T0 + 9)
