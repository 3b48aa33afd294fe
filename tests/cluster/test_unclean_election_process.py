"""``unclean.leader.election.enable`` as a topic override, honoured by the controller (real
ZooKeeper, three kbroker processes): with the whole ISR gone, the topic that allows it gets
its out-of-sync replica as leader (RECOVERING, KIP-704), the one that does not stays
leaderless (Kafka's default since 0.11, KIP-106) until the override is turned on, which
elects it at once (Kafka's TopicUncleanLeaderElectionEnable)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from cluster import znodes
from tests.support.cluster_processes import Cluster, wait_until

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("unclean"), zookeeper).start()
    yield c
    c.stop()


def state(c: Cluster, topic: str) -> dict:
    return json.loads(c.admin.get(znodes.partition_state_path(topic, 0))[0])


def test_only_the_topic_that_allows_it_elects_an_out_of_sync_replica_when_its_isr_is_gone(cluster):
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = client.create_topics([
        NewTopic("dirty", 1, replica_assignment=[[1, 2]],
                 config={"unclean.leader.election.enable": "true"}),
        NewTopic("clean", 1, replica_assignment=[[1, 2]])], request_timeout=60, operation_timeout=60)
    for f in futures.values():
        f.result(60)
    for topic in ("dirty", "clean"):
        wait_until(lambda t=topic: state(cluster, t)["isr"] == [1, 2], f"{topic}'s ISR [1, 2]")

    cluster.brokers[2].kill()  # the follower dies: the controller drops it from the ISR
    wait_until(lambda: 2 not in cluster.registered(), "broker 2's session to expire")
    for topic in ("dirty", "clean"):
        wait_until(lambda t=topic: state(cluster, t)["isr"] == [1], f"{topic}'s ISR [1]")
    cluster.brokers[1].kill()  # then the last in-sync replica
    wait_until(lambda: 1 not in cluster.registered(), "broker 1's session to expire")
    for topic in ("dirty", "clean"):
        wait_until(lambda t=topic: state(cluster, t)["leader"] == -1, f"{topic} offline")

    cluster.brokers[2].start(timeout_s=120)  # the out-of-sync replica returns
    wait_until(lambda: state(cluster, "dirty")["leader"] == 2, "dirty led by broker 2")
    dirty = state(cluster, "dirty")
    assert dirty["isr"] == [2]
    clean = state(cluster, "clean")
    assert (clean["leader"], clean["isr"]) == (-1, [1])

    # Turning the override on for "clean" (IncrementalAlterConfigs on any broker) elects it.
    resource = ConfigResource(ResourceType.TOPIC, "clean", incremental_configs=[
        ConfigEntry("unclean.leader.election.enable", "true",
                    incremental_operation=AlterConfigOpType.SET)])
    cluster.wait_serving()
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})  # the live brokers
    for f in client.incremental_alter_configs([resource], request_timeout=60).values():
        f.result(60)
    wait_until(lambda: state(cluster, "clean")["leader"] == 2, "clean led by broker 2")
    assert state(cluster, "clean")["isr"] == [2]
