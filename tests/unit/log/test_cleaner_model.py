"""Compaction against a dict model: random puts, tombstones, rolls, clock moves, cleanings
(some with appends between prepare and commit) and restarts.  Invariants, after every step:
every record read back from the start is one that was written at that offset, each offset at
most once, in increasing order; each key's latest record is read back (a tombstone may be gone
with its whole key once cleaned past its horizon), and nothing after it for that key."""

import os
import shutil
import tempfile
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from log.clock import ManualClock
from log.config import CleanerConfig
from log.log import Log
from log.log_cleaner import LogCleaner
from log.scheduler import Scheduler

from .helpers import COMPACT, keyed, read_records

CONFIG = replace(COMPACT, segment_bytes=600, index_interval_bytes=100, delete_retention_ms=1000)
KEYS = [f"k{i}" for i in range(8)]

put = st.tuples(st.just("put"), st.lists(st.tuples(st.sampled_from(KEYS), st.integers(0, 30)), min_size=1, max_size=4))
tomb = st.tuples(st.just("tomb"), st.sampled_from(KEYS))
simple = st.one_of(put, put, put, tomb, st.tuples(st.just("roll")), st.tuples(st.just("sleep"), st.integers(0, 1500)))
op = st.one_of(simple, simple, st.tuples(st.just("clean")),
               st.tuples(st.just("clean_around"), st.lists(simple, max_size=4)),
               st.tuples(st.just("reopen"), st.booleans()))


class World:
    def __init__(self, root: str) -> None:
        self.root = root
        self.clock = ManualClock()
        self.log = Log.open(os.path.join(root, "topic-0"), CONFIG, self.clock, Scheduler(self.clock))
        self.written: dict[int, tuple[bytes, bytes | None]] = {}
        self.latest: dict[bytes, int] = {}
        self.seq = 0
        self._new_cleaner()

    def _new_cleaner(self) -> None:
        self.cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [self.root],
                                  {self.log.topic_partition: self.log}, self.clock)

    def apply(self, o) -> None:
        kind = o[0]
        if kind in ("put", "tomb"):
            pairs = o[1] if kind == "put" else [(o[1], None)]
            recs = []
            for k, size in pairs:
                self.seq += 1
                recs.append((k, None if size is None else f"{self.seq}:".ljust(size + 4, "x")))
            info = self.log.append_as_leader(keyed(recs, ts=self.clock.milliseconds()))
            for i, (k, v) in enumerate(recs):
                self.written[info.first_offset + i] = (k.encode(), None if v is None else v.encode())
                self.latest[k.encode()] = info.first_offset + i
        elif kind == "roll":
            self.log.roll()
        elif kind == "sleep":
            self.clock.sleep(o[1])
        elif kind == "clean":
            self.cleaner.clean_log(self.log)
        elif kind == "clean_around":
            job = self.cleaner.job_for(self.log)
            job.prepare()
            for sub in o[1]:
                self.apply(sub)
            assert job.commit().committed
        elif kind == "reopen":
            log = self.log
            if o[1]:
                log.close()
            else:
                log.close_handlers()
            self.log = Log.open(log.dir, CONFIG, self.clock, Scheduler(self.clock), log_start_offset=log.log_start_offset,
                                recovery_point=log.recovery_point if o[1] else 0, had_clean_shutdown=o[1])
            self._new_cleaner()

    def check(self) -> None:
        got = read_records(self.log)
        offsets = [off for off, _, _ in got]
        assert offsets == sorted(set(offsets))
        last_read: dict[bytes, int] = {}
        for off, k, v in got:
            assert self.written[off] == (k, v), f"offset {off} reads back {(k, v)}, was {self.written[off]}"
            last_read[k] = off
        for k, off in self.latest.items():
            if self.written[off][1] is None and k not in last_read:
                continue  # a tombstone removed after its horizon, with every older record of its key
            assert last_read.get(k) == off, f"key {k!r}: latest {off}, read back {last_read.get(k)}"


@settings(max_examples=int(os.environ.get("CLEANER_EXAMPLES", 100)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=40))
def test_compaction_keeps_every_keys_latest_record_and_nothing_it_did_not_write(ops):
    root = tempfile.mkdtemp()
    try:
        world = World(root)
        for o in ops:
            world.apply(o)
            world.check()
        world.log.roll()
        world.cleaner.clean_log(world.log)  # stamps a horizon on the tombstones left
        world.clock.sleep(CONFIG.delete_retention_ms)
        world.cleaner.clean_log(world.log)  # and now they go
        world.check()
        tombstoned = {k for k, off in world.latest.items() if world.written[off][1] is None}
        assert not tombstoned & {k for _, k, _ in read_records(world.log)}
        kept = [k for _, k, _ in read_records(world.log)]
        assert len(kept) == len(set(kept))  # fully compacted: one record per live key
    finally:
        shutil.rmtree(root)
