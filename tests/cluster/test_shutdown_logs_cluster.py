"""A SIGTERM'd cluster broker shuts down without an error in its log, in either role
(issue 28): a broker that leads and follows partitions of a replicated topic, after
acks=all, idempotent and transactional produces and a group's commits, with a consumer
still polling when the signal lands; then the controller.

The controller's stop used to log "Task was destroyed but it is pending!" for a link of
its ``BrokerChannel`` and "RuntimeError: Event loop is closed" after "shut down cleanly"
(a link closed as its response arrived lost the cancellation in Python 3.11's
``wait_for``, tests/broker/test_shutdown_tasks.py).  The whole output of each stopped
process is checked (tests/support/shutdown_log.py): no ERROR line, no traceback, no task
destroyed pending or left for kbroker's last-resort sweep, and the "shut down cleanly" line.
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.cluster_processes import Cluster, wait_until
from tests.support.shutdown_log import shutdown_problems

pytestmark = pytest.mark.timeout(600)

TOPIC = "shutdown-logs"
PARTITIONS = 6
DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("shutdown-logs"), zookeeper).start()
    client = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in client.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], request_timeout=DEADLINE_S,
                                  operation_timeout=DEADLINE_S).values():
        f.result(DEADLINE_S)
    wait_until(lambda: _leaders(c) and min(_leaders(c).values()) >= 0, "every partition led")
    yield c
    c.stop()


def _leaders(c: Cluster) -> dict[int, int]:
    md = AdminClient({"bootstrap.servers": c.bootstrap}).list_topics(TOPIC, timeout=30)
    t = md.topics[TOPIC]
    return {} if t.error is not None else {p: info.leader for p, info in t.partitions.items()}


def _traffic(c: Cluster) -> None:
    """acks=all and idempotent produces, a committed transaction, a group's commits."""
    errors: list[object] = []
    for conf in ({"acks": "all"}, {"enable.idempotence": True}):
        p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 5, **conf})
        for i in range(600):
            p.produce(TOPIC, value=b"v-%d" % i, partition=i % PARTITIONS,
                      on_delivery=lambda err, _m: errors.append(err) if err else None)
            p.poll(0)
        assert p.flush(DEADLINE_S) == 0
    assert errors == []
    t = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "shutdown-logs-txn"})
    t.init_transactions(DEADLINE_S)
    t.begin_transaction()
    for i in range(PARTITIONS * 2):
        t.produce(TOPIC, value=b"t-%d" % i, partition=i % PARTITIONS)
    t.commit_transaction(DEADLINE_S)
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "shutdown-logs",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([TOPIC])
        got = 0
        deadline = time.monotonic() + DEADLINE_S
        while got < 1200 and time.monotonic() < deadline:
            msgs = consumer.consume(1000, 0.5)
            got += sum(1 for m in msgs if m.error() is None)
            if msgs:
                consumer.commit(asynchronous=False)
        assert got >= 1200
    finally:
        consumer.close()


class _Poller:
    """A consumer polling through the stop: fetches parked in the broker when it lands."""

    def __init__(self, c: Cluster) -> None:
        self.bootstrap = c.bootstrap
        self.polling = threading.Event()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "shutdown-logs-live",
                             "auto.offset.reset": "latest", "fetch.wait.max.ms": 500})
        try:
            consumer.subscribe([TOPIC])
            while not self.done.is_set():
                consumer.poll(0.2)
                self.polling.set()
        finally:
            consumer.close()

    def __enter__(self) -> _Poller:
        self.thread.start()
        assert self.polling.wait(DEADLINE_S)
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(DEADLINE_S)


def _stop_and_check(c: Cluster, broker_id: int) -> None:
    b = c.brokers[broker_id]
    assert b.stop(timeout_s=120) == 0
    problems = shutdown_problems(b.output, broker_id)
    assert problems == [], "\n".join(problems) + "\n---\n" + b.log_text()[-6000:]


def test_a_sigtermed_broker_that_leads_and_follows_partitions_logs_no_error_and_shuts_down_cleanly(cluster):
    controller, _ = wait_until(cluster.controller, "a controller")
    victim = next(b for b in sorted(_leaders(cluster).values()) if b != controller)  # leads some
    _traffic(cluster)
    with _Poller(cluster):
        _stop_and_check(cluster, victim)
    cluster.brokers[victim].start(timeout_s=120)
    wait_until(lambda: cluster.registered() == {1, 2, 3}, "the broker back")
    cluster.wait_serving()


def test_the_sigtermed_controller_logs_no_error_and_shuts_down_cleanly(cluster):
    controller, _ = wait_until(cluster.controller, "a controller")
    _traffic(cluster)
    with _Poller(cluster):
        _stop_and_check(cluster, controller)
    wait_until(lambda: cluster.controller()[0] != controller, "another controller")
