"""The config files (topic overrides, dynamic broker configs) and the producer id block are
written off the event loop: while a write is held up, the broker answers other requests, the
request that changed the config is answered only once its file is written, and the writes of
one file land in the order they were made.

The write seam is ``kbroker.configs.json_file._write_text_atomically``: the test replaces it with one
that blocks on an Event it sets only after seeing the broker answer meanwhile, so the outcome
does not depend on how busy the machine is."""

from __future__ import annotations

import json
import os
import threading

import pytest

import kbroker.configs.json_file as json_file
from kbroker import Broker
from kbroker.client import Connection
from kbroker.configs.topic_configs import TopicConfigStore
from kbroker.coordinators.producer_ids import BLOCK_SIZE, ProducerIdManager
from log.config import LogConfig
from wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

DEADLINE_S = 60.0
TOPIC, BROKER = 2, 4  # resource types


def _call(bootstrap: str, msg, version: int, resp_cls):
    host, port = bootstrap.rsplit(":", 1)
    with Connection.open(host, int(port), client_id="test", timeout_s=DEADLINE_S, negotiate=False) as c:
        c.send(msg, version, 7)
        return c.receive(resp_cls, version)[1]


class GatedWrite:
    """Replaces ``_write_text_atomically``: writes to files named ``gated`` announce
    themselves and wait for ``release``."""

    def __init__(self, original, gated: str) -> None:
        self.original = original
        self.gated = gated
        self.entered = threading.Event()
        self.release = threading.Event()
        self.threads: list[str] = []

    def __call__(self, path: str, text: str) -> None:
        if os.path.basename(path) == self.gated:
            self.threads.append(threading.current_thread().name)
            self.entered.set()
            assert self.release.wait(DEADLINE_S), "the test never released the write"
        self.original(path, text)


def _alter(resource_type: int, name: str, config: str, value: str) -> IncrementalAlterConfigsRequest:
    R = IncrementalAlterConfigsRequest
    return R(resources=[R.AlterConfigsResource(resource_type=resource_type, resource_name=name, configs=[
        R.AlterableConfig(name=config, config_operation=0, value=value)])], validate_only=False)


def _create(name: str, configs: dict[str, str]) -> CreateTopicsRequest:
    C = CreateTopicsRequest
    return C(topics=[C.CreatableTopic(name=name, num_partitions=1, replication_factor=1, assignments=[],
                                      configs=[C.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])],
             timeout_ms=10000)


CASES = {
    "topic-alter": ("kbroker-topic-configs.json", lambda: (_alter(TOPIC, "t", "retention.ms", "4242"), 1,
                                                           IncrementalAlterConfigsResponse),
                    lambda doc: doc["t"]["retention.ms"] == "4242"),
    "broker-alter": ("kbroker-broker-configs.json", lambda: (_alter(BROKER, "", "log.retention.ms", "4343"), 1,
                                                             IncrementalAlterConfigsResponse),
                     lambda doc: doc[""]["log.retention.ms"] == "4343"),
    "create-with-configs": ("kbroker-topic-configs.json", lambda: (_create("u", {"retention.ms": "4444"}), 5,
                                                                   CreateTopicsResponse),
                            lambda doc: doc["u"]["retention.ms"] == "4444"),
}


def _error_codes(resp) -> list[int]:
    if isinstance(resp, CreateTopicsResponse):
        return [t.error_code for t in resp.topics]
    return [r.error_code for r in resp.responses]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_config_change_is_answered_once_its_file_is_written_and_the_loop_answers_meanwhile(tmp_path, monkeypatch, case):
    file_name, request, stored = CASES[case]
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}) as b:
        created = _call(b.bootstrap_servers, _create("t", {}), 5, CreateTopicsResponse)
        assert _error_codes(created) == [0]
        gate = GatedWrite(json_file._write_text_atomically, file_name)
        monkeypatch.setattr(json_file, "_write_text_atomically", gate)
        msg, version, resp_cls = request()
        answers: list = []
        changer = threading.Thread(target=lambda: answers.append(_call(b.bootstrap_servers, msg, version, resp_cls)),
                                   daemon=True)
        changer.start()
        assert gate.entered.wait(DEADLINE_S), "the change never reached its file write"

        versions = _call(b.bootstrap_servers, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3, ApiVersionsResponse)
        answered_while_held = versions.error_code == 0 and not gate.release.is_set()
        unanswered_while_held = not answers
        gate.release.set()
        changer.join(DEADLINE_S)

    assert answered_while_held
    assert unanswered_while_held, "the change was answered before its file was written"
    assert answers and _error_codes(answers[0]) == [0]
    assert gate.threads and all(t.startswith("json-writer-") for t in gate.threads)  # the file's writer thread
    with open(os.path.join(tmp_path, file_name), encoding="utf-8") as f:
        assert stored(json.load(f))


def test_writes_of_one_config_file_land_in_the_order_they_were_made(tmp_path, monkeypatch):
    gate = GatedWrite(json_file._write_text_atomically, "kbroker-topic-configs.json")
    monkeypatch.setattr(json_file, "_write_text_atomically", gate)
    store = TopicConfigStore(str(tmp_path), LogConfig())
    first = store.set("a", {"retention.ms": "1"})
    assert gate.entered.wait(DEADLINE_S)
    second = store.set("a", {"retention.ms": "2"})
    third = store.set("b", {"retention.ms": "3"})
    # the caller's thread went on: the change applies in memory at once
    assert store.overrides_of("a") == {"retention.ms": "2"} and not first.done()
    gate.release.set()
    for f in (first, second, third):
        f.result(DEADLINE_S)
    assert store.durable() is third
    store.close()
    assert TopicConfigStore(str(tmp_path), LogConfig()).overrides == {"a": {"retention.ms": "2"}, "b": {"retention.ms": "3"}}


def test_producer_id_blocks_are_reserved_off_the_callers_thread_and_never_reused_after_a_restart(tmp_path, monkeypatch):
    fsyncs: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        fsyncs.append(threading.current_thread().name)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    ids = ProducerIdManager(str(tmp_path))  # reserves the first block here (off the loop in the broker)
    # one block write = its fsyncs (the file, then the directory for the rename)
    per_write = len(fsyncs)
    assert per_write >= 1 and set(fsyncs) == {threading.current_thread().name}
    handed = [ids.generate() for _ in range(3 * BLOCK_SIZE + 10)]
    assert handed == list(range(3 * BLOCK_SIZE + 10))
    later = fsyncs[per_write:]
    assert len(later) == 3 * per_write and all(name.startswith("producer-id-block") for name in later)
    ids.close()
    again = ProducerIdManager(str(tmp_path))
    assert again.generate() > max(handed)
    again.close()
