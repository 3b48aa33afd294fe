"""A kbroker process for the micro-benchmarks of its request paths, driven by the project's
protocol client, and the CPU time of its event-loop thread.

The broker is ``python -m kbroker serve`` (tests/support/broker_process.py) on a temporary
data dir; every request is handled on its main thread, the event loop.  What a request costs
the broker is the main thread's time on the CPU across the request, read from
``/proc/<pid>/task/<pid>/schedstat`` (nanoseconds, unlike the 10 ms ticks of ``stat``): the
client here is synchronous, so between requests the loop is idle and the difference is the
request's decode, handling, encoding and socket calls.  Background threads (flushes,
checkpoints) are not counted; the loop's own 100 ms scheduler tick is, which is why the
figures are medians over many requests.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.harness.common import COMMON
from kbroker.client import Connection, error_name
from tests.support.broker_process import BrokerProcess
from wire.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    ProduceRequest,
)


def loop_cpu_ns(pid: int) -> int:
    """Nanoseconds the process's main thread (kbroker's event loop) has run on a CPU."""
    return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0])


@contextmanager
def kbroker(overrides: dict[str, str] | None = None) -> Iterator[BrokerProcess]:
    """A fresh kbroker on a temporary data dir (removed afterwards), with the settings the
    side-by-side runs give it."""
    data = Path(tempfile.mkdtemp(prefix="kbroker-micro-"))
    broker = BrokerProcess(data, overrides={**COMMON, **(overrides or {})})
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(data, ignore_errors=True)


def connect(broker: BrokerProcess, client_id: str = "bench-micro") -> Connection:
    return Connection.open("127.0.0.1", broker.port, client_id=client_id, timeout_s=600)


def _check(what: str, code: int, message: str | None = None) -> None:
    if code:
        raise RuntimeError(f"{what}: {error_name(code)} {message or ''}")


def create_topic(conn: Connection, name: str, partitions: int) -> uuid.UUID:
    """Create ``name`` (replication factor 1) and return its topic id."""
    resp = conn.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=600_000, validate_only=False))
    t = resp.topics[0]
    _check(f"CreateTopics {name}", t.error_code, t.error_message)
    return t.topic_id


def add_partitions(conn: Connection, name: str, count: int) -> None:
    """CreatePartitions: ``name`` grows to ``count`` partitions."""
    resp = conn.call(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name=name, count=count, assignments=None)], timeout_ms=600_000, validate_only=False))
    _check(f"CreatePartitions {name}", resp.results[0].error_code, resp.results[0].error_message)


def delete_topic(conn: Connection, name: str) -> None:
    resp = conn.call(DeleteTopicsRequest(topic_names=[name], topics=[DeleteTopicsRequest.DeleteTopicState(
        name=name, topic_id=uuid.UUID(int=0))], timeout_ms=600_000))
    _check(f"DeleteTopics {name}", resp.responses[0].error_code)


def produce_request(topic: str, batches: dict[int, bytes], acks: int = 1) -> ProduceRequest:
    """One Produce of ``batches`` (partition -> a record batch) to ``topic``."""
    return ProduceRequest(transactional_id=None, acks=acks, timeout_ms=30_000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=p, records=b) for p, b in batches.items()])])


def check_produce(resp: Any) -> None:
    for t in resp.responses:
        for p in t.partition_responses:
            _check(f"Produce {t.name}-{p.index}", p.error_code, p.error_message)
