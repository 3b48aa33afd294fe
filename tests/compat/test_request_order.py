"""A connection's requests take effect in the order they were sent, on a single node whose
waits are made long on purpose (issue 28; the cluster's own tests are in
tests/cluster/).

Kafka reads a connection's next request only once the previous one's response is on its
way, so clients rely on order: an asynchronous commit followed by ``committed()`` on the
same connection must see that commit, and an idempotent or transactional producer with
five requests in flight must see its batches appended in the order it sent them.  On a
single node the waits that let a later request overtake an earlier one are short, so the
broker is started with two test seams (kbroker/coordinators/group_service.py,
kbroker/coordinators/txn_verification.py): ``__consumer_offsets`` appends whose outcome comes back
after 0, 1/2 or 1 times a delay, out of append order as replication's do; and a
transaction's first Produce to a partition that waits for its verification as if its
coordinator were on another broker, while the later ones do not.  Everything else is the
real broker process and the stock client.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess

SLOW_APPEND_MS = 40
SLOW_VERIFY_MS = 300


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert admin.create_topics([NewTopic(topic, partitions, 1)],
                               operation_timeout=30)[topic].result(60) is None


@pytest.fixture
def slow_broker(tmp_path, monkeypatch):
    monkeypatch.setenv("KBROKER_TEST_SLOW_OFFSETS_APPEND_MS", str(SLOW_APPEND_MS))
    monkeypatch.setenv("KBROKER_TEST_SLOW_TXN_VERIFY_MS", str(SLOW_VERIFY_MS))
    b = BrokerProcess(tmp_path / "data").start()
    yield b
    assert b.alive()
    b.stop()
    assert "Traceback" not in b.log_text(), b.log_text()


def test_committed_after_asynchronous_commits_is_always_the_last_commit_sent_on_the_connection(slow_broker):
    _create(slow_broker.bootstrap, "orders", 1)
    acknowledged: list[int] = []
    failures: list[str] = []

    def on_commit(err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        if err is not None or any(p.error is not None for p in partitions):
            failures.append(str(err or [p.error for p in partitions]))
        else:
            acknowledged.extend(p.offset for p in partitions)

    consumer = Consumer({"bootstrap.servers": slow_broker.bootstrap, "group.id": "order-group",
                         "enable.auto.commit": False, "on_commit": on_commit})
    tp = TopicPartition("orders", 0)
    try:
        # a first commit, waited for: until the coordinator is known, librdkafka holds
        # commits in its own queue and may send an OffsetFetch first
        consumer.commit(offsets=[TopicPartition("orders", 0, 0)], asynchronous=False)
        acknowledged.clear()
        offset = 0
        for burst in range(150):
            # three commits pipelined on the coordinator connection, then an OffsetFetch
            # behind them: it must see the last one
            for _ in range(3):
                offset += 1 + burst % 4
                consumer.commit(offsets=[TopicPartition("orders", 0, offset)], asynchronous=True)
            [got] = consumer.committed([tp], timeout=30)
            assert got.offset == offset, f"burst {burst}: committed {got.offset}, last commit {offset}"
        deadline = time.monotonic() + 60
        while offset not in acknowledged and not failures and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert failures == []
        assert acknowledged == sorted(acknowledged) and acknowledged[-1] == offset
    finally:
        consumer.close()


def test_a_transactional_producer_with_five_requests_in_flight_sees_no_sequence_error_while_verification_is_slow(
        slow_broker):
    _create(slow_broker.bootstrap, "ledger", 2)
    errors: list[str] = []
    delivered: dict[tuple[int, int], bytes] = {}   # (partition, offset) -> value

    def on_delivery(err: KafkaError | None, msg) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            delivered[(msg.partition(), msg.offset())] = msg.value()

    producer = Producer({"bootstrap.servers": slow_broker.bootstrap, "transactional.id": "ledger-writer",
                         "batch.num.messages": 1, "linger.ms": 0,
                         "max.in.flight.requests.per.connection": 5, "acks": "all",
                         "error_cb": lambda e: errors.append(f"error_cb: {e}")})
    producer.init_transactions(60)
    sent: list[bytes] = []
    for txn in range(6):
        producer.begin_transaction()
        for i in range(250):
            value = f"{txn}-{i}".encode()
            producer.produce("ledger", value=value, key=str(i).encode(), partition=i % 2,
                             on_delivery=on_delivery)
            sent.append(value)
            producer.poll(0)
        producer.commit_transaction(60)
        assert errors == [], errors
    producer.flush(30)
    assert errors == [] and len(delivered) == len(sent) == 1500

    consumer = Consumer({"bootstrap.servers": slow_broker.bootstrap, "group.id": "ledger-reader",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("ledger", 0, 0), TopicPartition("ledger", 1, 0)])
    read: dict[tuple[int, int], bytes] = {}
    try:
        idle = 0
        while len(read) < len(sent) and idle < 300:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                idle += 1
                continue
            read[(msg.partition(), msg.offset())] = msg.value()
    finally:
        consumer.close()
    assert read == delivered
    for partition in (0, 1):   # each partition holds its records in the order they were sent
        values = [read[k] for k in sorted(k for k in read if k[0] == partition)]
        assert values == [v for i, v in enumerate(sent) if i % 250 % 2 == partition]
