"""Replication between three kbroker processes and a real ZooKeeper: followers fetch, the
high watermark, ISR shrink and rejoin, acks=all and min.insync.replicas, leader failover.

One cluster for the module (replica.lag.time.max.ms=3000 so a dead follower leaves the ISR
in seconds); one topic ``rep`` (1 partition, replication factor 3, min.insync.replicas=2).
The tests run in file order and each leaves all three brokers up with the ISR whole again.
Every wait is a condition with a generous deadline.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.interbroker.broker_channel import send_once
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.replication_checker import compare_replicas
from wire.error_codes import ErrorCode
from wire.messages import ProduceRequest
from wire.record_batch import build_batch

pytestmark = pytest.mark.timeout(300)

TOPIC = "rep"
LAG_MS = 3000


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("replication"), zookeeper,
                **{"replica.lag.time.max.ms": str(LAG_MS), "default.replication.factor": "3"}).start()
    client = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in client.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})],
                                  request_timeout=60, operation_timeout=60).values():
        f.result(60)
    wait_until(lambda: len(isr(c)) == 3, "the ISR of rep-0 to hold all three brokers")
    yield c
    # the module's producer goes with its cluster: kept, it would print connection errors to
    # the end of the pytest run (after pytest's summary, where CI's tail shows them)
    p = _producers.pop(id(c), None)
    if p is not None:
        p.purge()
        p.flush(0)
        del p
    c.stop()


def partition_info(cluster: Cluster):
    md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(TOPIC, timeout=30)
    return md.topics[TOPIC].partitions[0]


def isr(cluster: Cluster) -> list[int]:
    return sorted(partition_info(cluster).isrs)


def leader(cluster: Cluster) -> int:
    return partition_info(cluster).leader


_producers: dict[int, Producer] = {}
WRITTEN: list[str] = []   # every value acknowledged so far, in offset order


def producer(cluster: Cluster) -> Producer:
    """One idempotent producer for the whole module (its producer state must survive each
    failover).  One, too, because cluster mode does not yet allocate producer ids from
    ZooKeeper's /latest_producer_id_block: two brokers can hand out the same id."""
    if id(cluster) not in _producers:
        _producers[id(cluster)] = Producer({
            "bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
            "message.timeout.ms": 60000, "topic.metadata.refresh.interval.ms": 1000})
    return _producers[id(cluster)]


def produce_all(cluster: Cluster, values: list[str]) -> dict[str, int]:
    """Produce with acks=all; every record must be acknowledged: value -> offset."""
    p = producer(cluster)
    acked: dict[str, int] = {}
    errors: list[str] = []

    def report(err, msg) -> None:
        if err is not None:
            errors.append(f"{msg.value()!r}: {err}")
        else:
            acked[msg.value().decode()] = msg.offset()
    for v in values:
        p.produce(TOPIC, value=v.encode(), on_delivery=report)
        p.poll(0)
    assert p.flush(90) == 0
    assert not errors, errors[:5]
    assert len(acked) == len(values)
    WRITTEN.extend(sorted(acked, key=acked.__getitem__))
    return acked


