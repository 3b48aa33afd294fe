"""Transactions with each stock client against a real broker process: commits and aborts
interleaved over three partitions (tests/support/txn_workload.py's scenario); a
read_committed consumer sees exactly the committed records in order with no markers, a
read_uncommitted one every record, both at their exact offsets (marker gaps included).
Also: consume-transform-produce with ``send_offsets_to_transaction`` (the group's offsets
become visible with the commit, not before; an abort leaves them), and DescribeProducers
through Kafka's Java AdminClient."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.support.broker_process import ROOT
from tests.support.java_admin import java_client_classpath
from tests.support.txn_workload import (
    PARTITIONS,
    PER_PARTITION,
    TXNS,
    check_scenario,
    confluent_transactions,
    create_topic,
    read_all,
    records_of,
)

TOPIC = "txn-topic"


def test_confluent_kafka_commits_and_aborts_are_seen_exactly_by_each_isolation_level(broker):
    create_topic(broker.bootstrap, TOPIC)
    confluent_transactions(broker.bootstrap, TOPIC, "ck-txn", "ck")
    check_scenario(broker.bootstrap, TOPIC, "ck")


def test_kafka_python_commits_and_aborts_are_seen_exactly_by_each_isolation_level(broker):
    from kafka import KafkaProducer

    create_topic(broker.bootstrap, TOPIC)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kp-txn")
    try:
        p.init_transactions()
        for i, commit in enumerate(TXNS):
            p.begin_transaction()
            for part in range(PARTITIONS):
                for k, v in records_of("kp", i, part):
                    p.send(TOPIC, key=k, value=v, partition=part).get(60)
            p.flush(60)
            if commit:
                p.commit_transaction()
            else:
                p.abort_transaction()
    finally:
        p.close(30)
    check_scenario(broker.bootstrap, TOPIC, "kp")


def test_aiokafka_commits_and_aborts_are_seen_exactly_by_each_isolation_level(broker):
    from aiokafka import AIOKafkaProducer

    create_topic(broker.bootstrap, TOPIC)

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="aio-txn")
        await p.start()
        try:
            for i, commit in enumerate(TXNS):
                await p.begin_transaction()
                for part in range(PARTITIONS):
                    for k, v in records_of("aio", i, part):
                        await p.send_and_wait(TOPIC, key=k, value=v, partition=part)
                if commit:
                    await p.commit_transaction()
                else:
                    await p.abort_transaction()
        finally:
            await p.stop()

    asyncio.run(run())
    check_scenario(broker.bootstrap, TOPIC, "aio")


def test_java_producer_transactions_and_describe_producers(broker):
    create_topic(broker.bootstrap, TOPIC)
    commits = "".join("C" if c else "A" for c in TXNS)
    done = subprocess.run(
        ["java", "-cp", java_client_classpath(), str(ROOT / "tests/support/java/TxnProducer.java"),
         broker.bootstrap, TOPIC, "java", str(PARTITIONS), str(PER_PARTITION), commits],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[-1] == "done"
    producers = [line.split()[1:] for line in lines if line.startswith("producer ")]
    # one producer per partition, epoch 0, its last sequence after 12 records (0..11), the
    # coordinator epoch of its markers, no open transaction
    assert [p[0] for p in producers] == [str(i) for i in range(PARTITIONS)]
    assert len({p[1] for p in producers}) == 1
    last_seq = str(PER_PARTITION * len(TXNS) - 1)
    assert {tuple(p[2:]) for p in producers} == {("0", last_seq, "0", "-1")}
    check_scenario(broker.bootstrap, TOPIC, "java")


def _committed(bootstrap: str, group: str, topic: str, stable: bool) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "isolation.level": "read_committed" if stable else "read_uncommitted"})
    try:
        return [tp.offset for tp in c.committed([TopicPartition(topic, p)
                                                 for p in range(PARTITIONS)], 60)]
    finally:
        c.close()


def test_send_offsets_to_transaction_commits_the_groups_offsets_with_the_output(broker):
    create_topic(broker.bootstrap, "in")
    create_topic(broker.bootstrap, "out")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(30):
        plain.produce("in", key=b"%d" % i, value=b"v%d" % i, partition=i % PARTITIONS)
    assert plain.flush(60) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ctp",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    c.assign([TopicPartition("in", p, 0) for p in range(PARTITIONS)])
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "ctp-txn"})
    p.init_transactions(60)

    def consume(n: int) -> list:
        got: list = []
        while len(got) < n:
            got += [m for m in c.consume(n - len(got), 1.0) if not m.error()]
        return got

    # an aborted transaction leaves the group's offsets where they were (none)
    p.begin_transaction()
    aborted = dict.fromkeys(range(PARTITIONS), 0)
    for m in consume(12):
        p.produce("out", key=m.key(), value=m.value().upper(), partition=m.partition())
        aborted[m.partition()] += 1
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 60)
    assert p.flush(60) == 0
    p.abort_transaction(60)
    assert _committed(broker.bootstrap, "ctp", "in", stable=True) == [-1001] * PARTITIONS
    # a committed one moves them with the output
    for tp in c.assignment():
        c.seek(TopicPartition(tp.topic, tp.partition, 0))
    p.begin_transaction()
    for m in consume(30):
        p.produce("out", key=m.key(), value=m.value().upper(), partition=m.partition())
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 60)
    p.commit_transaction(60)
    c.close()
    assert _committed(broker.bootstrap, "ctp", "in", stable=True) == [10] * PARTITIONS
    assert _committed(broker.bootstrap, "ctp", "in", stable=False) == [10] * PARTITIONS
    # partition p: its aborted records and their marker (if any), then 10 committed records
    # and their marker
    base = {part: n + 1 if n else 0 for part, n in aborted.items()}
    out = read_all(broker.bootstrap, "out", "read_committed",
                   end={part: b + 10 + 1 for part, b in base.items()})
    assert [(part, off, v) for part, off, _, v in out] == [
        (part, base[part] + j, b"V%d" % (part + PARTITIONS * j)) for part in range(PARTITIONS)
        for j in range(10)]


def test_a_subscribed_consumers_offsets_are_committed_with_its_member_id_and_generation(broker):
    create_topic(broker.bootstrap, "in")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(9):
        plain.produce("in", key=b"%d" % i, value=b"v%d" % i, partition=i % PARTITIONS)
    assert plain.flush(60) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "subscribed",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed"})
    c.subscribe(["in"])
    got: list = []
    while len(got) < 9:
        got += [m for m in c.consume(9, 1.0) if not m.error()]
    meta = c.consumer_group_metadata()   # member id and generation: TxnOffsetCommit v3 checks them
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "subscribed-txn"})
    p.init_transactions(60)
    p.begin_transaction()
    p.send_offsets_to_transaction(c.position(c.assignment()), meta, 60)
    p.commit_transaction(60)
    c.close()
    assert _committed(broker.bootstrap, "subscribed", "in", stable=True) == [3] * PARTITIONS


def test_a_fenced_producer_cannot_commit_offsets_or_records(broker):
    create_topic(broker.bootstrap, "out")
    old = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "zombie"})
    old.init_transactions(60)
    old.begin_transaction()
    old.produce("out", key=b"old", value=b"before-fence", partition=0)
    assert old.flush(60) == 0
    new = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "zombie"})
    new.init_transactions(60)   # bumps the epoch: the old transaction is aborted
    new.begin_transaction()
    new.produce("out", key=b"new", value=b"committed", partition=0)
    new.commit_transaction(60)
    old.produce("out", key=b"old", value=b"after-fence", partition=0)
    with pytest.raises(KafkaException) as info:
        old.flush(30)   # the broker refuses the old epoch: librdkafka's fatal _FENCED
    assert info.value.args[0].fatal()
    with pytest.raises(KafkaException):
        old.commit_transaction(60)
    # the log: old record 0, its abort marker 1 (written when the new producer fenced it),
    # the new record 2 and its commit marker 3; the write after the fence was refused
    assert read_all(broker.bootstrap, "out", "read_uncommitted", end=4, partitions=1) == [
        (0, 0, b"old", b"before-fence"), (0, 2, b"new", b"committed")]
    assert read_all(broker.bootstrap, "out", "read_committed", end=4, partitions=1) == [
        (0, 2, b"new", b"committed")]
