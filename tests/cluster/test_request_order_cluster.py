"""A connection's requests take effect in the order they were sent, on a 3-broker cluster
(issue 28): three kbroker processes and a real ZooKeeper, stock confluent-kafka clients.

Replication factor 3 everywhere (data topics, ``__consumer_offsets``, ``__transaction_state``)
with min.insync.replicas 2, so the requests that change something wait in cluster mode:
an OffsetCommit waits for its ``__consumer_offsets`` append to reach the ISR before the
commit is applied, and a transactional Produce whose coordinator is another broker waits for
that broker's verification (KIP-890 part 1) before it is appended.  A client pipelines the
requests that follow on the same connection (librdkafka: up to five Produce requests in
flight, an OffsetFetch right behind an asynchronous OffsetCommit) and counts on them taking
effect after the waiting one, as in Kafka, whose processor mutes the connection until the
response is on its way.  Before the fix (42e5585) kbroker ran them concurrently and only
answered in order: ``committed()`` read an older offset than the commit sent just before it
(and the applied offset could go backwards), and a leader refused a transactional
producer's later batch with OUT_OF_ORDER_SEQUENCE_NUMBER (fatal in librdkafka).

The brokers are chosen: the transactional producer's partition is led by a broker other
than its id's coordinator (only then does the leader wait for another broker before the
append); the consumed partition is led away from the group coordinator too, so that the
coordinator connection's wait is the commit's replication alone.  One cluster for the
module: starting three brokers costs several seconds.
"""

from __future__ import annotations

import asyncio
import random
import threading

import pytest
from confluent_kafka import OFFSET_INVALID, Consumer, KafkaError, Producer, TopicPartition

from kbroker.interbroker.broker_channel import send_once
from tests.cluster.test_cluster_processes import create_topic, leaders
from tests.support.cluster_processes import Cluster, wait_until
from wire.java_hash import partition_for
from wire.messages import FindCoordinatorRequest

pytestmark = pytest.mark.timeout(600)

BROKERS = (1, 2, 3)
INTERNAL_PARTITIONS = 6   # few internal partitions: quicker to create and elect on a busy machine


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("order-cluster"), zookeeper, **{
        "offsets.topic.replication.factor": "3",
        "offsets.topic.num.partitions": str(INTERNAL_PARTITIONS),
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "transaction.state.log.num.partitions": str(INTERNAL_PARTITIONS),
        "default.replication.factor": "3",
        "min.insync.replicas": "2",
    }).start()
    yield c
    c.stop()


def find_coordinator(cluster: Cluster, key: str, key_type: int) -> int:
    """The node FindCoordinator names for ``key`` (key type 0: group, 1: transactional id),
    or -1 while there is none yet (the internal topic is created by the first ask)."""
    for b in cluster.brokers.values():
        if not b.alive():
            continue
        resp = asyncio.run(send_once("127.0.0.1", b.port, FindCoordinatorRequest(
            key=key, key_type=key_type), 3, "order-test"))
        return resp.node_id if resp.error_code == 0 else -1
    return -1


def topic_led_away_from(cluster: Cluster, topic: str, coordinator: int) -> int:
    """Create ``topic`` (1 partition, replicas on all three brokers) led by a broker other
    than ``coordinator``; its leader, once every broker's metadata says so."""
    leader = next(b for b in BROKERS if b != coordinator)
    create_topic(cluster, topic, 1, assignment=[[leader, *(b for b in BROKERS if b != leader)]])
    # the first replica of the assignment is the preferred leader the controller elects
    wait_until(lambda: all(leaders(cluster, topic, b.bootstrap) == {0: leader}
                           for b in cluster.brokers.values()), f"{topic}'s leader {leader} everywhere")
    return leader


def read_all(cluster: Cluster, topic: str, expected: int, isolation: str) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of the records of ``topic`` partition 0 as a consumer with
    ``isolation`` reads them: until ``expected`` have come, then the high watermark reached."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"order-read-{topic}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[tuple[int, bytes, bytes]] = []
    at_eof: list[bool] = [False]

    def done() -> bool:
        for m in c.consume(500, 0.5):
            if m.error() is None:
                got.append((m.offset(), m.key(), m.value()))
                at_eof[0] = False
            elif m.error().code() == KafkaError._PARTITION_EOF:
                at_eof[0] = True
            else:
                raise AssertionError(f"consuming {topic}: {m.error()}")
        # every record there is: an extra (duplicate, aborted) one would be read before EOF
        return len(got) >= expected and at_eof[0]

    try:
        wait_until(done, f"{expected} records of {topic} ({isolation})", timeout_s=120)
    finally:
        c.close()
    return got


