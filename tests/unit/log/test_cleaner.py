"""Log compaction: what a cleaning keeps, where it stops, and what it leaves on disk."""

import os
import struct
from dataclasses import replace

from log.checkpoint import OffsetCheckpointFile
from log.cleaner import SourceSegment, group_segments_by_size
from log.cleaner_manager import CLEANER_OFFSET_CHECKPOINT_FILE
from log.config import CleanerConfig
from log.log_cleaner import LogCleaner
from log.offset_map import BYTES_PER_ENTRY
from wire.compression import Compression
from wire.record_batch import build_batch, build_control_batch, iter_batches

from .helpers import COMPACT, keyed, latest_per_key, open_log, read_records, reopen

DAY = 86_400_000


def _setup(tmp_path, name="topic-0", cleaner_config=None, **cfg):
    log = open_log(tmp_path, replace(COMPACT, **cfg), name=name)
    cleaner = LogCleaner(cleaner_config or CleanerConfig(dedupe_buffer_size=1 << 20), [str(tmp_path)],
                         {log.topic_partition: log}, log.clock)
    return log, cleaner


def _fill(log, n_batches=60, keys=10, per_batch=3, value_size=20, start=0):
    """Round-robin keys k0..k{keys-1}; value = 'v<i>' padded; returns the model key -> value."""
    model = {}
    i = start
    for _ in range(n_batches):
        recs = []
        for _ in range(per_batch):
            k, v = f"k{i % keys}", f"v{i}".ljust(value_size, ".")
            recs.append((k, v))
            model[k.encode()] = v.encode()
            i += 1
        log.append_as_leader(keyed(recs, ts=log.clock.milliseconds()))
    return model


def test_cleaning_keeps_only_the_latest_value_of_each_key_in_the_cleaned_range(tmp_path):
    log, cleaner = _setup(tmp_path)
    model = _fill(log)
    log.roll()
    before = read_records(log)
    result = cleaner.clean_once()
    assert result.committed and result.end_offset == log.active_segment().base_offset
    after = read_records(log)
    assert {k: v for k, (_, v) in latest_per_key(after).items()} == model
    assert len(after) == len(model) and len(before) == 180
    assert latest_per_key(after) == latest_per_key(before)  # same latest offsets too


def test_offsets_read_back_strictly_increase_with_gaps_where_records_were_removed(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log)
    log.append_as_leader(keyed([("k5", "again")], ts=log.clock.milliseconds()))  # 175 is superseded
    log.roll()
    cleaner.clean_once()
    offsets = [o for o, _, _ in read_records(log)]
    assert offsets == sorted(set(offsets)) and offsets[-1] == 180 and 175 not in offsets
    assert any(b - a > 1 for a, b in zip(offsets, offsets[1:], strict=False))
    # a fetch at a removed offset returns the next batch that survived
    gap = next(a + 1 for a, b in zip(offsets, offsets[1:], strict=False) if b - a > 1)
    first = next(iter_batches(log.read(gap, 1 << 20).records.read()))
    assert first.last_offset >= gap and gap not in [r.offset for r in first]


def test_appends_after_the_cleaned_range_stay_dirty_until_the_next_cleaning(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 30)
    log.roll()
    cleaner.clean_once()
    model = _fill(log, 30, start=1000)
    assert len(read_records(log)) > 10 + 90 - 1  # the new records are all there
    log.roll()
    cleaner.clean_once()
    assert {k: v for k, (_, v) in latest_per_key(read_records(log)).items()} == model


def test_tombstones_are_kept_until_the_delete_horizon_then_removed_with_their_key(tmp_path):
    log, cleaner = _setup(tmp_path, delete_retention_ms=DAY)
    clock = log.clock
    log.append_as_leader(keyed([("a", "1"), ("b", "1")], ts=clock.milliseconds()))
    log.append_as_leader(keyed([("a", None)], ts=clock.milliseconds()))
    log.roll()
    t_clean = clock.milliseconds()
    cleaner.clean_once()
    assert [(k, v) for _, k, v in read_records(log)] == [(b"b", b"1"), (b"a", None)]
    [tomb] = [b for b in iter_batches(log.read(2, 1 << 20).records.read()) if b.base_offset == 2]
    assert tomb.delete_horizon_ms == t_clean + DAY  # stamped by the first cleaning that kept it

    def clean_again(dt):
        clock.sleep(dt)
        log.append_as_leader(keyed([("c", str(dt))], ts=clock.milliseconds()))
        log.roll()
        assert cleaner.clean_once().committed

    clean_again(DAY - 1)  # horizon not reached yet
    assert (b"a", None) in [(k, v) for _, k, v in read_records(log)]
    clean_again(1)  # now >= horizon: the tombstone goes, and the key with it
    assert b"a" not in {k for _, k, _ in read_records(log)}
    assert (b"b", b"1") in [(k, v) for _, k, v in read_records(log)]


