"""Issue 14's acceptance scenarios: three kbroker processes and a real ZooKeeper, a topic with
replication factor 3 and min.insync.replicas=2, an idempotent acks=all confluent-kafka load
(tests/support/load_client.py) recording every acknowledgement, a fault, and then the
checkers (tests/support/replication_checker.py): no acknowledged record lost, none
duplicated or misplaced, offsets contiguous, every replica byte-identical below the high
watermark once quiet.

Each test gets a fresh ZooKeeper and cluster (the faults leave state behind).  Sessions of
6 s (4 s where a test kills 20 times) and replica.lag.time.max.ms=3000 keep failover to
seconds; every wait is a condition with a deadline, never a sleep deciding an outcome.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from confluent_kafka import KafkaError, Producer

from tests.support import faults
from tests.support.cluster_processes import Cluster, wait_until
from tests.support.load_client import LoadProcess
from tests.support.replication_harness import (
    REPLICATION_OVERRIDES,
    create_topic,
    partition_state,
    states,
    verify,
    wait_for_acks,
    wait_for_full_isr,
    wait_for_leader,
    wait_until_registered,
    wait_until_unregistered,
)
from tests.support.zookeeper_process import JARS, ZooKeeperProcess

pytestmark = pytest.mark.timeout(420)


def start_cluster(tmp_path, **overrides: str):
    if not any(JARS.glob("zookeeper-*.jar")):
        pytest.fail("ZooKeeper jars missing: run `make zookeeper-jars` (make test does)")
    zk = ZooKeeperProcess(tmp_path / "zookeeper").start()
    cluster = Cluster(tmp_path / "cluster", zk, **{**REPLICATION_OVERRIDES, **overrides})
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        zk.stop()
        raise
    return zk, cluster


@pytest.fixture
def cluster(tmp_path):
    zk, c = start_cluster(tmp_path)
    yield c
    for b in c.brokers.values():
        faults.resume(b)
    c.stop()
    zk.stop()


@pytest.fixture
def fast_cluster(tmp_path):
    """4 s sessions: a killed broker's session ends 2 s sooner, 20 times over."""
    zk, c = start_cluster(tmp_path, **{"zookeeper.session.timeout.ms": "4000"})
    yield c
    c.stop()
    zk.stop()


def start_load(tmp_path, cluster: Cluster, topic: str, partitions: int, name: str = "L",
               **options: object) -> LoadProcess:
    load = LoadProcess(tmp_path / f"{name}.jsonl", cluster.bootstrap, topic, partitions, name=name,
                       **options).start()
    wait_for_acks(load, 50, f"the load on {topic} to get going")
    return load


def assert_no_failed_deliveries(done: dict, load: LoadProcess) -> None:
    failed = [e for e in load.errors() if e["t"] == "err" or e.get("fatal")]
    assert done["failed"] == 0 and not failed, failed[:10]
    assert done["acked"] == done["sent"], done


# -- kill -9 ----------------------------------------------------------------------------------


@pytest.mark.timeout(900)  # 20 cycles of 5-21 s each measured here under load; the bound is for a stuck one
def test_twenty_leader_kills_and_a_controller_kill_lose_duplicate_and_misplace_nothing(fast_cluster, tmp_path,
                                                                                      record_property):
    cluster, topic, partitions = fast_cluster, "kill9", 3
    create_topic(cluster, topic, partitions)
    load = start_load(tmp_path, cluster, topic, partitions)
    try:
        for cycle in range(20):
            started = time.monotonic()
            p = cycle % partitions
            before = partition_state(cluster, topic, p)
            victim = before["leader"]
            acked = load.acked()
            faults.kill9(cluster.brokers[victim])
            wait_for_leader(cluster, topic, p, not_on=victim, above_epoch=before["leader_epoch"])
            wait_for_acks(load, acked + 20, f"cycle {cycle}: acks from the new leader of {topic}-{p}")
            faults.restart(cluster.brokers[victim])
            wait_for_full_isr(cluster, topic, partitions)
            print(f"cycle {cycle}: killed leader {victim} of {topic}-{p}, back in every ISR after "
                  f"{time.monotonic() - started:.1f} s")

        controller, epoch = cluster.controller()
        faults.kill9(cluster.brokers[controller])
        wait_until(lambda: (c := cluster.controller())[0] != controller and c[1] > epoch, "a new controller")
        acked = load.acked()
        wait_for_acks(load, acked + 20, "acks after the controller's death")
        faults.restart(cluster.brokers[controller])
        wait_for_full_isr(cluster, topic, partitions)
        done = load.stop()
    finally:
        load.kill()
    assert_no_failed_deliveries(done, load)
    report, _ = verify(cluster, topic, partitions, [load.out], tmp_path)
    record_property("acked", report.acked)
    print(f"kill -9 x 20 + controller: {report.summary()}")


