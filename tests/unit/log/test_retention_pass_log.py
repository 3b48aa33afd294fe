"""The retention pass's closing DEBUG line: what the compat tests wait on to know that
retention ran after a change (tests/support/broker_process.py's wait_for_retention_pass)."""

import logging
import re
from dataclasses import replace

from log.clock import ManualClock
from log.log_manager import LogManager
from log.scheduler import Scheduler

from .helpers import SMALL, batch

PASS_LINE = re.compile(r"Log cleanup completed\. (\d+) files deleted in [\d.]+ seconds "
                       r"\(retention pass (\d+), began at (\d+) ms\)")


def _manager(tmp_path, clock):
    lm = LogManager([str(tmp_path)], replace(SMALL, retention_ms=60_000), clock, Scheduler(clock),
                    retention_check_ms=1000)
    lm.startup()
    return lm


def test_each_retention_pass_logs_its_number_start_time_and_deletions_at_debug(tmp_path, caplog):
    clock = ManualClock()
    lm = _manager(tmp_path, clock)
    try:
        log = lm.get_or_create_log(("t", 0))
        for _ in range(3):
            log.append_as_leader(batch(ts=clock.milliseconds()))
            log.roll()
        caplog.set_level(logging.DEBUG, logger="log.log_manager")
        first = clock.milliseconds()
        lm.cleanup_logs()
        clock.sleep(120_000)  # every closed segment is now past retention.ms
        lm.cleanup_logs()
        lines = [PASS_LINE.search(r.getMessage()) for r in caplog.records]
        got = [(int(m[1]), int(m[2]), int(m[3])) for m in lines if m]
        assert got == [(0, 1, first), (3, 2, first + 120_000)]
        assert lm.retention_passes == 2
    finally:
        lm.shutdown()


def test_the_pass_line_is_not_logged_above_debug(tmp_path, caplog):
    clock = ManualClock()
    lm = _manager(tmp_path, clock)
    try:
        caplog.set_level(logging.INFO, logger="log.log_manager")
        lm.cleanup_logs()
        assert lm.retention_passes == 1
        assert not [r for r in caplog.records if PASS_LINE.search(r.getMessage())]
    finally:
        lm.shutdown()
