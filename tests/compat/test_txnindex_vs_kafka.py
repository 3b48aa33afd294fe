"""The same transactional workload on kbroker and on Apache Kafka 4.3.1 (bench/harness/kafka_dist.py,
jars from `make kafka-jars`) leaves the same .txnindex files: same names, same 34-byte
entries (version, producer id, first offset, marker offset, LSO), and the same offsets for
every record and marker (so read_committed consumers of both see the same thing)."""

from __future__ import annotations

import glob
import os
import struct
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess
from tests.support.requirements_helper import needs_tool

JARS = Path(__file__).resolve().parents[2] / "bench" / "kafka" / "jars"
pytestmark = needs_tool(any(JARS.glob("kafka-clients-*.jar")), "Apache Kafka jars missing: run `make kafka-jars`")
TOPIC = "txn-vs-kafka"


def _workload(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(120)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "vs-kafka", "linger.ms": 0})
    p.init_transactions(120)
    for i in range(6):
        p.begin_transaction()
        for j in range(5):
            p.produce(TOPIC, value=f"{i}-{j}".encode(), partition=j % 2)
        p.flush(120)   # every record written before the marker, so aborted data is in the log
        if i % 3 == 1:
            p.abort_transaction(120)
        else:
            p.commit_transaction(120)


def _offsets(bootstrap: str, isolation: str) -> list[tuple[int, int, bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "vs-" + isolation, "isolation.level": isolation,
                  "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, p, 0) for p in (0, 1)])
    got, eof = [], set()
    deadline = time.monotonic() + 60
    try:
        while len(eof) < 2 and time.monotonic() < deadline:
            m = c.poll(1)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                continue
            got.append((m.partition(), m.offset(), m.value()))
    finally:
        c.close()
    assert len(eof) == 2
    return sorted(got)


def _txnindex(log_dir: Path) -> dict[str, list[tuple[int, int, int, int, int]]]:
    out = {}
    for path in sorted(glob.glob(os.path.join(str(log_dir), f"{TOPIC}-*", "*.txnindex"))):
        with open(path, "rb") as f:
            data = f.read()
        assert len(data) % 34 == 0
        out[os.path.relpath(path, log_dir)] = [struct.unpack_from(">hqqqq", data, i) for i in range(0, len(data), 34)]
    return out


def _run(broker, log_dir: Path) -> tuple[dict, list, list]:
    try:
        _workload(broker.bootstrap)
        return _txnindex(log_dir), _offsets(broker.bootstrap, "read_committed"), \
            _offsets(broker.bootstrap, "read_uncommitted")
    finally:
        broker.stop()


def test_the_txnindex_files_and_offsets_are_those_apache_kafka_writes(tmp_path):
    from bench.harness.kafka_dist import KafkaProcess

    kafka = KafkaProcess(tmp_path / "kafka", heap=["-Xmx512m", "-Xms512m"]).start()
    theirs = _run(kafka, tmp_path / "kafka" / "logs")
    ours = _run(BrokerProcess(tmp_path / "kbroker").start(), tmp_path / "kbroker")

    def normalized(index):   # producer ids are allocated differently: compare them by order of use
        pids: dict[int, int] = {}
        return {name: [(v, pids.setdefault(pid, len(pids)), first, last, lso) for v, pid, first, last, lso in entries]
                for name, entries in index.items()}

    assert normalized(ours[0]) == normalized(theirs[0])
    assert sum(len(e) for e in ours[0].values()) == 4   # two aborts, each on both partitions
    assert ours[1] == theirs[1] and ours[2] == theirs[2]