def test_min_compaction_lag_keeps_segments_with_recent_records_out_of_the_cleaning(tmp_path):
    log, cleaner = _setup(tmp_path, min_compaction_lag_ms=60_000)
    clock = log.clock
    _fill(log, 30)
    log.roll()
    old_end = log.log_end_offset
    clock.sleep(61_000)
    _fill(log, 30, start=500)  # same keys, newer, within the lag
    log.roll()
    result = cleaner.clean_once()
    assert result.end_offset == old_end
    recs = read_records(log)
    assert all(o >= old_end for o, _, _ in recs if o >= old_end) and len([r for r in recs if r[0] >= old_end]) == 90
    clock.sleep(60_000)
    z_segment = log.log_end_offset
    log.append_as_leader(keyed([("z", "1")], ts=clock.milliseconds()))
    log.roll()
    assert cleaner.clean_once().end_offset == z_segment  # everything older than the lag, not z


def test_the_active_segment_is_never_cleaned(tmp_path):
    log, cleaner = _setup(tmp_path, segment_bytes=1 << 20)
    _fill(log, 60)
    assert log.number_of_segments() == 1
    assert cleaner.clean_once() is None
    job = cleaner.job_for(log)
    job.prepare()
    result = job.commit()
    assert result.committed and result.segments_replaced == 0 and len(read_records(log)) == 180


def test_cleaning_stops_at_the_high_watermark(tmp_path):
    log = open_log(tmp_path, COMPACT, high_watermark_follows_log_end=False)
    cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [str(tmp_path)], {log.topic_partition: log}, log.clock)
    _fill(log, 60)
    log.roll()
    hw_segment = log.log_segments()[2]
    log.update_high_watermark(hw_segment.base_offset + 1)
    result = cleaner.clean_once()
    assert result.end_offset == hw_segment.base_offset
    log.update_high_watermark(log.log_end_offset)
    offsets = [o for o, _, _ in read_records(log)]
    assert offsets[-1] == 179 and [o for o in offsets if o >= hw_segment.base_offset] == list(range(hw_segment.base_offset, 180))


def test_the_dirtiest_log_above_its_ratio_is_chosen_first(tmp_path):
    a = open_log(tmp_path, replace(COMPACT, min_cleanable_dirty_ratio=0.5), name="a-0")
    b = open_log(tmp_path, replace(COMPACT, min_cleanable_dirty_ratio=0.5), name="b-0", clock=a.clock)
    cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [str(tmp_path)],
                         {a.topic_partition: a, b.topic_partition: b}, a.clock)
    for log in (a, b):
        _fill(log, 60)
        log.roll()
    assert {cleaner.clean_once().topic_partition, cleaner.clean_once().topic_partition} == {("a", 0), ("b", 0)}
    assert cleaner.clean_once() is None  # both clean now
    _fill(a, 2, start=900)  # a little dirt on a
    _fill(b, 60, start=900)  # a lot on b
    a.roll()
    b.roll()
    assert cleaner.clean_once().topic_partition == ("b", 0)
    assert cleaner.clean_once() is None  # a's ratio stays under 0.5
    assert 0 < cleaner.manager.dirtiest_log_cleanable_ratio < 0.5


def test_max_compaction_lag_forces_a_cleaning_below_the_dirty_ratio(tmp_path):
    log, cleaner = _setup(tmp_path, min_cleanable_dirty_ratio=0.99, max_compaction_lag_ms=DAY)
    _fill(log, 60)
    log.roll()
    cleaner.clean_log(log)
    _fill(log, 2, start=900)
    log.roll()
    assert cleaner.clean_once() is None
    log.clock.sleep(DAY + 1)
    result = cleaner.clean_once()
    assert result is not None and result.committed


