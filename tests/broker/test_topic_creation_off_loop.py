"""Creating partitions happens off the event loop (kbroker/replica/topic_creation.py): while a big
CreateTopics (or a CreatePartitions, a Metadata auto-create, __consumer_offsets for a
FindCoordinator) is opening its logs the broker keeps answering, the name is taken at once
(a second creation of it is refused as Kafka refuses it) and the partitions become visible
only when all are open.

The creation is held open deterministically by the test hook ``creations.before_batch``
(called on the executor thread before each batch of partitions is opened), never by timing.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from kbroker import Broker
from tests.support.wire_client import WireClient
from wire.error_codes import ErrorCode
from wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from wire.record_batch import build_batch

DEADLINE_S = 60.0


def _call(bootstrap: str, msg: Any, version: int, resp_cls: type) -> tuple[int, Any]:
    """One request on a connection of its own, answered within 60 s (a creation of many
    partitions on a busy machine takes more than a few seconds)."""
    client = WireClient(bootstrap)
    try:
        return client.cid + 1, client.call(msg, version, resp_cls)
    finally:
        client.close()


class Gate:
    """``before_batch`` hook: the first batch waits until ``release``; records the threads."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.threads: list[str] = []
        self.batches: list[list[tuple[str, int]]] = []

    def __call__(self, batch: list[tuple[str, int]]) -> None:
        self.threads.append(threading.current_thread().name)
        self.batches.append(batch)
        self.entered.set()
        assert self.release.wait(DEADLINE_S)


@contextmanager
def gated_broker(tmp_path) -> Iterator[tuple[Any, Gate]]:
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                       "num.partitions": "1", "offsets.topic.num.partitions": "5"}) as b:
        gate = Gate()
        try:
            yield b, gate
        finally:
            gate.release.set()


def in_thread(fn, expect_error: bool = False) -> tuple[threading.Thread, list[Any]]:
    """Run ``fn`` on a thread; its answer (or, ``expect_error``, its exception) lands in the list."""
    answers: list[Any] = []

    def run() -> None:
        try:
            answers.append(fn())
        except Exception as e:
            if not expect_error:
                raise
            answers.append(e)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, answers


def create(bootstrap: str, name: str, partitions: int, timeout_ms: int = 60_000) -> CreateTopicsResponse:
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                                               assignments=[], configs=[])
    return _call(bootstrap, CreateTopicsRequest(topics=[topic], timeout_ms=timeout_ms), 7, CreateTopicsResponse)[1]


def metadata(bootstrap: str, name: str, auto: bool = False) -> MetadataResponse.MetadataResponseTopic:
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=auto)
    return _call(bootstrap, req, 12, MetadataResponse)[1].topics[0]


