"""A flush fsyncs outside the log's lock: appends go on while a roll-time fsync is blocked.

The fsync seam is ``LogSegment.flush``: the test replaces it with one that blocks on an Event
the test sets only after every append has returned, so an append that waited for the flush
could never return in time: the outcome does not depend on how busy the machine is.
"""

from __future__ import annotations

import threading
import time

from log.segment import LogSegment

from .helpers import batch, open_log

DEADLINE_S = 60.0


class GatedFlush:
    """Replaces ``LogSegment.flush``: announces the flush, then waits for ``release``."""

    def __init__(self, original):
        self.original = original
        self.entered = threading.Event()
        self.release = threading.Event()
        self.flushed: list[int] = []

    def __call__(self, segment: LogSegment) -> None:
        self.entered.set()
        assert self.release.wait(DEADLINE_S), "the test never released the fsync"
        self.original(segment)
        self.flushed.append(segment.base_offset)


def test_appends_complete_while_the_roll_time_fsync_of_the_old_segment_is_blocked(tmp_path, monkeypatch):
    log = open_log(tmp_path)
    gate = GatedFlush(LogSegment.flush)
    monkeypatch.setattr(LogSegment, "flush", lambda segment: gate(segment))
    while log.number_of_segments() < 2:  # the roll queues the "flush-log" task
        log.append_as_leader(batch(n=3))
    rolled_at = log.active_segment().base_offset
    assert "flush-log" in log.scheduler.pending_names()

    flusher = threading.Thread(target=log.scheduler.run_pending, name="background", daemon=True)
    flusher.start()
    assert gate.entered.wait(DEADLINE_S), "the flush-log task never reached the fsync"

    durations: list[float] = []
    appended = threading.Event()

    def append_more() -> None:
        for _ in range(50):  # enough to roll again, under the lock the flush must not hold
            start = time.monotonic()
            log.append_as_leader(batch(n=3))
            durations.append(time.monotonic() - start)
        appended.set()

    appender = threading.Thread(target=append_more, name="event-loop", daemon=True)
    appender.start()
    finished = appended.wait(DEADLINE_S)
    fsync_still_blocked = flusher.is_alive() and not gate.release.is_set()
    gate.release.set()
    flusher.join(DEADLINE_S)
    appender.join(DEADLINE_S)

    assert finished, "appends waited for the blocked fsync"
    assert fsync_still_blocked
    # no wall-clock bound: the gate is never released before the appends end, so they cannot
    # have waited for the fsync however long it takes (a bound would only measure the machine)
    assert len(durations) == 50
    assert log.number_of_segments() >= 3
    assert 0 in gate.flushed  # the rolled segment was fsynced once released
    assert log.recovery_point >= rolled_at


def test_a_flush_does_not_move_the_recovery_point_past_a_truncation_made_during_its_fsync(tmp_path, monkeypatch):
    log = open_log(tmp_path)
    for _ in range(40):
        log.append_as_leader(batch(n=3))
    gate = GatedFlush(LogSegment.flush)
    monkeypatch.setattr(LogSegment, "flush", lambda segment: gate(segment))
    flusher = threading.Thread(target=log.flush, daemon=True)
    flusher.start()
    assert gate.entered.wait(DEADLINE_S)
    assert log.truncate_to(30)  # under the lock, which the blocked flush does not hold
    gate.release.set()
    flusher.join(DEADLINE_S)
    assert not flusher.is_alive()
    assert log.log_end_offset == 30
    assert log.recovery_point <= 30


def test_a_segment_deleted_by_retention_during_its_fsync_is_skipped_without_error(tmp_path, monkeypatch):
    log = open_log(tmp_path)
    while log.number_of_segments() < 3:
        log.append_as_leader(batch(n=3))
    first = log.log_segments()[0]
    calls = []

    def flush_after_delete(segment: LogSegment) -> None:
        calls.append(segment.base_offset)
        if segment is first:
            # as if retention removed it and its delayed delete-file task closed it meanwhile
            log.segments.remove(segment.base_offset)
            segment.close_handlers()
            segment.log.flush()  # the fsync of a closed file fails

    monkeypatch.setattr(LogSegment, "flush", flush_after_delete)
    log.flush()
    assert calls[0] == first.base_offset and len(calls) >= 2
    assert log.recovery_point == log.log_end_offset
