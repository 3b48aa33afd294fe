"""Progress lines for long work: counts, bytes per second and time left, rate-limited."""

from __future__ import annotations

import logging

from log.clock import ManualClock
from log.progress import Progress, human_bytes


def test_a_progress_line_gives_done_of_total_rate_and_time_left(caplog):
    clock = ManualClock()
    p = Progress("Loading logs in /d", 4, 4_000_000_000, clock, logging.getLogger("t"), interval_ms=10_000)
    with caplog.at_level(logging.INFO, logger="t"):
        clock.advance(5_000)
        p.advance(1, 1_000_000_000)      # 5 s: not yet a line
        assert caplog.messages == []
        clock.advance(5_000)
        p.advance(1, 1_000_000_000)      # 10 s, 2 GB: 200 MB/s, 2 GB left -> 10 s
        assert caplog.messages == ["Loading logs in /d: 2/4 partitions (50%), 2.0 GB of 4.0 GB at 200.0 MB/s, "
                                   "about 10 s left"]
        clock.advance(10_000)
        p.advance(2, 2_000_000_000)      # the last one: no progress line, the summary says it
        assert len(caplog.messages) == 1
        assert p.done() == "Loading logs in /d: done, 4 partitions (4.0 GB) in 20.0 s (200.0 MB/s)"
        assert caplog.messages[-1] == p.done()


def test_human_bytes_uses_decimal_units():
    assert [human_bytes(n) for n in (999, 1000, 1_500_000, 2_000_000_000_000)] == ["999 B", "1.0 KB", "1.5 MB", "2.0 TB"]


def test_loading_logs_logs_a_summary_per_log_dir(tmp_path, caplog):
    from log.config import LogConfig
    from log.log_manager import LogManager
    from log.scheduler import Scheduler

    clock = ManualClock()
    for name in ("a-0", "a-1", "b-0"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "00000000000000000000.log").write_bytes(b"")
    manager = LogManager([str(tmp_path)], LogConfig(), clock, Scheduler(clock))
    with caplog.at_level(logging.INFO, logger="log.log_manager"):
        manager.load_logs()
    assert f"Loading logs in {tmp_path} (recovery after an unclean shutdown): done, 3 partitions (0 B) in 0.0 s (0 B/s)" \
        in caplog.messages
    manager.shutdown()