def produce(bootstrap: str, topic: str) -> int:
    batch = build_batch([(b"k", b"v", None, int(time.time() * 1000))])
    req = ProduceRequest(acks=1, timeout_ms=30_000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    return _call(bootstrap, req, 9, ProduceResponse)[1].responses[0].partition_responses[0].error_code


def test_the_broker_answers_other_requests_while_a_thousand_partition_create_topics_opens_its_logs(tmp_path):
    with gated_broker(tmp_path) as (b, gate):
        bootstrap = b.bootstrap_servers
        assert create(bootstrap, "other", 1).topics[0].error_code == ErrorCode.NONE
        b.broker.state.creations.before_batch = gate
        creator, created = in_thread(lambda: create(bootstrap, "big.one", 1000))
        assert gate.entered.wait(DEADLINE_S), "the creation never reached its disk work"

        # all of this is answered while the creation is held (its answer has not come)
        _, versions = _call(bootstrap, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3, ApiVersionsResponse)
        produced = produce(bootstrap, "other")
        invisible = metadata(bootstrap, "big.one")
        auto_created = metadata(bootstrap, "big.one", auto=True)
        again = create(bootstrap, "big.one", 3).topics[0]
        colliding = create(bootstrap, "big_one", 3).topics[0]
        answered_while_held = not created and not gate.release.is_set()
        gate.release.set()
        creator.join(DEADLINE_S)
        visible = metadata(bootstrap, "big.one")

    assert answered_while_held
    assert versions.error_code == ErrorCode.NONE and produced == ErrorCode.NONE
    # partitions are not visible (nor auto-created a second time) until all are open
    assert (invisible.error_code, invisible.partitions) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert (auto_created.error_code, auto_created.partitions) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert (again.error_code, again.error_message) == (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'big.one' already exists.")
    assert (colliding.error_code, colliding.error_message) == (
        ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic 'big_one' collides with existing topic: big.one")
    [answer] = created[0].topics
    assert (answer.name, answer.error_code, answer.num_partitions) == ("big.one", ErrorCode.NONE, 1000)
    assert visible.error_code == ErrorCode.NONE and len(visible.partitions) == 1000
    assert sorted(p.partition_index for p in visible.partitions) == list(range(1000))
    # opened in batches, none of them on the event loop's thread ("kbroker")
    assert len(gate.batches) > 1 and sum(map(len, gate.batches)) == 1000
    assert "kbroker" not in gate.threads


def test_a_create_topics_not_done_within_its_timeout_answers_request_timed_out_and_the_creation_goes_on(tmp_path):
    with gated_broker(tmp_path) as (b, gate):
        bootstrap = b.bootstrap_servers
        b.broker.state.creations.before_batch = gate
        answer = create(bootstrap, "slow", 4, timeout_ms=100).topics[0]   # the gate is closed
        gate.release.set()
        deadline = time.monotonic() + DEADLINE_S
        while (m := metadata(bootstrap, "slow")).error_code != ErrorCode.NONE and time.monotonic() < deadline:
            time.sleep(0.05)

    assert (answer.error_code, answer.error_message) == (ErrorCode.REQUEST_TIMED_OUT, None)
    assert (answer.num_partitions, answer.replication_factor, answer.configs) == (-1, -1, [])
    assert m.error_code == ErrorCode.NONE and len(m.partitions) == 4


def test_two_create_topics_of_one_name_at_once_create_it_once_and_refuse_the_other(tmp_path):
    with gated_broker(tmp_path) as (b, _):
        bootstrap = b.bootstrap_servers
        start = threading.Barrier(2)

        def racer() -> CreateTopicsResponse:
            start.wait(DEADLINE_S)
            return create(bootstrap, "raced", 200)
        threads = [in_thread(racer) for _ in range(2)]
        for t, _ in threads:
            t.join(DEADLINE_S)
        m = metadata(bootstrap, "raced")

    results = sorted((r.topics[0].error_code, r.topics[0].error_message) for _, [r] in threads)
    assert results == [(ErrorCode.NONE, None), (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'raced' already exists.")]
    assert len(m.partitions) == 200


def test_a_create_topics_racing_a_metadata_auto_creation_of_the_name_is_refused(tmp_path):
    with gated_broker(tmp_path) as (b, gate):
        bootstrap = b.bootstrap_servers
        b.broker.state.creations.before_batch = gate
        asker, asked = in_thread(lambda: metadata(bootstrap, "auto", auto=True))
        assert gate.entered.wait(DEADLINE_S)
        refused = create(bootstrap, "auto", 3).topics[0]
        gate.release.set()
        asker.join(DEADLINE_S)

    assert (refused.error_code, refused.error_message) == (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'auto' already exists.")
    [auto] = asked
    assert auto.error_code == ErrorCode.NONE and len(auto.partitions) == 1   # num.partitions


def test_create_partitions_open_off_the_loop_and_appear_together_when_open(tmp_path):
    def grow(bootstrap: str, count: int) -> CreatePartitionsResponse:
        req = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name="grown", count=count, assignments=None)], timeout_ms=60_000, validate_only=False)
        return _call(bootstrap, req, 3, CreatePartitionsResponse)[1]

    with gated_broker(tmp_path) as (b, gate):
        bootstrap = b.bootstrap_servers
        assert create(bootstrap, "grown", 2).topics[0].error_code == ErrorCode.NONE
        b.broker.state.creations.before_batch = gate
        grower, grown = in_thread(lambda: grow(bootstrap, 300))
        assert gate.entered.wait(DEADLINE_S)
        during = metadata(bootstrap, "grown")
        again = grow(bootstrap, 300).results[0]
        answered_while_held = not grown
        gate.release.set()
        grower.join(DEADLINE_S)
        after = metadata(bootstrap, "grown")

    assert answered_while_held
    assert len(during.partitions) == 2
    assert (again.error_code, again.error_message) == (ErrorCode.INVALID_PARTITIONS, "Topic already has 300 partition(s).")
    assert [(r.name, r.error_code) for r in grown[0].results] == [("grown", ErrorCode.NONE)]
    assert len(after.partitions) == 300


@pytest.mark.parametrize("version", [3, 4])
def test_find_coordinator_answers_once_consumer_offsets_is_open_and_the_loop_answers_meanwhile(tmp_path, version):
    with gated_broker(tmp_path) as (b, gate):
        bootstrap = b.bootstrap_servers
        b.broker.state.creations.before_batch = gate
        req = (FindCoordinatorRequest(key="g", key_type=0) if version < 4
               else FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]))
        finder, found = in_thread(lambda: _call(bootstrap, req, version, FindCoordinatorResponse)[1])
        assert gate.entered.wait(DEADLINE_S)
        _, versions = _call(bootstrap, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3, ApiVersionsResponse)
        answered_while_held = not found
        gate.release.set()
        finder.join(DEADLINE_S)
        offsets = metadata(bootstrap, "__consumer_offsets")

    assert answered_while_held and versions.error_code == ErrorCode.NONE
    code = found[0].error_code if version < 4 else found[0].coordinators[0].error_code
    assert code == ErrorCode.NONE
    assert offsets.error_code == ErrorCode.NONE and len(offsets.partitions) == 5


def test_a_broker_stopped_during_a_creation_finishes_it_first_and_starts_again_with_every_partition(tmp_path):
    b = Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)})
    gate = Gate()
    try:
        bootstrap = b.bootstrap_servers
        assert create(bootstrap, "kept", 2).topics[0].error_code == ErrorCode.NONE
        creations = b.broker.state.creations
        creations.before_batch = gate
        creator, _ = in_thread(lambda: create(bootstrap, "cut", 500), expect_error=True)
        assert gate.entered.wait(DEADLINE_S)
        stopper, stopped = in_thread(lambda: b.stop() or True)
        # the stop waits for the whole creation (not for the client to be answered)
        deadline = time.monotonic() + DEADLINE_S
        while not creations.stopping and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.release.set()
        stopper.join(DEADLINE_S)
    finally:
        gate.release.set()
        b.stop()
        creator.join(DEADLINE_S)
    assert stopped == [True]
    assert sum(name.startswith("cut-") for name in os.listdir(tmp_path)) == 500
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}) as again:
        kept, cut = metadata(again.bootstrap_servers, "kept"), metadata(again.bootstrap_servers, "cut")
        late = create(again.bootstrap_servers, "late", 1).topics[0]
    assert kept.error_code == ErrorCode.NONE and len(kept.partitions) == 2
    assert cut.error_code == ErrorCode.NONE and len(cut.partitions) == 500
    assert late.error_code == ErrorCode.NONE


