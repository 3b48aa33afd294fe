"""The grab / prepare / commit split: prepare runs beside the log's owner, commit re-checks."""

import os
import threading
from dataclasses import replace

from log.config import CleanerConfig
from log.log_cleaner import JobState, LogCleaner

from .helpers import COMPACT, keyed, latest_per_key, open_log, read_records

DAY = 86_400_000


def _setup(tmp_path, **cfg):
    log = open_log(tmp_path, replace(COMPACT, **cfg))
    cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [str(tmp_path)], {log.topic_partition: log}, log.clock)
    return log, cleaner


def _fill(log, n, start=0, keys=10):
    for i in range(start, start + n):
        log.append_as_leader(keyed([(f"k{i % keys}", f"v{i}"), (f"k{(i + 3) % keys}", f"w{i}")], ts=log.clock.milliseconds()))


def _model(log):
    return {k: v for k, (_, v) in latest_per_key(read_records(log)).items()}


def _stray(log):
    return [f for f in os.listdir(log.dir) if f.endswith((".cleaned", ".swap"))]


def test_prepare_in_a_worker_thread_while_the_owner_appends_rolls_and_reads(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    job = cleaner.grab_filthiest()
    worker = threading.Thread(target=job.prepare)
    worker.start()
    for i in range(80, 200):  # the owner keeps going meanwhile
        _fill(log, 1, start=i)
        if i % 40 == 0:
            log.roll()
        assert read_records(log, log.log_end_offset - 2)
    worker.join()
    expected = _model(log)
    result = job.commit()
    assert result.committed and job.state is JobState.COMMITTED
    assert _model(log) == expected and not _stray(log)
    offsets = [o for o, _, _ in read_records(log)]
    assert offsets == sorted(set(offsets)) and offsets[-1] == log.log_end_offset - 1


def test_a_truncation_during_prepare_aborts_the_commit_and_removes_the_cleaned_files(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    job = cleaner.grab_filthiest()
    job.prepare()
    assert _stray(log)
    log.truncate_to(log.log_segments()[-2].base_offset + 1)
    before = read_records(log)
    result = job.commit()
    assert not result.committed and "truncated" in result.reason
    assert read_records(log) == before and not _stray(log)
    assert cleaner.cleaner_checkpoints() == {}
    assert cleaner.clean_once().committed  # the next cleaning starts afresh


def test_a_log_deleted_during_prepare_aborts_quietly(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    job = cleaner.grab_filthiest()
    job.prepare()
    log.delete()
    result = job.commit()
    assert not result.committed and "deleted" in result.reason
    assert not os.path.exists(log.dir)


def test_a_log_closed_while_prepare_runs_makes_prepare_fail_or_the_commit_abort(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    job = cleaner.grab_filthiest()
    log.close()  # the job holds its own descriptors: prepare still reads consistent data
    job.prepare()
    assert not job.commit().committed and not _stray(log)


def test_retention_deleting_the_oldest_segments_meanwhile_drops_only_their_groups(tmp_path):
    log, cleaner = _setup(tmp_path, cleanup_policy=("compact", "delete"), retention_ms=DAY)
    clock = log.clock
    for i in range(40):  # old data, past retention soon
        log.append_as_leader(keyed([(f"old{i}", "x")], ts=clock.milliseconds()))
    log.roll()
    clock.sleep(DAY // 2)
    _fill(log, 60)
    log.roll()
    job = cleaner.grab_filthiest()
    job.prepare()
    clock.sleep(DAY // 2 + 1)
    assert log.delete_old_segments() > 0  # retention runs on the owner thread meanwhile
    expected = _model(log)
    result = job.commit()
    assert result.committed and result.groups_dropped > 0 and result.segments_replaced > 0
    assert _model(log) == expected and not _stray(log)
    assert all(k.startswith(b"k") for k in expected)


def test_reads_holding_an_old_segment_keep_working_until_the_delayed_delete(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    held = log.read(0, 1 << 20).records  # a fetch in flight holds the old segment's file
    old_bytes = held.read()
    cleaner.clean_once()
    assert held.read() == old_bytes  # renamed .deleted, still open
    assert held.path.endswith(".deleted")
    log.clock.sleep(log.config.file_delete_delay_ms)
    log.scheduler.run_pending()
    assert not os.path.exists(held.path)


def test_cancel_stops_prepare_and_the_commit_then_aborts(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    job = cleaner.grab_filthiest()
    job.cancel()
    job.prepare()
    assert job.state is JobState.FAILED
    result = job.commit()
    assert not result.committed and "cancelled" in result.reason and not _stray(log)
    assert cleaner.clean_once().committed  # not marked uncleanable


def test_a_corrupt_batch_fails_the_cleaning_and_marks_the_log_uncleanable(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    seg = log.log_segments()[1]
    os.pwrite(seg.log.fd, b"\xfe\x7f", 61)  # first record's length varint of the first batch
    job = cleaner.grab_filthiest()
    job.prepare()
    result = job.commit()
    assert not result.committed and "Corrupt" in result.reason and not _stray(log)
    assert cleaner.clean_once() is None and cleaner.job_for(log) is None


def test_one_cleaner_thread_runs_one_job_at_a_time_and_a_log_is_never_grabbed_twice(tmp_path):
    a = open_log(tmp_path, COMPACT, name="a-0")
    b = open_log(tmp_path, COMPACT, name="b-0", clock=a.clock)
    logs = {a.topic_partition: a, b.topic_partition: b}
    one = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [str(tmp_path)], logs, a.clock)
    for log in (a, b):
        _fill(log, 40)
        log.roll()
    job = one.grab_filthiest()
    assert one.grab_filthiest() is None  # the only cleaner is busy
    job.abort()
    two = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20, num_threads=2), [str(tmp_path)], logs, a.clock)
    j1, j2 = two.grab_filthiest(), two.grab_filthiest()
    assert {j1.topic_partition, j2.topic_partition} == {("a", 0), ("b", 0)}
    assert two.grab_filthiest() is None and two.job_for(a) is None
    for j in (j1, j2):
        j.prepare()
        assert j.commit().committed


def test_a_policy_switched_to_delete_during_prepare_aborts_and_such_logs_are_not_grabbed(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    job = cleaner.grab_filthiest()
    job.prepare()
    log.update_config(replace(log.config, cleanup_policy=("delete",)))
    assert "no longer contains compact" in job.commit().reason
    assert cleaner.clean_once() is None


def test_commit_before_prepare_aborts_and_a_job_cannot_be_committed_twice(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    job = cleaner.grab_filthiest()
    assert not job.commit().committed
    try:
        job.commit()
        raise AssertionError("second commit accepted")
    except RuntimeError:
        pass
    assert cleaner.clean_once().committed


def test_a_paused_log_is_skipped_until_resumed(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    cleaner.manager.pause(log.topic_partition)
    cleaner.manager.pause(log.topic_partition)
    assert cleaner.clean_once() is None
    cleaner.manager.resume(log.topic_partition)
    assert cleaner.clean_once() is None  # paused twice, resumed once
    cleaner.manager.resume(log.topic_partition)
    assert cleaner.clean_once().committed


def test_a_truncation_below_the_checkpoint_moves_the_checkpoint_back(tmp_path):
    log, cleaner = _setup(tmp_path)
    _fill(log, 80)
    log.roll()
    end = cleaner.clean_once().end_offset
    target = end - 20
    log.truncate_to(target)
    cleaner.maybe_truncate_checkpoint(log, target)
    assert cleaner.cleaner_checkpoints() == {log.topic_partition: target}
    _fill(log, 80, start=500)
    log.roll()
    expected = _model(log)
    assert cleaner.clean_once().committed
    assert _model(log) == expected and len(read_records(log)) == len(expected)


def test_a_cleaner_thread_cleaning_in_a_loop_beside_appends_reads_and_retention_loses_nothing(tmp_path):
    # Kafka's shape: a dedicated cleaner thread runs grab+prepare+commit; appends, reads and
    # retention go on at the same time on another thread; only the log's lock orders them
    log, cleaner = _setup(tmp_path, cleanup_policy=("compact", "delete"), retention_bytes=12_000)
    stop = threading.Event()
    results, errors = [], []
    committed = threading.Condition()  # notified after each committed cleaning

    def cleaner_loop():
        try:
            while not stop.is_set():
                r = cleaner.clean_once()
                if r is None:
                    stop.wait(0.001)  # the backoff
                else:
                    with committed:
                        results.append(r)
                        committed.notify_all()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            with committed:
                committed.notify_all()

    def commits():
        return sum(r.committed for r in results)

    worker = threading.Thread(target=cleaner_loop)
    worker.start()
    written = {}

    def append_chunk(start):
        # 50 appends, reads every 7th, then a roll and a retention pass
        for i in range(start, start + 50):
            info = log.append_as_leader(keyed([(f"k{i % 23}", f"v{i}")], ts=log.clock.milliseconds()))
            written[info.first_offset] = (f"k{i % 23}".encode(), f"v{i}".encode())
            if i % 7 == 0:
                got = read_records(log, max(log.log_start_offset, log.log_end_offset - 30))
                assert all(written[o] == (k, v) for o, k, v in got)
        log.roll()
        log.delete_old_segments()

    try:
        for start in range(0, 1500, 50):
            append_chunk(start)
        # How many cleanings overlap the appends depends on how the threads are scheduled
        # (a busy machine gives the cleaner less time). Until it has committed four, keep
        # appending one chunk at a time and wait for its next commit: the dirty chunk gives
        # it work, and the wait ends as soon as it is done (deadline only for a dead thread).
        start = 1500
        while commits() < 4 and not errors and start < 1500 + 50 * 40:
            before = commits()
            append_chunk(start)
            start += 50
            with committed:
                committed.wait_for(lambda b=before: commits() > b or errors, timeout=60)
    finally:
        stop.set()
        worker.join()
    assert not errors and commits() > 3 and log.log_start_offset > 0
    got = read_records(log)
    assert [o for o, _, _ in got] == sorted({o for o, _, _ in got})
    assert all(written[o] == (k, v) for o, k, v in got)
    latest = {}
    for o, (k, _) in written.items():
        latest[k] = o
    assert {k: o for o, k, _ in got} == latest  # every key's latest record, nothing lost
    assert not [f for f in os.listdir(log.dir) if f.endswith(".cleaned")]


def test_a_partition_deleted_while_prepare_writes_is_not_marked_uncleanable(tmp_path):
    from log.log_manager import LogManager
    from log.scheduler import Scheduler

    log0 = open_log(tmp_path / "scratch", COMPACT)
    clock = log0.clock
    lm = LogManager([str(tmp_path / "d")], COMPACT, clock, Scheduler(clock),
                    cleaner_config=CleanerConfig(dedupe_buffer_size=1 << 20))
    lm.startup()
    log = lm.get_or_create_log(("gone", 0))
    _fill(log, 80)
    log.roll()
    job = lm.cleaner.grab_filthiest()
    log.close()  # as async_delete does, but before it could cancel the job
    os.rename(log.dir, log.dir + ".0123-delete")
    job.prepare()
    assert isinstance(job.error, FileNotFoundError)  # no directory to write .cleaned files in
    result = job.commit()
    assert not result.committed and "deleted" in result.reason
    assert lm.cleaner.manager.uncleanable == {}