def read_all(cluster: Cluster) -> list[tuple[int, str]]:
    """Everything below the HW, from the beginning: (offset, value) in order."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "rb", "enable.auto.commit": False,
                  "topic.metadata.refresh.interval.ms": 1000})
    try:
        end = wait_until(lambda: c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)[1],
                         "the high watermark")
        c.assign([TopicPartition(TOPIC, 0, 0)])
        got: list[tuple[int, str]] = []
        deadline = time.monotonic() + 90
        while not got or got[-1][0] < end - 1:
            assert time.monotonic() < deadline, f"read {len(got)} records of offsets 0..{end - 1} in 90 s"
            for m in c.consume(500, 1.0):
                if m.error() is None:
                    got.append((m.offset(), m.value().decode()))
        return got
    finally:
        c.close()


def checkpoint_hw(cluster: Cluster, broker_id: int) -> int | None:
    path = Path(cluster.brokers[broker_id].data_dir) / "replication-offset-checkpoint"
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        topic, part, offset = line.split()
        if topic == TOPIC and part == "0":
            return int(offset)
    return None


def assert_replicas_identical(cluster: Cluster, hw: int) -> None:
    dirs = {b: Path(p.data_dir) / f"{TOPIC}-0" for b, p in cluster.brokers.items()}
    report = compare_replicas(dirs, hw)
    assert report.ok, report.problems


def produce_raw(cluster: Cluster, broker_id: int, acks: int) -> int:
    """One Produce v9 to ``broker_id``; the partition's error code."""
    b = cluster.brokers[broker_id]
    batch = bytearray(build_batch([(None, b"raw", [], 0)]))
    req = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=bytes(batch))])])
    resp = asyncio.run(send_once("127.0.0.1", b.port, req, 9, "test"))
    return resp.responses[0].partition_responses[0].error_code


def restart(cluster: Cluster, broker_id: int) -> None:
    cluster.brokers[broker_id].start(timeout_s=90)


# -- the tests, in order --------------------------------------------------------------------

def test_acks_all_records_reach_every_replica_byte_for_byte_and_the_hw_is_checkpointed(cluster):
    acked = produce_all(cluster, [f"a{i}" for i in range(200)])
    assert sorted(acked.values()) == list(range(200))
    # every broker learns HW 200 (followers from the next fetch answer) and checkpoints it
    for b in cluster.brokers:
        wait_until(lambda b=b: checkpoint_hw(cluster, b) == 200, f"broker {b}'s replication-offset-checkpoint")
    assert_replicas_identical(cluster, 200)


def test_a_killed_follower_leaves_the_isr_acks_all_goes_on_and_it_rejoins_after_a_restart(cluster):
    lead = leader(cluster)
    follower = next(b for b in cluster.brokers if b != lead)
    cluster.brokers[follower].kill()
    before = len(WRITTEN)
    acked = produce_all(cluster, [f"b{i}" for i in range(50)])   # waits out the ISR shrink
    assert sorted(acked.values()) == list(range(before, before + 50))
    wait_until(lambda: follower not in isr(cluster), f"broker {follower} to leave the ISR")
    restart(cluster, follower)
    wait_until(lambda: isr(cluster) == [1, 2, 3], f"broker {follower} to rejoin the ISR")
    assert_replicas_identical(cluster, len(WRITTEN))


def test_a_killed_leader_hands_over_to_a_replica_holding_every_acked_record(cluster):
    old = leader(cluster)
    cluster.brokers[old].kill()
    wait_until(lambda: leader(cluster) not in (old, -1), "a new leader")
    before = len(WRITTEN)
    acked = produce_all(cluster, [f"c{i}" for i in range(50)])
    assert min(acked.values()) == before
    got = read_all(cluster)
    assert [o for o, _ in got] == list(range(len(got)))
    assert [v for _, v in got] == WRITTEN   # every acked record, each once, in order
    restart(cluster, old)
    wait_until(lambda: isr(cluster) == [1, 2, 3], f"broker {old} to rejoin the ISR")
    assert_replicas_identical(cluster, len(WRITTEN))


def test_two_of_three_replicas_down_refuse_acks_all_with_not_enough_replicas(cluster):
    lead = leader(cluster)
    down = [b for b in cluster.brokers if b != lead]
    for b in down:
        cluster.brokers[b].kill()
    wait_until(lambda: isr(cluster) == [lead], "the ISR to shrink to the leader")
    assert produce_raw(cluster, lead, -1) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce_raw(cluster, lead, 1) == ErrorCode.NONE     # acks=1 is still taken
    for b in down:
        restart(cluster, b)
    wait_until(lambda: isr(cluster) == [1, 2, 3], "both to rejoin the ISR")
    assert produce_raw(cluster, lead, -1) == ErrorCode.NONE
