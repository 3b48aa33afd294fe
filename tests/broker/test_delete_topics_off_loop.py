"""DeleteTopics closes, renames and checkpoints off the event loop: while that work is held
up, the broker keeps answering other requests, and the DeleteTopics answer comes once it is
done."""

from __future__ import annotations

import os
import threading

from kbroker import Broker
from log.log_manager import LogManager
from wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)

from .test_embedded_broker import _call

DEADLINE_S = 60.0


def test_the_event_loop_answers_other_requests_while_a_topic_deletion_is_on_disk(tmp_path, monkeypatch):
    entered, release = threading.Event(), threading.Event()
    finish_threads: list[str] = []
    original = LogManager.finish_delete

    def gated_finish_delete(self, tp, log):
        finish_threads.append(threading.current_thread().name)
        entered.set()
        assert release.wait(DEADLINE_S)
        original(self, tp, log)

    monkeypatch.setattr(LogManager, "finish_delete", gated_finish_delete)
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}) as b:
        topic = CreateTopicsRequest.CreatableTopic(name="doomed", num_partitions=2, replication_factor=1,
                                                   assignments=[], configs=[])
        _, created = _call(b.bootstrap_servers, CreateTopicsRequest(topics=[topic], timeout_ms=10000), 5,
                           CreateTopicsResponse)
        assert created.topics[0].error_code == 0
        answers: list[DeleteTopicsResponse] = []
        deleter = threading.Thread(target=lambda: answers.append(_call(
            b.bootstrap_servers, DeleteTopicsRequest(topic_names=["doomed"], timeout_ms=10000), 4,
            DeleteTopicsResponse)[1]), daemon=True)
        deleter.start()
        assert entered.wait(DEADLINE_S), "the deletion never reached its disk work"

        _, versions = _call(b.bootstrap_servers, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3, ApiVersionsResponse)
        answered_while_held = versions.error_code == 0 and not release.is_set() and not answers
        _, again = _call(b.bootstrap_servers, CreateTopicsRequest(topics=[topic], timeout_ms=10000), 5,
                         CreateTopicsResponse)
        release.set()
        deleter.join(DEADLINE_S)

    assert answered_while_held
    assert (again.topics[0].error_code, again.topics[0].error_message) == (36, "Topic 'doomed' is marked for deletion.")
    assert [(r.name, r.error_code) for r in answers[0].responses] == [("doomed", 0)]
    assert finish_threads and "kbroker" not in finish_threads  # not the event loop's thread
    names = os.listdir(tmp_path)
    assert "doomed-0" not in names and "doomed-1" not in names
    assert sum(n.startswith("doomed-") and n.endswith("-delete") for n in names) == 2
