"""Model-based test: Log against a plain list of batches, under any interleaving of append,
roll, retention, truncation, log-start-offset moves and clean/unclean reopen."""

import shutil
import tempfile
from dataclasses import replace

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from log.clock import ManualClock
from log.config import LogConfig
from log.log import Log
from log.scheduler import Scheduler
from wire.record_batch import iter_batches

from .helpers import batch, reopen

CFG = LogConfig(segment_bytes=1200, segment_index_bytes=160, index_interval_bytes=100, retention_ms=-1)


class LogMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.tmp = tempfile.mkdtemp()
        self.clock = ManualClock()
        self.log = Log.open(f"{self.tmp}/t-0", CFG, self.clock, Scheduler(self.clock))
        self.model: list[tuple[int, int]] = []  # (base offset, last offset) of stored batches
        self.next_offset = 0
        self.start = 0

    def teardown(self):
        try:
            self.log.close()
        except Exception:
            pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    @rule(n=st.integers(1, 5), size=st.integers(0, 200))
    def append(self, n, size):
        info = self.log.append_as_leader(batch(n=n, value_size=size, ts=self.clock.milliseconds()))
        assert info.first_offset == self.next_offset
        self.model.append((info.first_offset, info.last_offset))
        self.next_offset = info.last_offset + 1

    @rule()
    def roll(self):
        self.log.roll()

    @rule(keep_bytes=st.integers(0, 3000))
    def retention_by_size(self, keep_bytes):
        self.log.update_config(replace(CFG, retention_bytes=keep_bytes))
        self.log.delete_old_segments()
        self.log.update_config(CFG)
        self._sync_start()

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def truncate(self, data):
        i = data.draw(st.integers(0, len(self.model) - 1))
        target = self.model[i][0]
        if target < self.start:
            return
        self.log.truncate_to(target)
        self.model = self.model[:i]
        self.next_offset = target

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def advance_log_start(self, data):
        target = data.draw(st.integers(self.start, self.next_offset))
        self.log.maybe_increment_log_start_offset(target)
        self.log.delete_old_segments()
        self._sync_start()

    @rule(clean=st.booleans())
    def reopen(self, clean):
        self.log = reopen(self.log, clean, recovery_point=0)
        self.log.scheduler.run_pending()

    @rule()
    def time_passes(self):
        self.clock.sleep(120_000)
        self.log.scheduler.run_pending()

    def _sync_start(self):
        self.start = self.log.log_start_offset
        first_base = self.log.log_segments()[0].base_offset
        self.model = [b for b in self.model if b[1] >= first_base]

    @invariant()
    def stored_batches_match_the_model(self):
        stored = []
        for seg in self.log.log_segments():
            for b in iter_batches(open(seg.log.path, "rb").read()):
                assert b.is_crc_valid()
                stored.append((b.base_offset, b.last_offset))
        assert stored == self.model
        for (b1, l1), (b2, l2) in zip(stored, stored[1:], strict=False):
            assert b1 <= l1 < b2 <= l2  # offsets strictly increase
        assert self.log.log_end_offset == self.next_offset

    @invariant()
    def every_readable_offset_returns_its_batch(self):
        for base, last in self.model:
            if last < self.log.log_start_offset:
                continue
            got = self.log.read(max(base, self.log.log_start_offset), 1).records.read()
            first = next(iter_batches(got))
            assert (first.base_offset, first.last_offset) == (base, last)


LogMachine.TestCase.settings = settings(max_examples=50, stateful_step_count=30, deadline=None)
TestLogStateMachine = LogMachine.TestCase