def test_the_cleaner_checkpoint_advances_in_kafkas_offset_checkpoint_format(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 30)
    log.roll()
    end = cleaner.clean_once().end_offset
    path = os.path.join(str(tmp_path), CLEANER_OFFSET_CHECKPOINT_FILE)
    assert open(path).read() == f"0\n1\ntopic 0 {end}\n"
    assert OffsetCheckpointFile(path).read() == {("topic", 0): end}
    # a new cleaner (a restart) starts from the checkpoint: nothing dirty left
    again = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [str(tmp_path)], {log.topic_partition: log}, log.clock)
    assert again.cleaner_checkpoints() == {("topic", 0): end} and again.clean_once() is None


def test_the_log_shrinks_on_disk_once_the_old_segments_are_deleted(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 60)
    log.roll()
    size_before = log.size()
    cleaner.clean_once()
    assert log.size() < size_before / 5
    files = os.listdir(log.dir)
    assert any(f.endswith(".deleted") for f in files)
    log.clock.sleep(log.config.file_delete_delay_ms)
    log.scheduler.run_pending()
    on_disk = sum(os.path.getsize(os.path.join(log.dir, f)) for f in os.listdir(log.dir) if f.endswith(".log"))
    assert on_disk == log.size() and not any(f.endswith((".deleted", ".cleaned", ".swap")) for f in os.listdir(log.dir))


def test_reads_by_offset_and_by_timestamp_work_on_cleaned_segments(tmp_path):
    log, cleaner = _setup(tmp_path, index_interval_bytes=64)
    clock = log.clock
    for i in range(80):
        clock.sleep(10)
        log.append_as_leader(keyed([(f"k{i % 7}", f"v{i}"), (f"u{i}", "x")], ts=clock.milliseconds()))
    log.roll()
    written = {}
    for o, k, v in read_records(log):
        written[o] = (k, v)
    cleaner.clean_once()
    kept = read_records(log)
    for seg in log.log_segments()[:-1]:
        seg.sanity_check()
        entries = seg.offset_index.all_entries()
        assert entries == sorted(entries) and len(entries) > 1
    for o, k, v in kept:  # every surviving offset is found where it is
        first = next(iter_batches(log.read(o, 1).records.read()))
        assert any(r.offset == o and (r.key, r.value) == (k, v) for r in first)
    t0 = clock.milliseconds() - 80 * 10
    for i in range(0, 80, 3):  # the first surviving record at or after each timestamp
        target = t0 + 10 * i + 10
        found = log.fetch_offset_by_timestamp(target)
        expect = min(o for o, _, _ in kept if o >= 2 * i)
        assert found.offset == expect and found.timestamp == target


def test_a_full_offset_map_cleans_up_to_where_it_got_and_the_next_round_goes_on(tmp_path):
    slots_for_8_keys = int(9 / 0.9) * BYTES_PER_ENTRY
    log, cleaner = _setup(tmp_path, cleaner_config=CleanerConfig(dedupe_buffer_size=slots_for_8_keys))
    model = {}
    for i in range(60):
        recs = [(f"key{i * 3 + j}", f"v{i}") for j in range(3)]  # every key distinct
        recs.append(("dup", f"d{i}"))
        log.append_as_leader(keyed(recs, ts=log.clock.milliseconds()))
        model.update({k.encode(): v.encode() for k, v in recs})
    log.roll()
    first = cleaner.clean_once()
    assert first.committed and first.end_offset < log.active_segment().base_offset
    assert first.stats.buffer_utilization > 0.8
    rounds = 1
    while (r := cleaner.clean_once()) is not None:
        assert r.committed
        rounds += 1
    assert rounds > 3
    assert {k: v for k, (_, v) in latest_per_key(read_records(log)).items()} == model
    assert sum(1 for _, k, _ in read_records(log) if k == b"dup") == 1


