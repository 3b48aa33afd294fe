"""Fetch from follower (KIP-392) between three kbroker processes and a real ZooKeeper.

Brokers 1, 2, 3 sit in racks r1, r2, r3 with ``replica.selector.class`` =
RackAwareReplicaSelector; one topic ``ffr`` (1 partition, replication factor 3) holds 100
records produced with acks=all.  A consumer Fetch v11+ from a follower's rack sent to the
leader names that follower as preferred read replica; sent to the follower it is served
there (v10 is NOT_LEADER_OR_FOLLOWER); confluent-kafka with ``client.rack`` reads every
record and the follower's DEBUG log shows it served them.  Every wait is a condition with a
generous deadline.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.interbroker.broker_channel import send_once
from kbroker.replica.replica_selector import RACK_AWARE_SELECTOR
from tests.support.broker_process import BrokerProcess
from tests.support.cluster_processes import Cluster, wait_until
from wire.error_codes import ErrorCode
from wire.messages import FetchRequest
from wire.record_batch import iter_batches

pytestmark = pytest.mark.timeout(300)

TOPIC = "ffr"
COUNT = 100
VALUES = [f"v{i}" for i in range(COUNT)]


def rack_broker(broker_id: int, data_dir, overrides: dict[str, str]) -> BrokerProcess:
    return BrokerProcess(data_dir, overrides={**overrides, "broker.rack": f"r{broker_id}"}, log_level="DEBUG")


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("fetch-from-follower"), zookeeper, make_broker=rack_broker,
                **{"replica.selector.class": RACK_AWARE_SELECTOR}).start()
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 1, 3)], request_timeout=60, operation_timeout=60).values():
        f.result(60)
    wait_until(lambda: sorted(partition_info(c).isrs) == [1, 2, 3], "the ISR of ffr-0 to hold all three brokers")
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 5, "message.timeout.ms": 60000})
    errors: list[str] = []
    for v in VALUES:
        p.produce(TOPIC, value=v.encode(), on_delivery=lambda err, _m: err and errors.append(str(err)))
    assert p.flush(90) == 0 and not errors, errors[:5]
    yield c
    c.stop()


def partition_info(cluster: Cluster):
    md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(TOPIC, timeout=30)
    return md.topics[TOPIC].partitions[0]


def leader_and_follower(cluster: Cluster) -> tuple[int, int]:
    lead = partition_info(cluster).leader
    return lead, min(b for b in cluster.brokers if b != lead)


def fetch(cluster: Cluster, broker_id: int, version: int, rack: str, offset: int = 0):
    """One consumer Fetch of ffr-0 to ``broker_id``: the partition's answer."""
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                       session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[
                           FetchRequest.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=offset,
                                                       last_fetched_epoch=-1, log_start_offset=-1,
                                                       partition_max_bytes=1 << 20)])],
                       forgotten_topics_data=[], rack_id=rack)
    resp = asyncio.run(send_once("127.0.0.1", cluster.brokers[broker_id].port, req, version, "ffr-test"))
    return resp.responses[0].partitions[0]


def values_in(records) -> list[str]:
    return [r.value.decode() for b in iter_batches(bytes(records)) for r in b.records()]


def test_the_leader_names_the_follower_in_the_consumers_rack_as_preferred_read_replica(cluster):
    lead, follower = leader_and_follower(cluster)
    # the leader knows the follower holds offset 0 once that follower has fetched
    pd = wait_until(lambda: (pd := fetch(cluster, lead, 12, f"r{follower}")).preferred_read_replica == follower
                    and pd, f"the leader {lead} to prefer broker {follower}")
    assert (pd.error_code, pd.high_watermark, pd.log_start_offset) == (ErrorCode.NONE, COUNT, 0)
    assert values_in(pd.records) == []
    same_rack = fetch(cluster, lead, 11, f"r{lead}")   # a client in the leader's rack reads from it
    assert same_rack.preferred_read_replica == -1 and values_in(same_rack.records) == VALUES


def test_the_follower_serves_a_v11_consumer_fetch_and_refuses_v10(cluster):
    _, follower = leader_and_follower(cluster)
    # the follower's HW reaches 100 with its next fetch answer from the leader
    pd = wait_until(lambda: (pd := fetch(cluster, follower, 12, f"r{follower}")).high_watermark == COUNT and pd,
                    f"broker {follower}'s high watermark to reach {COUNT}")
    assert (pd.error_code, pd.preferred_read_replica) == (ErrorCode.NONE, -1)
    assert values_in(pd.records) == VALUES
    assert fetch(cluster, follower, 11, "").error_code == ErrorCode.NONE
    assert fetch(cluster, follower, 10, f"r{follower}").error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_confluent_kafka_with_client_rack_reads_every_record_from_the_follower_in_its_rack(cluster):
    lead, follower = leader_and_follower(cluster)
    wait_until(lambda: fetch(cluster, lead, 12, f"r{follower}").preferred_read_replica == follower,
               f"the leader {lead} to prefer broker {follower}")
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "ffr", "enable.auto.commit": False,
                  "client.rack": f"r{follower}"})
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        got: list[tuple[int, str]] = []
        deadline = time.monotonic() + 60
        while len(got) < COUNT:
            assert time.monotonic() < deadline, f"read {len(got)} of {COUNT} records in 60 s"
            for m in c.consume(COUNT, 1.0):
                assert m.error() is None, m.error()
                got.append((m.offset(), m.value().decode()))
    finally:
        c.close()
    assert got == list(enumerate(VALUES))
    marker = f"follower {follower} served a consumer fetch of {TOPIC}-0 at offset 0 ("
    assert cluster.brokers[follower].wait_for_output(lambda lines: any(marker in line for line in lines)), marker
