"""A crash during compaction loses nothing: at every step of the segment swap, and with the
``.cleaned`` / ``.swap`` files cut at every byte, a reopened log reads back exactly its
pre-clean or exactly its post-clean content."""

import os
import shutil
from dataclasses import replace

import pytest

from log.clock import ManualClock
from log.config import CleanerConfig
from log.log import Log
from log.log_cleaner import LogCleaner
from log.scheduler import Scheduler
from tests.unit.log.helpers import COMPACT, keyed, latest_per_key, read_records

T0 = 1_700_000_000_000
# "single": every segment is cleaned on its own (their sizes add up past segment.bytes);
# "merged": small segments rolled by hand are cleaned in groups of several, and some groups
# keep nothing but their last batch
CONFIGS = {"single": replace(COMPACT, segment_bytes=520, index_interval_bytes=64),
           "merged": replace(COMPACT, segment_bytes=2000, index_interval_bytes=64)}


class _Crash(Exception):
    pass


def _build(root, layout: str) -> tuple[Log, LogCleaner]:
    """A deterministic compacted log: a hot key rewritten in every batch, keys written once,
    a tombstone; several segments, so a cleaning swaps several groups of several batches."""
    clock = ManualClock(T0)
    log = Log.open(os.path.join(str(root), "topic-0"), CONFIGS[layout], clock, Scheduler(clock))
    if layout == "single":
        for i in range(36):
            recs = [("hot", f"h{i}")] + ([(f"u{i}", f"x{i}")] if i % 2 == 0 else [])
            if i == 21:
                recs.append(("u0", None))
            log.append_as_leader(keyed(recs, ts=T0 + i))
    else:
        for i in range(60):
            recs = [("hot", f"h{i}")] + ([(f"u{i}", f"x{i}")] if i % 12 < 3 else [])
            if i == 40:
                recs.append(("u1", None))
            log.append_as_leader(keyed(recs, ts=T0 + i))
            if i % 4 == 3:
                log.roll()
    log.roll()
    cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [str(root)], {log.topic_partition: log}, clock)
    return log, cleaner


def _reopen_after_kill(log: Log) -> Log:
    """What a restart after kill -9 sees: no flush, no checkpoint, pending tasks lost."""
    log.close_handlers()
    clock = ManualClock(T0)
    return Log.open(log.dir, log.config, clock, Scheduler(clock), recovery_point=0, had_clean_shutdown=False)


class _CrashAfter:
    """Patch os.replace (every rename of the swap protocol and of the checkpoint write) to
    kill the "process" just before rename number ``n``."""

    def __init__(self, monkeypatch, n: int) -> None:
        self.calls = 0
        real = os.replace

        def replace_(src, dst):
            if self.calls == n:
                raise _Crash(f"killed before renaming {os.path.basename(src)}")
            self.calls += 1
            real(src, dst)

        monkeypatch.setattr(os, "replace", replace_)


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def reference(request, tmp_path_factory):
    """(layout, pre-clean records, post-clean records, renames in a full commit)."""
    layout = request.param
    root = tmp_path_factory.mktemp("reference")
    log, cleaner = _build(root, layout)
    pre = read_records(log)
    job = cleaner.grab_filthiest()
    job.prepare()
    real = os.replace
    count = [0]

    def counting(src, dst):
        count[0] += 1
        real(src, dst)

    os.replace = counting
    try:
        assert job.commit().committed
    finally:
        os.replace = real
    post = read_records(log)
    assert pre != post and latest_per_key(pre) == latest_per_key(post)
    assert job.output is not None and len(job.output.groups) >= 3
    if layout == "merged":
        assert min(len(sources) for sources, _ in job.output.groups) > 1
    log.close()
    return layout, pre, post, count[0]


def test_a_kill_before_any_rename_of_the_swap_leaves_the_pre_clean_log(tmp_path, monkeypatch, reference):
    layout, pre, post, _ = reference
    log, cleaner = _build(tmp_path, layout)
    job = cleaner.grab_filthiest()
    job.prepare()  # .cleaned files written, then the process dies
    log = _reopen_after_kill(log)
    assert read_records(log) == pre
    assert not [f for f in os.listdir(log.dir) if f.endswith((".cleaned", ".swap"))]


