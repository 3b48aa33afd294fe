"""The broker's shutdown does its log work off the event loop (kbroker/app/log_shutdown.py):
every log is fsynced while the listeners still answer, then closed in batches on threads,
and the clean-shutdown marker is written only after every log is closed and the
checkpoints are written.

Each step is held open deterministically by wrapping the LogManager step the shutdown
calls on its threads (``flush_logs``, ``close_logs``) with a gate, never by timing.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from kbroker import Broker
from log.checkpoint import RECOVERY_POINT_CHECKPOINT_FILE, CleanShutdownFile, OffsetCheckpointFile
from tests.support.wire_client import WireClient
from wire.error_codes import ErrorCode
from wire.messages import ApiVersionsRequest, ApiVersionsResponse

from .test_topic_creation_off_loop import DEADLINE_S, create, in_thread, produce

PARTITIONS = 2000


def _config(tmp_path) -> dict[str, str]:
    return {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path), "num.partitions": "1"}


def _api_versions(client: WireClient) -> Any:
    return client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                       ApiVersionsResponse)


def test_the_event_loop_keeps_answering_api_versions_while_the_shutdown_flushes_two_thousand_partitions(tmp_path):
    b = Broker.start(_config(tmp_path))
    entered, release = threading.Event(), threading.Event()
    flush_threads: list[str] = []
    try:
        bootstrap = b.bootstrap_servers
        assert create(bootstrap, "many", PARTITIONS).topics[0].error_code == ErrorCode.NONE
        assert produce(bootstrap, "many") == ErrorCode.NONE
        lm = b.broker.state.log_manager
        flush_logs = lm.flush_logs

        def gated(logs: list[Any]) -> None:
            flush_threads.append(threading.current_thread().name)
            entered.set()
            assert release.wait(DEADLINE_S)
            flush_logs(logs)
        lm.flush_logs = gated
        client = WireClient(bootstrap)   # connected before the stop
        stopper, stopped = in_thread(lambda: b.stop() or True)
        assert entered.wait(DEADLINE_S)  # the shutdown is flushing the logs
        answer = _api_versions(client)   # answered meanwhile, on a connection already open ...
        late = WireClient(bootstrap)     # ... and on a new one
        late_answer = _api_versions(late)
        client.close()
        late.close()
        assert not CleanShutdownFile(str(tmp_path)).exists()
        release.set()
        stopper.join(DEADLINE_S)
    finally:
        release.set()
        b.stop()
    assert answer.error_code == ErrorCode.NONE and late_answer.error_code == ErrorCode.NONE
    assert stopped == [True]
    assert flush_threads and all(name.startswith("log-flushing") for name in flush_threads)
    assert CleanShutdownFile(str(tmp_path)).exists()


def test_the_clean_shutdown_marker_is_written_only_after_every_log_is_closed_and_the_checkpoints_list_them(tmp_path):
    b = Broker.start(_config(tmp_path))
    seen_marker_while_closing: list[bool] = []
    closing_threads: list[str] = []
    try:
        bootstrap = b.bootstrap_servers
        assert create(bootstrap, "t", 300).topics[0].error_code == ErrorCode.NONE
        assert produce(bootstrap, "t") == ErrorCode.NONE
        lm = b.broker.state.log_manager
        close_logs = lm.close_logs

        def watched(logs: list[Any], **kw: Any) -> None:
            seen_marker_while_closing.append(CleanShutdownFile(str(tmp_path)).exists())
            closing_threads.append(threading.current_thread().name)
            close_logs(logs, **kw)
        lm.close_logs = watched
    finally:
        b.stop()
    assert len(seen_marker_while_closing) == 3 and not any(seen_marker_while_closing)   # 100 logs a batch
    assert all(name.startswith("log-closing") for name in closing_threads)
    assert CleanShutdownFile(str(tmp_path)).exists()
    points = OffsetCheckpointFile(os.path.join(tmp_path, RECOVERY_POINT_CHECKPOINT_FILE)).read()
    assert len(points) == 300 and points[("t", 0)] == 1 and points[("t", 299)] == 0


def test_a_close_that_fails_leaves_no_clean_shutdown_marker_and_the_next_start_recovers_every_record(tmp_path):
    b = Broker.start(_config(tmp_path))
    stop_error: list[BaseException] = []
    try:
        bootstrap = b.bootstrap_servers
        assert create(bootstrap, "t", 250).topics[0].error_code == ErrorCode.NONE
        assert produce(bootstrap, "t") == ErrorCode.NONE
        assert produce(bootstrap, "t") == ErrorCode.NONE
        lm = b.broker.state.log_manager
        close_logs = lm.close_logs
        calls = []

        def failing(logs: list[Any], **kw: Any) -> None:
            calls.append(len(logs))
            if len(calls) == 1:   # the batch holding t-0, whose log is left unclosed
                raise OSError("disk gone")
            close_logs(logs, **kw)
        lm.close_logs = failing
        try:
            b.stop()
        except OSError as e:
            stop_error.append(e)
    finally:
        if b._thread.is_alive():   # the failed stop left the loop running
            b.stop()
        lm.release_locks()
    assert [str(e) for e in stop_error] == ["disk gone"]
    assert not CleanShutdownFile(str(tmp_path)).exists()
    with Broker.start(_config(tmp_path)) as again:
        lm2 = again.broker.state.log_manager
        assert lm2.had_clean_shutdown == {str(tmp_path): False}
        assert lm2.get_log(("t", 0)).log_end_offset == 2
        assert produce(again.bootstrap_servers, "t") == ErrorCode.NONE


def test_a_flush_that_fails_while_still_answering_does_not_stop_the_shutdown_which_flushes_every_log_again(tmp_path):
    b = Broker.start(_config(tmp_path))
    forced: list[bool] = []
    try:
        bootstrap = b.bootstrap_servers
        assert create(bootstrap, "t", 5).topics[0].error_code == ErrorCode.NONE
        assert produce(bootstrap, "t") == ErrorCode.NONE
        lm = b.broker.state.log_manager
        close_logs = lm.close_logs

        def failing_flush(logs: list[Any]) -> None:
            raise OSError("disk hiccup")

        def watched(logs: list[Any], flushed: bool = False, **kw: Any) -> None:
            forced.append(not flushed)
            close_logs(logs, flushed=flushed, **kw)
        lm.flush_logs, lm.close_logs = failing_flush, watched
    finally:
        b.stop()
    assert forced == [True]   # step 2 flushed every log whole
    assert CleanShutdownFile(str(tmp_path)).exists()
    points = OffsetCheckpointFile(os.path.join(tmp_path, RECOVERY_POINT_CHECKPOINT_FILE)).read()
    assert points[("t", 0)] == 1