# -- SIGSTOP past the session: the zombie leader ------------------------------------------------

# replica.fetch.wait.max.ms (kbroker's and Kafka's default): the longest a leader keeps a
# follower's fetch parked before answering it
REPLICA_FETCH_WAIT_S = 0.5


def produce_acks_1(bootstrap: str, topic: str, partition: int, values: list[bytes]) -> list[int]:
    """``values`` to ``partition`` with acks=1 and no retries (none duplicated): the offsets
    its leader gave them, acknowledged before any follower had them."""
    offsets: list[int] = []

    def delivered(err, msg) -> None:
        assert err is None, err
        offsets.append(msg.offset())

    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "retries": 0, "enable.idempotence": False,
                  "linger.ms": 0, "message.timeout.ms": 10000})
    for v in values:
        p.produce(topic, value=v, partition=partition, on_delivery=delivered)
    assert p.flush(15) == 0 and len(offsets) == len(values), offsets
    return offsets


def test_a_leader_frozen_past_its_session_acknowledges_nothing_after_and_truncates_its_tail(cluster, tmp_path):
    topic, partitions = "zombie", 3
    create_topic(cluster, topic, partitions)
    load = start_load(tmp_path, cluster, topic, partitions)
    zombie_values = [b"zombie-only-%d" % i for i in range(5)]
    try:
        before = partition_state(cluster, topic, 0)
        zombie = before["leader"]
        followers = [cluster.brokers[b] for b in cluster.brokers if b != zombie]
        # Give the leader a tail no follower has, as Kafka's leaders may hold when they stop:
        # with the followers frozen, a fetch they had parked at the leader is answered within
        # replica.fetch.wait.max.ms and they cannot send another, so records acknowledged
        # (acks=1) after that are the leader's alone; it freezes before the followers thaw.
        # Frozen for ~1 s, well inside replica.lag.time.max.ms (3 s) and their sessions (6 s),
        # the followers stay in the ISR and one of them is elected.
        for f in followers:
            faults.pause(f)
        try:
            time.sleep(2 * REPLICA_FETCH_WAIT_S)
            unreplicated = produce_acks_1(cluster.brokers[zombie].bootstrap, topic, 0, zombie_values)
            faults.pause(cluster.brokers[zombie])
        finally:
            for f in followers:
                faults.resume(f)
        with faults.Paused(cluster.brokers[zombie]):  # paused above; thawed on leaving
            wait_until_unregistered(cluster, zombie)
            after = wait_for_leader(cluster, topic, 0, not_on=zombie, above_epoch=before["leader_epoch"])
            assert zombie not in after["isr"]
            wait_for_acks(load, load.acked() + 50, "acks from the new leaders while the old one is frozen")
        # awake: it answers what was parked, learns it was deposed, truncates and follows
        wait_until_registered(cluster, zombie)
        wait_for_full_isr(cluster, topic, partitions)
        wait_for_acks(load, load.acked() + 50, "acks once the old leader is back as a follower")
        done = load.stop()
    finally:
        load.kill()
    assert_no_failed_deliveries(done, load)
    # a write acknowledged by the zombie after its deposition would be a record that is lost
    # or an offset holding two values: verify fails on both; a divergent tail it kept would
    # make its segments differ from the new leader's below the high watermark
    verify(cluster, topic, partitions, [load.out], tmp_path)

    # Kafka's outcome for the records only the deposed leader had: it truncates them when it
    # follows the new leader (whose log for the new epoch starts below them), and they are
    # gone from the partition although acks=1 acknowledged them
    output = cluster.brokers[zombie].output
    truncations = [(int(m[1]), int(m[2])) for line in output
                   if (m := re.search(rf"\b{topic}-0: truncating from (\d+) to (\d+)", line))]
    assert any(leo > unreplicated[-1] and target <= unreplicated[0] for leo, target in truncations), (
        f"zombie leader {zombie} held offsets {unreplicated} alone; its truncations of {topic}-0: "
        f"{truncations}; its log: {[line for line in output if f'{topic}-0' in line][-20:]}")
    reads = [json.loads(line) for line in (tmp_path / f"{topic}-reads.jsonl").read_text().splitlines()]
    kept = [r for r in reads if r.get("t") == "read" and r["v"].encode() in zombie_values]
    assert kept == [], kept