def test_a_kill_at_every_step_of_the_swap_reads_back_pre_or_post_clean_content(tmp_path_factory, monkeypatch, reference):
    layout, pre, post, renames = reference
    seen = set()
    for n in range(renames + 1):
        root = tmp_path_factory.mktemp(f"step{n}")
        log, cleaner = _build(root, layout)
        job = cleaner.grab_filthiest()
        job.prepare()
        with monkeypatch.context() as m:
            _CrashAfter(m, n)
            try:
                job.commit()
            except _Crash:
                pass
        log = _reopen_after_kill(log)
        got = read_records(log)
        assert got in (pre, post), f"crash before rename {n}"
        seen.add("pre" if got == pre else "post")
        assert not [f for f in os.listdir(log.dir) if f.endswith((".cleaned", ".swap"))]
        # the recovered log is whole: it cleans again, to the same latest values
        again = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [str(root)], {log.topic_partition: log}, log.clock)
        again.clean_log(log)
        assert latest_per_key(read_records(log)) == latest_per_key(post)
        log.close()
    assert seen == {"pre", "post"}


def _state_before_old_segments_go(root, layout: str, monkeypatch) -> str:
    """The log dir when every new segment is ``.swap`` and no old one is renamed yet."""
    log, cleaner = _build(root, layout)
    job = cleaner.grab_filthiest()
    job.prepare()
    n_new = len(job.output.groups)
    with monkeypatch.context() as m:
        _CrashAfter(m, 3 * n_new)  # three files per segment renamed .cleaned -> .swap
        with pytest.raises(_Crash):
            job.commit()
    log.close_handlers()
    assert sum(f.endswith(".log.swap") for f in os.listdir(log.dir)) == n_new
    return log.dir


def _cut_every_byte(tmp_path_factory, src_dir: str, layout: str, name: str, pre, post) -> set[int]:
    """Reopen a copy of ``src_dir`` with ``name`` cut at every length: each must read back
    ``pre`` or ``post``; returns the lengths that gave ``post``."""
    size = os.path.getsize(os.path.join(src_dir, name))
    post_at = set()
    base = tmp_path_factory.mktemp("cut")
    for cut in range(size + 1):
        root = os.path.join(str(base), str(cut))
        os.makedirs(root)
        shutil.copytree(src_dir, os.path.join(root, "topic-0"))
        with open(os.path.join(root, "topic-0", name), "r+b") as f:
            f.truncate(cut)
        clock = ManualClock(T0)
        # (only the swap handling is under test: the other segments need no CRC pass)
        log = Log.open(os.path.join(root, "topic-0"), CONFIGS[layout], clock, Scheduler(clock), recovery_point=1 << 40)
        got = read_records(log)
        assert got in (pre, post), f"{name} cut at {cut} of {size}"
        if got == post:
            post_at.add(cut)
        log.close_handlers()
        shutil.rmtree(root)
    return post_at


def test_a_cleaned_file_cut_at_every_byte_is_discarded(tmp_path_factory, reference):
    layout, pre, _, _ = reference
    if layout != "single":
        pytest.skip("every .cleaned file is discarded alike; one layout is enough")
    root = tmp_path_factory.mktemp("cleaned")
    log, cleaner = _build(root, layout)
    job = cleaner.grab_filthiest()
    job.prepare()
    log.close_handlers()
    names = sorted(f for f in os.listdir(log.dir) if f.endswith(".log.cleaned"))
    biggest = max(names, key=lambda f: os.path.getsize(os.path.join(log.dir, f)))
    assert os.path.getsize(os.path.join(log.dir, biggest)) > 100
    assert _cut_every_byte(tmp_path_factory, log.dir, layout, biggest, pre, None) == set()


def test_a_swap_file_cut_at_every_byte_reads_back_pre_clean_unless_whole(tmp_path_factory, monkeypatch, reference):
    layout, pre, post, _ = reference
    src = _state_before_old_segments_go(tmp_path_factory.mktemp("swap"), layout, monkeypatch)
    swaps = sorted(f for f in os.listdir(src) if f.endswith(".log.swap"))
    # the first swap: in the "merged" layout it replaces several old segments
    size = os.path.getsize(os.path.join(src, swaps[0]))
    assert size > 100
    assert _cut_every_byte(tmp_path_factory, src, layout, swaps[0], pre, post) == {size}


def test_a_swap_offset_index_cut_at_every_byte_reads_back_pre_or_post_clean(tmp_path_factory, monkeypatch, reference):
    layout, pre, post, _ = reference
    src = _state_before_old_segments_go(tmp_path_factory.mktemp("swapindex"), layout, monkeypatch)
    swaps = sorted(f for f in os.listdir(src) if f.endswith(".index.swap"))
    biggest = max(swaps, key=lambda f: os.path.getsize(os.path.join(src, f)))
    assert _cut_every_byte(tmp_path_factory, src, layout, biggest, pre, post)