# -- OffsetCommit then OffsetFetch on the group coordinator's connection ---------------------

COMMITS = 2000


def test_committed_reads_the_asynchronous_commit_sent_just_before_it_every_time(cluster):
    """confluent-kafka commits asynchronously every 2-5 records and asks ``committed()``
    right after each commit: the OffsetFetch is on the coordinator connection behind the
    OffsetCommit, whose ``__consumer_offsets`` append waits for replication, so it must read
    exactly the offset just committed (before the fix: an older one).  Every commit callback
    succeeds and the last committed offset is the last one sent."""
    group = "order-async-commits"
    coordinator = wait_until(lambda: (c := find_coordinator(cluster, group, 0)) > 0 and c,
                             "the group's coordinator")
    # the coordinator leads the group's __consumer_offsets partition (Kafka's partitionFor);
    # polled: the broker asked may not have the controller's latest metadata yet
    wait_until(lambda: leaders(cluster, "__consumer_offsets").get(partition_for(group, INTERNAL_PARTITIONS))
               == coordinator, f"broker {coordinator} leading the group's __consumer_offsets partition")
    topic = "order-commits"
    leader = topic_led_away_from(cluster, topic, coordinator)
    assert leader != coordinator

    rng = random.Random(28)
    steps = [rng.randint(2, 5) for _ in range(COMMITS)]
    records = sum(steps)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(records):
        p.produce(topic, f"v{i}".encode(), key=f"k{i}".encode(), partition=0)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0

    callbacks: list[tuple[KafkaError | None, list[TopicPartition]]] = []
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
                  "on_commit": lambda err, parts: callbacks.append((err, parts))})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        # the coordinator is known (and its connection up) before the first commit
        first = c.committed([TopicPartition(topic, 0)], timeout=60)
        assert first[0].offset == OFFSET_INVALID and first[0].error is None
        sent: list[int] = []
        since_commit = 0
        next_record = 0
        while len(sent) < COMMITS:
            for m in c.consume(100, 1.0):
                assert m.error() is None, m.error()
                # every record, in order, once
                assert (m.offset(), m.key()) == (next_record, f"k{next_record}".encode())
                next_record += 1
                since_commit += 1
                if len(sent) < COMMITS and since_commit == steps[len(sent)]:
                    since_commit = 0
                    offset = m.offset() + 1
                    c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=True)
                    sent.append(offset)
                    got = c.committed([TopicPartition(topic, 0)], timeout=60)[0]
                    assert (got.offset, got.error) == (offset, None), (
                        f"commit {len(sent)} of {COMMITS}: committed() right after committing "
                        f"offset {offset} returned {got.offset} (error {got.error})")
        # every commit's callback (served by poll), each a success
        wait_until(lambda: c.poll(0.1) is None and len(callbacks) >= len(sent),
                   f"{len(sent)} commit callbacks")
        assert len(callbacks) == len(sent)
        failed = [(err, [(tp.offset, tp.error) for tp in parts]) for err, parts in callbacks
                  if err is not None or any(tp.error is not None for tp in parts)]
        assert failed == []
        assert max(tp.offset for _, parts in callbacks for tp in parts) == sent[-1] == records
        assert c.committed([TopicPartition(topic, 0)], timeout=60)[0].offset == sent[-1]
    finally:
        c.close()
    # another client of the group reads the same (the coordinator's applied state)
    other = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        assert other.committed([TopicPartition(topic, 0)], timeout=60)[0].offset == records
    finally:
        other.close()


# -- Produce requests pipelined five at a time -------------------------------------------------

RECORDS = 3000
PER_TRANSACTION = 200


