"""A broker killed and started again at once (its old ZooKeeper session still holding its
/brokers/ids znode for seconds) never tells a client that the cluster has no brokers: from
the moment its listener accepts connections, every Metadata it answers lists the cluster's
brokers (kbroker/handlers/metadata_readiness.py).  librdkafka takes a Metadata answer as the whole
broker list and forgets every broker missing from it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kbroker.interbroker.broker_channel import send_once
from tests.support.cluster_processes import Cluster, wait_until
from wire.messages import MetadataRequest

pytestmark = pytest.mark.timeout(600)


def test_a_broker_restarted_at_once_answers_metadata_only_with_the_clusters_brokers(zookeeper, tmp_path):
    cluster = Cluster(tmp_path, zookeeper).start()
    try:
        victim = cluster.brokers[3]
        victim.kill()
        started = threading.Event()
        threading.Thread(target=lambda: (victim.start(timeout_s=120), started.set()), daemon=True).start()
        answers: list[list[int]] = []

        async def ask() -> None:
            # from the first connection the new process accepts until it has registered
            while not started.is_set() or not answers or len(answers[-1]) < 3:
                try:
                    resp = await send_once("127.0.0.1", victim.port, MetadataRequest(
                        topics=[], allow_auto_topic_creation=False), 12, "restart-probe", timeout_s=60)
                except (TimeoutError, OSError, asyncio.IncompleteReadError):
                    await asyncio.sleep(0.02)   # not listening yet (or the old process's last moment)
                    continue
                answers.append(sorted(b.node_id for b in resp.brokers))
        asyncio.run(asyncio.wait_for(ask(), 180))
        assert answers and all(a == [1, 2, 3] for a in answers), answers
        wait_until(cluster.serving, "the cluster serving again")
    finally:
        cluster.stop()