# -- a wiped follower ---------------------------------------------------------------------------


def test_a_follower_whose_data_dir_is_wiped_rejoins_and_re_replicates_everything(cluster, tmp_path):
    topic, partitions = "wiped", 3
    create_topic(cluster, topic, partitions)
    load = start_load(tmp_path, cluster, topic, partitions)
    try:
        wait_for_acks(load, 1000, "a history worth re-replicating")
        victim = next(b for b in cluster.brokers if b != partition_state(cluster, topic, 0)["leader"])
        faults.kill9(cluster.brokers[victim])
        faults.wipe(cluster.brokers[victim])
        wait_until_unregistered(cluster, victim)
        wait_for_acks(load, load.acked() + 50, "acks with two replicas left")
        faults.restart(cluster.brokers[victim])
        wait_for_full_isr(cluster, topic, partitions)
        done = load.stop()
    finally:
        load.kill()
    assert_no_failed_deliveries(done, load)
    verify(cluster, topic, partitions, [load.out], tmp_path)  # the wiped replica holds it all again


# -- rolling restart ------------------------------------------------------------------------------


def test_a_rolling_restart_under_load_gives_no_produce_errors_and_loses_nothing(cluster, tmp_path):
    topic, partitions = "rolling", 3
    create_topic(cluster, topic, partitions)
    load = start_load(tmp_path, cluster, topic, partitions)
    try:
        for broker_id, broker in cluster.brokers.items():
            assert faults.terminate(broker) == 0, broker.log_text()[-3000:]
            wait_for_acks(load, load.acked() + 50, f"acks while broker {broker_id} is down")
            faults.restart(broker)
            wait_for_full_isr(cluster, topic, partitions)
        done = load.stop()
    finally:
        load.kill()
    assert_no_failed_deliveries(done, load)
    print(f"rolling restart: retriable client errors seen: {[e['err'] for e in load.errors()]}")
    verify(cluster, topic, partitions, [load.out], tmp_path)


# -- acks=1 may lose, acks=all does not ---------------------------------------------------------