class Reports:
    """A producer's delivery reports and error callbacks (served by poll/flush on this
    thread; a lock all the same, as librdkafka documents no thread for them)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.delivered: dict[bytes, int] = {}
        self.failed: list[str] = []
        self.errors: list[str] = []

    def on_delivery(self, err: KafkaError | None, msg) -> None:
        with self.lock:
            if err is not None:
                self.failed.append(f"{msg.key()!r}: {err}")
            else:
                self.delivered[msg.key()] = msg.offset()

    def on_error(self, err: KafkaError) -> None:
        with self.lock:
            self.errors.append(f"{err} (fatal={err.fatal()})")


def single_record_requests(cluster: Cluster, reports: Reports, **extra: object) -> Producer:
    """A producer that sends each record in a Produce request of its own, five in flight."""
    return Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0,
                     "batch.num.messages": 1, "max.in.flight.requests.per.connection": 5,
                     "enable.idempotence": True, "error_cb": reports.on_error, **extra})


def test_a_transactional_producer_with_five_single_record_requests_in_flight_to_a_leader_away_from_its_coordinator_commits_every_record(
        cluster):
    """Each transaction's first Produce to the partition waits for the coordinator (another
    broker) to verify it; the four behind it on the connection carry the next sequence
    numbers and must be appended after it.  Before the fix each of them waited for a
    verification of its own and was appended when its answer came back, so a later one
    could come first: the leader refused it (e.g. base sequence 5 before 0),
    OUT_OF_ORDER_SEQUENCE_NUMBER, fatal.  That is a race each transaction runs once (on
    42e5585 it was lost in the first, second or third): fifteen transactions of 200
    records.  No error; read_committed reads every record once, in order, each at the
    offset its delivery report gave: contiguous but for one commit marker per transaction."""
    txn_id = "order-txn"
    coordinator = wait_until(lambda: (c := find_coordinator(cluster, txn_id, 1)) > 0 and c,
                             "the transactional id's coordinator")
    # the coordinator leads the id's __transaction_state partition (Kafka's partitionFor)
    wait_until(lambda: leaders(cluster, "__transaction_state").get(partition_for(txn_id, INTERNAL_PARTITIONS))
               == coordinator, f"broker {coordinator} leading the id's __transaction_state partition")
    topic = "order-txn-out"
    leader = topic_led_away_from(cluster, topic, coordinator)
    assert leader != coordinator

    reports = Reports()
    p = single_record_requests(cluster, reports, **{"transactional.id": txn_id,
                                                    "transaction.timeout.ms": 120000})
    p.init_transactions(120)
    for t in range(RECORDS // PER_TRANSACTION):
        p.begin_transaction()
        for i in range(t * PER_TRANSACTION, (t + 1) * PER_TRANSACTION):
            p.produce(topic, f"v{i}".encode(), key=f"k{i}".encode(), partition=0,
                      on_delivery=reports.on_delivery)
            p.poll(0)
        p.commit_transaction(120)   # flushes: every delivery report of the transaction is in
    assert p.flush(60) == 0
    assert (reports.errors, reports.failed) == ([], [])
    # transaction t's records follow t commit markers (one offset each)
    expected = [(i + i // PER_TRANSACTION, f"k{i}".encode(), f"v{i}".encode()) for i in range(RECORDS)]
    assert {k: o for o, k, _ in expected} == reports.delivered
    assert read_all(cluster, topic, RECORDS, "read_committed") == expected


def test_an_idempotent_producer_with_five_single_record_requests_in_flight_writes_every_record_once_in_order(
        cluster):
    """Five acks=all Produce requests in flight, each waiting for the ISR after its append:
    the next ones are appended meanwhile, in order (their answers still leave in order).
    No error; every record once, in order, at the offset of its delivery report.

    The one wait kbroker lets later requests pass (``took_effect``, kbroker/server/connection.py):
    this guards that exception to the order of effects.  It passes before the fix too
    (42e5585 appended a non-transactional Produce before anything awaited): an idempotent
    producer's connection carries no request that waits before taking effect."""
    topic = "order-idempotent"
    topic_led_away_from(cluster, topic, 1)   # any leader: the followers are the other two
    reports = Reports()
    p = single_record_requests(cluster, reports)
    for i in range(RECORDS):
        p.produce(topic, f"v{i}".encode(), key=f"k{i}".encode(), partition=0, on_delivery=reports.on_delivery)
        p.poll(0)
    assert p.flush(120) == 0
    assert (reports.errors, reports.failed) == ([], [])
    expected = [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(RECORDS)]
    assert {k: o for o, k, _ in expected} == reports.delivered
    assert read_all(cluster, topic, RECORDS, "read_uncommitted") == expected
