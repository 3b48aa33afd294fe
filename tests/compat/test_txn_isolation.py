"""Transactions as the partition leader serves them, through a real broker process and
confluent-kafka: read_committed sees exactly the committed records (the LSO, the aborted
list from the .txnindex), read_uncommitted everything, the watermark a read_committed
consumer sees is the LSO while a transaction is open, and the .txnindex files hold
Kafka's entries, rebuilt identical after a kill -9."""

from __future__ import annotations

import glob
import os
import struct
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "txn-iso"


def _consume_all(bootstrap: str, isolation: str, partitions: int = 2, deadline_s: float = 60.0):
    """(partition, offset, value) of every record up to each partition's end as seen at
    ``isolation``."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-" + isolation, "isolation.level": isolation,
                  "enable.partition.eof": True, "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
        got, eof = [], set()
        deadline = time.monotonic() + deadline_s
        while len(eof) < partitions and time.monotonic() < deadline:
            m = c.poll(1)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                continue
            got.append((m.partition(), m.offset(), m.value()))
        assert len(eof) == partitions, "did not reach the end of every partition"
        return got
    finally:
        c.close()


def _txnindex_entries(data_dir: str, partition: int) -> list[tuple[int, int, int, int, int]]:
    out = []
    for path in sorted(glob.glob(os.path.join(data_dir, f"{TOPIC}-{partition}", "*.txnindex"))):
        with open(path, "rb") as f:
            data = f.read()
        assert len(data) % 34 == 0
        out += [struct.unpack_from(">hqqqq", data, i) for i in range(0, len(data), 34)]
    return out


def test_read_committed_sees_exactly_the_committed_records_and_the_txnindex_is_kafkas(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(60)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "iso-1"})
    p.init_transactions(60)
    committed, aborted = [], []
    for i in range(8):
        p.begin_transaction()
        values = [f"{i}-{j}".encode() for j in range(6)]
        for j, v in enumerate(values):
            p.produce(TOPIC, value=v, partition=j % 2)
        if i % 3 == 1:
            p.flush(60)   # sent, then aborted: the records are in the log
            p.abort_transaction(60)
            aborted += values
        else:
            p.commit_transaction(60)
            committed += values
    # one transaction left open: the LSO of partition 0 stays at its first record
    p.begin_transaction()
    p.produce(TOPIC, value=b"open", partition=0)
    p.flush(60)

    rc = _consume_all(broker.bootstrap, "read_committed")
    assert sorted(v for _, _, v in rc) == sorted(committed)
    for part in (0, 1):   # in order per partition
        assert [v for q, _, v in rc if q == part] == [v for v in committed if int(v.split(b"-")[1]) % 2 == part]
    ru = _consume_all(broker.bootstrap, "read_uncommitted")
    assert sorted(v for _, _, v in ru) == sorted(committed + aborted + [b"open"])

    # ListOffsets latest: the LSO for read_committed (the open record), the HW otherwise
    open_offset = next(o for q, o, v in ru if v == b"open")
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "wm", "isolation.level": "read_committed"})
    assert c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30) == (0, open_offset)
    c.close()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "wm", "isolation.level": "read_uncommitted"})
    assert c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30) == (0, open_offset + 1)
    c.close()

    # .txnindex: one entry per aborted transaction and partition: version 0, producer id,
    # its first offset, its marker's offset (right after its last record: one producer),
    # the LSO after the marker (the offset after it: no other transaction was open)
    expected = {0: [], 1: []}
    for part in (0, 1):
        offsets = {v: o for q, o, v in ru if q == part}
        for i in range(8):
            if i % 3 != 1:
                continue
            mine = sorted(offsets[f"{i}-{j}".encode()] for j in range(6) if j % 2 == part)
            expected[part].append((mine[0], mine[-1] + 1, mine[-1] + 2))
    pid = None
    for part in (0, 1):
        entries = _txnindex_entries(str(broker.data_dir), part)
        assert [(e[0]) for e in entries] == [0] * len(expected[part])
        pid = entries[0][1] if pid is None else pid
        assert [(e[1], e[2], e[3], e[4]) for e in entries] == [(pid, *x) for x in expected[part]]
    before = {q: _txnindex_entries(str(broker.data_dir), q) for q in (0, 1)}

    p.commit_transaction(60)
    rc_before_kill = _consume_all(broker.bootstrap, "read_committed")
    broker.restart(clean=False)   # kill -9: unflushed segments are recovered, .txnindex rebuilt
    assert {q: _txnindex_entries(str(broker.data_dir), q) for q in (0, 1)} == before
    assert _consume_all(broker.bootstrap, "read_committed") == rc_before_kill
