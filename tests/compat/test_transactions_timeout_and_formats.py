"""A transaction left open past its timeout is aborted by the coordinator (its records never
become visible, the LSO moves on, the producer is fenced); and the files transactions leave
are Kafka's: ``.txnindex`` bytes exactly as Kafka's ``TransactionIndex`` writes them and
read back by Kafka's own DumpLogSegments, ``__transaction_state`` and ``__consumer_offsets``
records (transactional offset commits, COMMIT markers) decoded by DumpLogSegments'
transaction-log and offsets decoders."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.support.admin_helpers import wait_until
from tests.support.eos_run import end_offsets
from tests.support.kafka_tools import kafka_tool
from tests.support.txn_workload import (
    END,
    PARTITIONS,
    PER_PARTITION,
    STRIDE,
    TXNS,
    check_scenario,
    create_topic,
    read_all,
    records_of,
)
from wire.java_hash import partition_for

DUMP = "org.apache.kafka.tools.DumpLogSegments"


def test_a_transaction_left_open_is_aborted_after_its_timeout_and_the_lso_moves_on(broker_factory):
    broker = broker_factory(**{"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"})
    create_topic(broker.bootstrap, "hang", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "hanging",
                  "transaction.timeout.ms": 20000})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(3):
        p.produce("hang", key=b"k%d" % i, value=b"never-visible", partition=0)
    assert p.flush(60) == 0
    # open: the LSO stays at the transaction's first offset, the high watermark is past it
    assert end_offsets(broker.bootstrap, "hang", 1, "read_committed") == {0: 0}
    assert end_offsets(broker.bootstrap, "hang", 1, "read_uncommitted") == {0: 3}
    # the coordinator aborts it after transaction.timeout.ms: an ABORT marker at offset 3
    lso = wait_until(lambda: end_offsets(broker.bootstrap, "hang", 1, "read_committed"),
                     lambda v: v == {0: 4}, timeout_s=120, interval_s=0.5)
    assert lso == {0: 4}
    assert read_all(broker.bootstrap, "hang", "read_committed", end=4, partitions=1) == []
    # the producer's epoch was bumped by the abort: it cannot commit
    with pytest.raises(KafkaException):
        p.commit_transaction(60)
    # and the partition goes on: a new transaction commits after the aborted one
    q = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "after"})
    q.init_transactions(60)
    q.begin_transaction()
    q.produce("hang", key=b"later", value=b"visible", partition=0)
    q.commit_transaction(60)
    assert read_all(broker.bootstrap, "hang", "read_committed", end=6, partitions=1) == [
        (0, 4, b"later", b"visible")]


def _txnindex_bytes(producer_id: int, entries: list[tuple[int, int, int]]) -> bytes:
    """Kafka's AbortedTxn: version int16 (0), producerId int64, firstOffset int64,
    lastOffset int64, lastStableOffset int64 (34 bytes each)."""
    return b"".join(struct.pack(">hqqqq", 0, producer_id, first, last, lso)
                    for first, last, lso in entries)


def _segment(data_dir: Path, topic: str, partition: int) -> Path:
    return data_dir / f"{topic}-{partition}" / "00000000000000000000.log"


def test_txnindex_transaction_state_and_offsets_records_are_kafkas_formats(broker):
    create_topic(broker.bootstrap, "t")
    create_topic(broker.bootstrap, "in", 1)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce("in", value=b"x", partition=0)
    assert plain.flush(60) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "fmt-group",
                  "enable.auto.commit": False})
    c.assign([TopicPartition("in", 0, 0)])
    while (m := c.poll(1.0)) is None or m.error():
        pass
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "fmt-txn"})
    p.init_transactions(60)
    for i, commit in enumerate(TXNS):
        p.begin_transaction()
        for part in range(PARTITIONS):
            for k, v in records_of("f", i, part):
                p.produce("t", key=k, value=v, partition=part)
        assert p.flush(60) == 0
        if i == 0:   # the first transaction also commits the group's offset of "in"
            p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 60)
        if commit:
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)
    c.close()
    check_scenario(broker.bootstrap, "t", "f")
    broker.stop()   # clean: every file written
    data = broker.data_dir

    # __transaction_state: every record decodes with Kafka's decoder; the state sequence
    states = []
    pid = None
    for log in sorted(data.glob("__transaction_state-*/00000000000000000000.log")):
        if log.stat().st_size == 0:
            continue
        out = kafka_tool(DUMP, "--files", str(log), "--transaction-log-decoder")
        for line in out.splitlines():
            if " key: " not in line:
                continue
            key = json.loads(re.search(r"key: (\{.*?\}) payload:", line).group(1))
            value = json.loads(line.split(" payload: ", 1)[1])
            assert key == {"type": "0", "data": {"transactionalId": "fmt-txn"}}
            assert value["version"] == "0"
            pid = value["data"]["producerId"] if pid is None else pid
            assert (value["data"]["producerId"], value["data"]["producerEpoch"]) == (pid, 0)
            states.append(value["data"]["transactionStatus"])
    collapsed = [s for i, s in enumerate(states) if i == 0 or s != 1 or states[i - 1] != 1]
    # Empty (InitProducerId), then per transaction Ongoing, Prepare*, Complete*
    # (0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort, 4 CompleteCommit, 5 CompleteAbort)
    assert collapsed == [0] + [s for commit in TXNS for s in ((1, 2, 4) if commit else (1, 3, 5))]

    # .txnindex: one entry per aborted transaction, as Kafka's bytes and Kafka's reader
    aborted = [(STRIDE * i, STRIDE * i + PER_PARTITION, STRIDE * i + STRIDE)
               for i, commit in enumerate(TXNS) if not commit]
    for part in range(PARTITIONS):
        index = data / f"t-{part}" / "00000000000000000000.txnindex"
        assert index.read_bytes() == _txnindex_bytes(pid, aborted)
        lines = [ln for ln in kafka_tool(DUMP, "--files", str(index)).splitlines()
                 if ln.startswith("version:")]
        assert lines == [f"version: 0 producerId: {pid} firstOffset: {f} lastOffset: {la} "
                         f"lastStableOffset: {s}" for f, la, s in aborted]
        assert _segment(data, "t", part).stat().st_size > 0
    assert END == STRIDE * len(TXNS)

    # __consumer_offsets: the offset commit as a transactional batch of the producer, then
    # its COMMIT marker
    log = _segment(data, "__consumer_offsets", partition_for("fmt-group", 50))
    lines = kafka_tool(DUMP, "--files", str(log), "--offsets-decoder").splitlines()
    batches = [ln for ln in lines if ln.startswith("baseOffset:")]
    assert len(batches) == 2
    assert f"producerId: {pid} producerEpoch: 0" in batches[0]
    assert "isTransactional: true isControl: false" in batches[0]
    assert "isTransactional: true isControl: true" in batches[1]
    records = [ln for ln in lines if ln.startswith("| offset:")]
    assert records[0].endswith(
        'key: {"type":"1","data":{"group":"fmt-group","topic":"in","partition":0}} '
        'payload: {"version":"3","data":{"offset":1,"leaderEpoch":0,"metadata":"",'
        f'"commitTimestamp":{_commit_ts(records[0])}}}}}')
    assert records[1].endswith("endTxnMarker: COMMIT coordinatorEpoch: 0")


def _commit_ts(line: str) -> int:
    return int(re.search(r'"commitTimestamp":(\d+)', line).group(1))
