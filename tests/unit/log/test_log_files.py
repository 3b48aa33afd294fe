"""On-disk layout: names, index contents, preallocation and trimming."""

import os

from log.config import LogConfig
from wire.batch_header import parse_header

from .helpers import batch, open_log

CFG = LogConfig(segment_bytes=3000, segment_index_bytes=800, index_interval_bytes=200)


def _fill_three_segments(tmp_path):
    log = open_log(tmp_path, CFG)
    while log.number_of_segments() < 3:
        log.append_as_leader(batch(n=2 + log.log_end_offset % 3))
    for _ in range(5):
        log.append_as_leader(batch())
    return log


def test_three_segments_are_named_by_their_20_digit_base_offsets(tmp_path):
    log = _fill_three_segments(tmp_path)
    bases = [s.base_offset for s in log.log_segments()]
    names = sorted(n for n in os.listdir(log.dir) if n.endswith(".log"))
    assert names == [f"{b:020d}.log" for b in bases]
    assert all(os.path.exists(os.path.join(log.dir, f"{b:020d}{s}")) for b in bases for s in (".index", ".timeindex"))
    assert bases[0] == 0 and bases == sorted(bases)


def test_every_index_entry_points_at_a_batch_start_holding_its_offset(tmp_path):
    log = _fill_three_segments(tmp_path)
    checked = 0
    for seg in log.log_segments():
        data = open(seg.log.path, "rb").read()
        for entry in seg.offset_index.all_entries():
            h = parse_header(data, entry.position)
            assert h.base_offset <= entry.offset <= h.last_offset  # Kafka indexes the last offset
            checked += 1
    assert checked > 3


def test_time_index_is_monotonic_and_its_offsets_exist(tmp_path):
    log = _fill_three_segments(tmp_path)
    for seg in log.log_segments():
        entries = seg.time_index.all_entries()
        assert entries == sorted(entries)
        assert all(a.timestamp < b.timestamp and a.offset <= b.offset for a, b in zip(entries, entries[1:], strict=False))


def test_indexes_are_preallocated_while_active_and_trimmed_on_roll_and_close(tmp_path):
    log = _fill_three_segments(tmp_path)
    *old, active = log.log_segments()
    assert os.path.getsize(active.offset_index.path) == 800
    assert os.path.getsize(active.time_index.path) == 792  # rounded down to 12-byte entries
    for seg in old:
        assert os.path.getsize(seg.offset_index.path) == 8 * seg.offset_index.entries
        assert os.path.getsize(seg.time_index.path) == 12 * seg.time_index.entries
    active_paths = (active.offset_index.path, active.time_index.path)
    log.close()
    assert os.path.getsize(active_paths[0]) % 8 == 0 and os.path.getsize(active_paths[0]) < 800
    assert os.path.getsize(active_paths[1]) < 792
