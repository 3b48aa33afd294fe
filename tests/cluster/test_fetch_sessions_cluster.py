"""kbroker's replica fetcher uses KIP-227 fetch sessions with its leaders (three kbroker
processes, a real ZooKeeper): after a full fetch each follower sends incremental fetches
(counted by the leaders' /metrics), and every replica still ends up holding the same
batches, byte for byte, as acks=all produces go through on 12 partitions."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.cluster_processes import Cluster, metered_cluster, wait_until
from tests.support.metrics_scrape import scrape_unlabelled
from tests.support.replication_checker import compare_replicas

pytestmark = pytest.mark.timeout(600)

TOPIC = "sessions"
PARTITIONS = 12


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = metered_cluster(tmp_path_factory.mktemp("sessions"), zookeeper).start()
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], request_timeout=60,
                                 operation_timeout=60).values():
        f.result(60)
    yield c
    c.stop()


def total(cluster: Cluster, name: str) -> float:
    return sum(scrape_unlabelled(port)[name] for port in cluster.metrics_ports.values())


def test_followers_fetch_through_incremental_sessions_and_every_replica_is_identical(cluster):
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            failures.append(str(err))
    for rnd in range(3):
        for i in range(50):
            for part in range(PARTITIONS):
                p.produce(TOPIC, b"%d-%d-%d" % (rnd, i, part), partition=part, on_delivery=report)
        assert p.flush(120) == 0
    assert failures == []
    # the leaders hold follower sessions, served incrementally
    wait_until(lambda: total(cluster, "kafka_server_fetchsessioncache_numincrementalfetchsessions") >= 1,
               "a leader to hold a follower's fetch session")
    wait_until(lambda: total(cluster, "kbroker_fetchsessioncache_incrementalfetches_total") >= 10,
               "incremental follower fetches")
    for part in range(PARTITIONS):
        dirs = {b: Path(bp.data_dir) / f"{TOPIC}-{part}" for b, bp in cluster.brokers.items()}
        report_ = compare_replicas(dirs, 150)
        assert report_.ok, report_.problems