def test_an_idempotent_producers_last_batch_is_kept_even_when_all_its_records_are_superseded(tmp_path):
    log, cleaner = _setup(tmp_path)
    ts = log.clock.milliseconds()
    log.append_as_leader(bytearray(build_batch([(b"a", b"1", None, ts), (b"b", b"1", None, ts)],
                                               producer_id=42, producer_epoch=1, base_sequence=0)))
    for i in range(40):
        log.append_as_leader(keyed([("a", f"x{i}"), ("b", f"x{i}")], ts=ts))
    log.roll()
    cleaner.clean_once()
    first = next(iter_batches(log.read(0, 1 << 20).records.read()))
    assert (first.base_offset, first.last_offset, first.record_count, first.producer_id) == (0, 1, 0, 42)
    # the producer's sequence survives a restart: the next batch in sequence is accepted, a
    # duplicate of the last one is recognised
    log = reopen(log, clean=False)
    dup = log.append_as_leader(bytearray(build_batch([(b"a", b"1", None, ts), (b"b", b"1", None, ts)],
                                                     producer_id=42, producer_epoch=1, base_sequence=0)))
    assert dup.duplicate and dup.first_offset == 0
    nxt = log.append_as_leader(bytearray(build_batch([(b"c", b"1", None, ts)], producer_id=42, producer_epoch=1,
                                                     base_sequence=2)))
    assert not nxt.duplicate


def test_control_batches_are_kept_whole(tmp_path):
    log, cleaner = _setup(tmp_path)
    ts = log.clock.milliseconds()
    log.append_as_leader(bytearray(build_batch([(b"a", b"1", None, ts)], producer_id=5, producer_epoch=0,
                                               base_sequence=0, is_transactional=True)))
    marker = bytearray(build_control_batch(commit=True, producer_id=5, producer_epoch=0, coordinator_epoch=3,
                                           timestamp=ts, base_offset=log.log_end_offset))
    log.append_as_follower(marker)
    _fill(log, 40)
    log.append_as_leader(keyed([("a", "2")], ts=ts))
    log.roll()
    cleaner.clean_once()
    data = log.read(0, 1 << 20).records.read()
    controls = [b for b in iter_batches(data) if b.is_control]
    assert len(controls) == 1 and controls[0].base_offset == 1 and controls[0].record_count == 1
    assert bytes(controls[0].view()) == bytes(marker)


def test_compressed_batches_are_cleaned_and_stay_compressed(tmp_path):
    log, cleaner = _setup(tmp_path)
    model = {}
    for i in range(40):
        recs = [(f"k{(i * 4 + j) % 9}", f"v{i}-{j}") for j in range(4)]
        log.append_as_leader(keyed(recs, ts=log.clock.milliseconds(), compression=Compression.LZ4))
        model.update({k.encode(): v.encode() for k, v in recs})
    log.roll()
    cleaner.clean_once()
    assert {k: v for k, (_, v) in latest_per_key(read_records(log)).items()} == model
    data = log.read(0, 1 << 20).records.read()
    assert all(b.compression == Compression.LZ4 for b in iter_batches(data) if b.record_count)


def test_keyless_records_left_from_before_the_topic_was_compacted_are_dropped(tmp_path):
    log, cleaner = _setup(tmp_path, cleanup_policy=("delete",))
    ts = log.clock.milliseconds()
    for _ in range(30):
        log.append_as_leader(bytearray(build_batch([(None, b"no key", None, ts), (b"k", b"v", None, ts)])))
    log.update_config(replace(log.config, cleanup_policy=("compact",)))
    log.roll()
    result = cleaner.clean_once()
    assert result.stats.invalid_messages_read == 30
    assert [(k, v) for _, k, v in read_records(log)] == [(b"k", b"v")]


def test_a_second_cleaning_merges_small_cleaned_segments_up_to_segment_bytes(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 120)
    log.roll()
    cleaner.clean_once()
    n_after_first = log.number_of_segments()
    _fill(log, 3, start=5000)
    log.roll()
    cleaner.clean_once()
    assert log.number_of_segments() < n_after_first
    assert all(s.size() <= log.config.segment_bytes for s in log.log_segments())


def test_cleaned_segments_read_back_the_same_after_a_clean_restart_and_after_a_crash(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 60)
    log.roll()
    cleaner.clean_once()
    expected = read_records(log)
    log = reopen(log, clean=True)
    assert read_records(log) == expected
    log = reopen(log, clean=False)
    assert read_records(log) == expected


