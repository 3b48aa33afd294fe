"""The log of a single-node broker across a SIGTERM and across a kill -9 (issue 28).

* SIGTERM after produce (acks=all, idempotent, a committed transaction) and a consumer
  group's commits, with a consumer still polling when the signal lands: the broker's whole
  log has no ERROR line, no traceback, nothing of a task destroyed with the event loop
  (tests/support/shutdown_log.py), and says it shut down cleanly.
* A restart after kill -9 recovers every partition at Kafka's levels: Kafka (4.3.1,
  LogManager.loadLogs / LogLoader.recoverLog) logs "Recovering N logs ... since no clean
  shutdown file was found" and each unflushed segment's recovery at INFO, and does not
  check the indexes it rebuilds anyway (LogSegment.sanityCheck).  kbroker used to log a
  WARNING per partition (the active segment's preallocated indexes failing its check): the
  number of WARNING lines must not grow with the partition count.
"""

from __future__ import annotations

import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess
from tests.support.shutdown_log import shutdown_problems

DEADLINE_S = 60.0


def _create(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=DEADLINE_S,
                             request_timeout=DEADLINE_S)
    assert fs[name].result(timeout=DEADLINE_S) is None


def _produce(bootstrap: str, topic: str, partitions: int, per_partition: int, **conf: object) -> None:
    errors: list[object] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **conf})
    for i in range(partitions * per_partition):
        p.produce(topic, value=b"v-%d" % i, partition=i % partitions,
                  on_delivery=lambda err, _msg: errors.append(err) if err else None)
        p.poll(0)
    assert p.flush(DEADLINE_S) == 0
    assert errors == []


def _transaction(bootstrap: str, topic: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "shutdown-logs-txn"})
    p.init_transactions(DEADLINE_S)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=b"t-%d" % i, partition=i % 2)
    p.commit_transaction(DEADLINE_S)


def _consume_and_commit(bootstrap: str, topic: str, want: int) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "shutdown-logs", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        got = 0
        deadline = time.monotonic() + DEADLINE_S
        while got < want and time.monotonic() < deadline:
            msgs = c.consume(1000, 0.5)
            got += sum(1 for m in msgs if m.error() is None)
            if msgs:
                c.commit(asynchronous=False)
        assert got >= want
    finally:
        c.close()


def test_a_sigtermed_single_node_broker_logs_no_error_and_says_it_shut_down_cleanly(tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    polling = threading.Event()
    stop = threading.Event()

    def poll_until_stopped() -> None:   # a fetch parked in the broker when SIGTERM lands
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "shutdown-logs-live",
                      "auto.offset.reset": "latest", "fetch.wait.max.ms": 500})
        try:
            c.subscribe(["traffic"])
            while not stop.is_set():
                c.poll(0.2)
                polling.set()
        finally:
            c.close()

    poller = threading.Thread(target=poll_until_stopped, daemon=True)
    try:
        _create(b.bootstrap, "traffic", 2)
        _produce(b.bootstrap, "traffic", 2, 200)
        _produce(b.bootstrap, "traffic", 2, 50, **{"enable.idempotence": True})
        _transaction(b.bootstrap, "traffic")
        _consume_and_commit(b.bootstrap, "traffic", 500)
        poller.start()
        assert polling.wait(DEADLINE_S)
        assert b.stop(timeout_s=DEADLINE_S) == 0
    finally:
        stop.set()
        poller.join(DEADLINE_S)
        b.kill()
    assert shutdown_problems(b.output, 1) == [], b.log_text()[-5000:]


def _warnings(lines: list[str]) -> list[str]:
    return [line for line in lines if "] WARNING " in line]


def test_a_restart_after_kill_9_does_not_log_a_warning_per_partition(tmp_path):
    partitions = 50
    b = BrokerProcess(tmp_path / "data").start()
    try:
        _create(b.bootstrap, "many", partitions)
        _produce(b.bootstrap, "many", partitions, 4)
        b.kill()   # the active segments keep their preallocated indexes: no close trimmed them
        restarted_from = len(b.output)
        b.start()
        after = b.output[restarted_from:]
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "unused"})
        try:   # recovered: every record is there
            ends = [c.get_watermark_offsets(TopicPartition("many", p, OFFSET_BEGINNING), timeout=15,
                                            cached=False)[1] for p in range(partitions)]
        finally:
            c.close()
        assert b.stop() == 0
    finally:
        b.kill()
    assert ends == [4] * partitions
    assert any("recovery after an unclean shutdown" in line for line in after), "".join(after)
    # Kafka logs no WARN per recovered log; a summary or two at most, never one per partition
    warnings = _warnings(after)
    assert len(warnings) <= 2, "".join(warnings)
    assert not [w for w in warnings if "/many-" in w], "".join(warnings)
