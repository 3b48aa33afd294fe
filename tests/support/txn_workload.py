"""The transactional workload the client compat tests share, and how its results are read.

Scenario (``TXNS``): six transactions of one producer, committed or aborted in the order
C A C C A C; each writes ``PER_PARTITION`` records to every partition of a 3-partition topic
and is flushed before it ends (an abort must not purge unsent records, so every record is
in the log).  Each partition then holds, per transaction i, its records at offsets
``STRIDE*i .. STRIDE*i + PER_PARTITION - 1`` and its marker at ``STRIDE*i + PER_PARTITION``,
so the log end offset is ``STRIDE * len(TXNS)``: the exact offsets a read_uncommitted
consumer sees (with the marker gaps), and the exact subset read_committed sees.

``read_all`` reads a topic from offset 0 with confluent-kafka until each partition reports
end-of-partition at ``end`` (the LSO for read_committed, the high watermark otherwise), so
it never depends on timing: a marker still on its way only delays the end.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3
PER_PARTITION = 2
STRIDE = PER_PARTITION + 1  # records + the marker
TXNS = [True, False, True, True, False, True]  # commit?
END = STRIDE * len(TXNS)


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(60)


def records_of(prefix: str, txn: int, partition: int) -> list[tuple[bytes, bytes]]:
    """The (key, value) pairs transaction ``txn`` writes to ``partition``."""
    return [(f"{prefix}-t{txn}-p{partition}-{j}".encode(), f"value-{txn}-{partition}-{j}".encode())
            for j in range(PER_PARTITION)]


def confluent_transactions(bootstrap: str, topic: str, transactional_id: str, prefix: str) -> None:
    """The scenario's transactions (TXNS: commit or abort, each writing ``records_of`` to
    every partition) with one confluent-kafka transactional producer."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    p.init_transactions(60)
    for i, commit in enumerate(TXNS):
        p.begin_transaction()
        for part in range(PARTITIONS):
            for k, v in records_of(prefix, i, part):
                p.produce(topic, key=k, value=v, partition=part)
        assert p.flush(60) == 0
        if commit:
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)


def expected(prefix: str, committed_only: bool) -> list[tuple[int, int, bytes, bytes]]:
    """(partition, offset, key, value) in partition then offset order."""
    out = []
    for p in range(PARTITIONS):
        for i, commit in enumerate(TXNS):
            if committed_only and not commit:
                continue
            for j, (k, v) in enumerate(records_of(prefix, i, p)):
                out.append((p, STRIDE * i + j, k, v))
    return out


def read_all(bootstrap: str, topic: str, isolation: str, end: int | dict[int, int] = END,
             partitions: int = PARTITIONS, timeout_s: float = 120.0
             ) -> list[tuple[int, int, bytes, bytes]]:
    """Every record a consumer with ``isolation.level=isolation`` gets from offset 0 until
    each partition is at its end offset ``end`` (one for all, or per partition); sorted by
    (partition, offset)."""
    ends = end if isinstance(end, dict) else {p: end for p in range(partitions)}
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{isolation}-{time.time()}",
                  "isolation.level": isolation, "enable.partition.eof": True,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[tuple[int, int, bytes, bytes]] = []
    done: set[int] = set()
    deadline = time.time() + timeout_s
    try:
        while len(done) < partitions and time.time() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    if m.offset() >= ends[m.partition()]:
                        done.add(m.partition())
                    continue
                raise AssertionError(f"consumer error: {m.error()}")
            got.append((m.partition(), m.offset(), m.key(), m.value()))
    finally:
        c.close()
    assert len(done) == partitions, f"only partitions {sorted(done)} reached their end {ends}"
    return sorted(got)


def check_scenario(bootstrap: str, topic: str, prefix: str) -> None:
    """read_committed sees exactly the committed records, read_uncommitted all of them,
    both at their exact offsets (markers leave gaps, never records)."""
    assert read_all(bootstrap, topic, "read_committed") == expected(prefix, committed_only=True)
    assert read_all(bootstrap, topic, "read_uncommitted") == expected(prefix, committed_only=False)