def test_a_delete_topics_during_the_creation_deletes_the_topic_once_its_partitions_are_open(tmp_path):
    with gated_broker(tmp_path) as (b, gate):
        bootstrap = b.bootstrap_servers
        creations = b.broker.state.creations
        creations.before_batch = gate
        asked = threading.Event()   # the DeleteTopics handler has looked for the creation
        in_flight = creations.in_flight
        creations.in_flight = lambda name: (asked.set(), in_flight(name))[1]
        creator, created = in_thread(lambda: create(bootstrap, "brief", 150))
        assert gate.entered.wait(DEADLINE_S)
        deleter, deleted = in_thread(lambda: _call(bootstrap, DeleteTopicsRequest(topic_names=["brief"], timeout_ms=60_000),
                                                   4, DeleteTopicsResponse)[1])
        assert asked.wait(DEADLINE_S)
        answered_while_held = not created and not deleted
        gate.release.set()
        creator.join(DEADLINE_S)
        deleter.join(DEADLINE_S)
        after = metadata(bootstrap, "brief")
        live_dirs = [n for n in os.listdir(tmp_path) if n.startswith("brief-") and not n.endswith("-delete")]

    assert answered_while_held
    assert created[0].topics[0].error_code == ErrorCode.NONE
    assert [(r.name, r.error_code) for r in deleted[0].responses] == [("brief", ErrorCode.NONE)]
    assert after.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and live_dirs == []
