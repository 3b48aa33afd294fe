"""AlterPartition end to end: a real ZooKeeper, three kbroker processes, requests sent by hand
as a partition leader's AlterPartitionManager sends them, and what every broker then shows."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

from cluster import znodes
from kbroker.interbroker.broker_channel import send_once
from tests.support.cluster_processes import Cluster, wait_until
from wire.error_codes import ErrorCode
from wire.messages import AlterPartitionRequest, ApiVersionsRequest, MetadataRequest

pytestmark = pytest.mark.timeout(300)

TOPIC = "isr-shrink"
_Topic = AlterPartitionRequest.TopicData  # type: ignore[attr-defined]
_Partition = AlterPartitionRequest.PartitionData  # type: ignore[attr-defined]
_BrokerState = AlterPartitionRequest.BrokerState  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("alter-partition"), zookeeper).start()
    client = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in client.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[1, 2, 3]])],
                                  request_timeout=60, operation_timeout=60).values():
        f.result(60)
    wait_until(lambda: all(isr_on(c, b) == [1, 2, 3] for b in c.brokers), "every broker to see the topic")
    yield c
    c.stop()


def state(c: Cluster) -> tuple[dict, int]:
    data, stat = c.admin.get(znodes.partition_state_path(TOPIC, 0))
    return json.loads(data), stat.version


def broker_epoch(c: Cluster, broker_id: int) -> int:
    return c.admin.exists(znodes.broker_path(broker_id)).czxid


def topic_id(c: Cluster) -> uuid.UUID:
    data, _ = c.admin.get(znodes.topic_path(TOPIC))
    return znodes.decode_topic(data).topic_id


def metadata(c: Cluster, broker_id: int, version: int = 12):  # noqa: ANN201 - generated class
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                          allow_auto_topic_creation=False)
    resp = asyncio.run(send_once("127.0.0.1", c.brokers[broker_id].port, req, version, "test"))
    [t] = resp.topics
    return t.partitions[0]


def isr_on(c: Cluster, broker_id: int) -> list[int]:
    return list(metadata(c, broker_id).isr_nodes)


def alter(c: Cluster, isr: list[int], leader_epoch: int, partition_epoch: int, sender: int = 1,
          to: int | None = None, version: int = 3):  # noqa: ANN201
    """An AlterPartition from broker ``sender`` (with its real broker epoch) to ``to``
    (default: the controller); v3 carries each member's registration czxid."""
    part = _Partition(partition_index=0, leader_epoch=leader_epoch, partition_epoch=partition_epoch)
    if version >= 3:
        part.new_isr_with_epochs = [_BrokerState(broker_id=b, broker_epoch=broker_epoch(c, b)) for b in isr]
    else:
        part.new_isr = list(isr)
    registered = sender in c.registered()
    req = AlterPartitionRequest(broker_id=sender, broker_epoch=broker_epoch(c, sender) if registered else 7,
                                topics=[_Topic(topic_id=topic_id(c), partitions=[part])])
    target = c.controller()[0] if to is None else to
    return asyncio.run(send_once("127.0.0.1", c.brokers[target].port, req, version, f"broker-{sender}"))


def only(resp):  # noqa: ANN001, ANN201
    assert resp.error_code == 0, ErrorCode(resp.error_code).name
    [t] = resp.topics
    [p] = t.partitions
    return p


def test_a_leaders_alter_partition_shrinks_the_isr_in_zookeeper_and_on_every_broker(cluster):
    before, version = state(cluster)
    assert (before["leader"], before["isr"]) == (1, [1, 2, 3])
    p = only(alter(cluster, [1, 2], before["leader_epoch"], version))
    assert (p.error_code, p.leader_id, p.leader_epoch, p.isr, p.partition_epoch) == (
        0, 1, before["leader_epoch"], [1, 2], version + 1)
    after, new_version = state(cluster)
    assert new_version == version + 1
    assert after == {**before, "isr": [1, 2]}  # Kafka's JSON; the leader epoch is unchanged
    wait_until(lambda: all(isr_on(cluster, b) == [1, 2] for b in cluster.brokers),
               "every broker's Metadata to show the ISR [1, 2]")
    # confluent-kafka's describe_topics (Metadata v12 under the hood) shows it too.
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    desc = client.describe_topics(TopicCollection([TOPIC]), request_timeout=30)[TOPIC].result(30)
    [part] = desc.partitions
    assert ([n.id for n in part.replicas], [n.id for n in part.isr], part.leader.id) == ([1, 2, 3], [1, 2], 1)