def test_acks_1_may_lose_unreplicated_records_on_a_leader_crash_and_acks_all_loses_none(cluster, tmp_path,
                                                                                      record_property):
    """Two producers write into one partition, one with acks=1 (no idempotence, no retries,
    so nothing is duplicated), one idempotent with acks=all; its leader is killed three
    times.  A record acked by acks=1 may be gone (the leader answered before any follower had
    it); an acks=all record may not."""
    topic = "acks"
    create_topic(cluster, topic, 1)
    one = start_load(tmp_path, cluster, topic, 1, name="one", acks="1", idempotent="false", retries=0, rate=300)
    every = start_load(tmp_path, cluster, topic, 1, name="all", rate=300)
    try:
        for cycle in range(3):
            before = partition_state(cluster, topic, 0)
            victim = before["leader"]
            faults.kill9(cluster.brokers[victim])
            wait_for_leader(cluster, topic, 0, not_on=victim, above_epoch=before["leader_epoch"])
            for load in (one, every):
                wait_for_acks(load, load.acked() + 20, f"cycle {cycle}: acks for {load.out.stem}")
            faults.restart(cluster.brokers[victim])
            wait_for_full_isr(cluster, topic, 1)
        one.stop()
        done_all = every.stop()
    finally:
        one.kill()
        every.kill()
    assert_no_failed_deliveries(done_all, every)
    report, _ = verify(cluster, topic, 1, [one.out, every.out], tmp_path, allow_loss=True)
    lost_one = [r for r in report.lost if r.value.startswith("one-")]
    lost_all = [r for r in report.lost if r.value.startswith("all-")]
    acked_one = sum(1 for e in one.entries() if e.get("t") == "ack")
    record_property("acks1_lost", len(lost_one))
    print(f"acks=1: {acked_one} acked, {len(lost_one)} lost after 3 leader crashes; "
          f"acks=all: {done_all['acked']} acked, {len(lost_all)} lost")
    assert lost_all == []
    assert not [m for m in report.misplaced if m[0].value.startswith("all-")], report.summary()


# -- NOT_ENOUGH_REPLICAS ----------------------------------------------------------------------


def produce_one(bootstrap: str, topic: str, acks: str, value: bytes,
                request_timeout_ms: int = 30000) -> KafkaError | None:
    """One record, no retries: the broker's own answer as the delivery error (None: acked)."""
    outcome: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "retries": 0, "enable.idempotence": False,
                  "request.timeout.ms": request_timeout_ms, "message.timeout.ms": 30000,
                  "topic.metadata.refresh.interval.ms": 1000})
    p.produce(topic, value=value, partition=0, on_delivery=lambda err, _msg: outcome.append(err))
    assert p.flush(60) == 0
    return outcome[0]


def test_two_of_three_replicas_down_refuses_acks_all_with_not_enough_replicas(cluster):
    topic = "min-isr"
    create_topic(cluster, topic, 1)
    assert produce_one(cluster.bootstrap, topic, "all", b"with three") is None
    leader = partition_state(cluster, topic, 0)["leader"]
    followers = [b for b in cluster.brokers if b != leader]
    for f in followers:
        faults.kill9(cluster.brokers[f])
    wait_until(lambda: partition_state(cluster, topic, 0)["isr"] == [leader], "the ISR to shrink to the leader")

    # ZooKeeper holds the new ISR a moment before the leader does (the controller writes it,
    # then tells the leader by LeaderAndIsr or the AlterPartition answer).  A produce in that
    # window is appended with three in the leader's ISR and then waits, as in Kafka, for a high
    # watermark that cannot move below min.insync.replicas: REQUEST_TIMED_OUT after the
    # request's timeout.  Once the leader has the ISR, acks=all is refused before the append.
    bootstrap = cluster.brokers[leader].bootstrap

    answers: list[KafkaError | None] = []

    def refused() -> bool:
        answers.append(produce_one(bootstrap, topic, "all", b"with one", request_timeout_ms=3000))
        return answers[-1] is not None and answers[-1].code() == KafkaError.NOT_ENOUGH_REPLICAS

    wait_until(refused, "the leader to refuse acks=all with NOT_ENOUGH_REPLICAS")
    assert all(e is not None and e.code() == KafkaError.REQUEST_TIMED_OUT for e in answers[:-1]), answers
    assert produce_one(bootstrap, topic, "1", b"acks=1 needs only the leader") is None

    for f in followers:
        faults.restart(cluster.brokers[f])
    wait_for_full_isr(cluster, topic, 1)
    assert produce_one(cluster.bootstrap, topic, "all", b"with three again") is None
    assert states(cluster, topic, 1)[0]["leader"] == leader