def test_groups_respect_segment_bytes_index_sizes_and_the_int32_offset_range():
    def seg(base, size, idx=8):
        return SourceSegment(base, -1, size, 0, idx, idx)

    segs = [seg(0, 400), seg(100, 400), seg(200, 400), seg(300, 100), seg(400, 0)]
    assert [[s.base_offset for s in g] for g in group_segments_by_size(segs, 1000, 100, 500)] == [[0, 100], [200, 300, 400]]
    assert [[s.base_offset for s in g] for g in group_segments_by_size(segs, 10_000, 16, 500)] == [[0, 100], [200, 300], [400]]
    far = [seg(0, 10), seg((1 << 31) - 100, 10), seg((1 << 31) + 5, 10)]
    assert [len(g) for g in group_segments_by_size(far, 10_000, 100, (1 << 31) + 10)] == [1, 2]


def test_batches_replicated_with_gaps_already_in_their_offsets_are_cleaned_the_same_way(tmp_path):
    # batches appended with offsets assigned elsewhere (replication) are cleaned the same way
    log, cleaner = _setup(tmp_path)
    for i in range(40):
        b = keyed([("k", str(i))], ts=log.clock.milliseconds())
        struct.pack_into(">q", b, 0, 10 + 2 * i)
        log.append_as_follower(b)
    log.roll()
    cleaner.clean_once()
    assert read_records(log, 10) == [(88, b"k", b"39")]


def test_with_no_cleaner_threads_nothing_is_ever_cleaned(tmp_path):
    log, cleaner = _setup(tmp_path, cleaner_config=CleanerConfig(num_threads=0))
    _fill(log, 30)
    log.roll()
    assert cleaner.clean_once() is None and cleaner.job_for(log) is None


def test_a_hundred_thousand_records_over_a_thousand_keys_compact_to_the_latest_value_per_key(tmp_path):
    # the acceptance scenario, at the log level: 1% tombstones, 1 MiB segments
    import random

    log, cleaner = _setup(tmp_path, segment_bytes=1 << 20, segment_index_bytes=1 << 20, index_interval_bytes=4096,
                          delete_retention_ms=DAY)
    rnd = random.Random(6)
    model = {}
    value = b"x" * 100
    for _ in range(1000):  # batches of 100
        recs = []
        for _ in range(100):
            k = b"key-%04d" % rnd.randrange(1000)
            recs.append((k, None if rnd.random() < 0.01 else value + k))
        log.append_as_leader(keyed(recs, ts=log.clock.milliseconds()))
        model.update(recs)
    log.roll()
    size_before = log.size()
    assert cleaner.clean_once().committed
    log.clock.sleep(DAY)
    log.append_as_leader(keyed([("after", "1")], ts=log.clock.milliseconds()))
    log.roll()
    assert cleaner.clean_once().committed  # tombstones past delete.retention.ms go
    got = read_records(log)
    offsets = [o for o, _, _ in got]
    assert offsets == sorted(set(offsets)) and offsets[-1] == 100_000
    live = {k: v for k, v in model.items() if v is not None}
    assert {k: v for _, k, v in got} == {**live, b"after": b"1"} and len(got) == len(live) + 1
    assert log.size() < size_before / 50


def test_every_cleaned_segment_ends_where_its_group_of_old_segments_ended(tmp_path):
    # the loader tells which old segments a .swap replaces from the swap's base to its next
    # offset, so a group's last batch is kept (empty) even when the map stopped short of it
    slots_for_5_keys = int(6 / 0.9) * BYTES_PER_ENTRY
    log, cleaner = _setup(tmp_path, segment_bytes=1500, cleaner_config=CleanerConfig(dedupe_buffer_size=slots_for_5_keys))
    for i in range(80):
        log.append_as_leader(keyed([("hot", f"h{i}")] + ([(f"u{i}", "x")] if i % 10 == 0 else []),
                                   ts=log.clock.milliseconds()))
        if i % 4 == 3:
            log.roll()
    rounds = 0
    while (job := cleaner.grab_filthiest()) is not None:
        old_end = {s.base_offset: s.read_next_offset() for s in log.log_segments()}
        job.prepare()
        if rounds == 0:
            assert len(job.output.groups) > 1 and any(len(src) > 1 for src, _ in job.output.groups)
        for sources, cleaned in job.output.groups:
            assert cleaned.read_next_offset() == old_end[sources[-1].base_offset]
        assert job.commit().committed
        rounds += 1
    assert rounds >= 2  # the map filled: several rounds, each stopping short of the active segment