def test_a_stale_partition_epoch_is_refused_with_invalid_update_version(cluster):
    current, version = state(cluster)
    p = only(alter(cluster, [1], current["leader_epoch"], version - 1))
    assert p.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert state(cluster) == (current, version)


def test_a_wrong_leader_epoch_is_fenced_or_sent_back_as_not_controller(cluster):
    current, version = state(cluster)
    assert only(alter(cluster, [1], current["leader_epoch"] - 1, version)).error_code == \
        ErrorCode.FENCED_LEADER_EPOCH
    assert only(alter(cluster, [1], current["leader_epoch"] + 1, version)).error_code == ErrorCode.NOT_CONTROLLER
    assert state(cluster) == (current, version)


def test_alter_partition_is_not_advertised_but_the_reassignment_apis_are(cluster):
    versions = asyncio.run(send_once("127.0.0.1", cluster.brokers[1].port, ApiVersionsRequest(
        client_software_name="test", client_software_version="1"), 3, "test"))
    keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert 56 not in keys
    assert (keys[45], keys[46]) == ((0, 0), (0, 0))


def test_alter_partition_is_refused_by_a_broker_that_is_not_the_controller_or_from_an_unregistered_one(cluster):
    current, version = state(cluster)
    controller = cluster.controller()[0]
    other = next(b for b in cluster.brokers if b != controller)
    resp = alter(cluster, [1], current["leader_epoch"], version, to=other)
    assert (resp.error_code, resp.topics) == (ErrorCode.NOT_CONTROLLER, [])
    resp = alter(cluster, [1], current["leader_epoch"], version, sender=42)
    assert resp.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert state(cluster) == (current, version)


def test_the_isr_expands_back_on_the_partition_epoch_the_shrink_returned_v2_as_well(cluster):
    current, version = state(cluster)
    p = only(alter(cluster, [1, 2, 3], current["leader_epoch"], version, version=2))
    assert (p.isr, p.partition_epoch) == ([1, 2, 3], version + 1)
    wait_until(lambda: all(isr_on(cluster, b) == [1, 2, 3] for b in cluster.brokers),
               "every broker's Metadata to show the ISR [1, 2, 3]")


def test_a_dead_follower_leaves_the_isr_and_shows_as_offline_and_cannot_be_added_back(cluster):
    cluster.brokers[3].kill()
    wait_until(lambda: state(cluster)[0]["isr"] == [1, 2], "the controller to drop broker 3 from the ISR")
    current, version = state(cluster)
    assert current["leader"] == 1
    for b in (1, 2):
        p = wait_until(lambda b=b: (m := metadata(cluster, b)).offline_replicas == [3] and m,
                       f"broker {b}'s Metadata to show replica 3 offline")
        assert (p.error_code, p.leader_id, list(p.replica_nodes), list(p.isr_nodes)) == (0, 1, [1, 2, 3], [1, 2])
        # Metadata v0 lists only live replicas and says one is missing.
        p0 = metadata(cluster, b, version=0)
        assert (p0.error_code, list(p0.replica_nodes)) == (ErrorCode.REPLICA_NOT_AVAILABLE, [1, 2])
    # Broker 3 is gone (no registration to take an epoch from): a v2 request adds it back.
    part = _Partition(partition_index=0, leader_epoch=current["leader_epoch"], partition_epoch=version,
                      new_isr=[1, 2, 3])
    req = AlterPartitionRequest(broker_id=1, broker_epoch=broker_epoch(cluster, 1),
                                topics=[_Topic(topic_id=topic_id(cluster), partitions=[part])])
    resp = asyncio.run(send_once("127.0.0.1", cluster.brokers[cluster.controller()[0]].port, req, 2, "broker-1"))
    assert only(resp).error_code == ErrorCode.INELIGIBLE_REPLICA
