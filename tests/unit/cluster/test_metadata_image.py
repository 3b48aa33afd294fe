"""cluster.metadata_image answers what Metadata and routing ask."""

from __future__ import annotations

from cluster.election import LeaderAndIsr
from cluster.metadata_image import BrokerInfo, MetadataImage, PartitionInfo, TopicInfo
from cluster.znodes import EndPoint


def image() -> MetadataImage:
    img = MetadataImage()
    for b in (1, 2):
        img.with_broker(BrokerInfo(b, (EndPoint("PLAINTEXT", "127.0.0.1", 9090 + b),), epoch=10 + b))
    img.set_topic(TopicInfo("t", None, {0: PartitionInfo((1, 3)), 1: PartitionInfo((3, 2))}))
    img.set_partition_state("t", 0, LeaderAndIsr(1, 2, (1, 3)), controller_epoch=4)
    img.set_partition_state("t", 1, LeaderAndIsr(3, 0, (3, 2)), controller_epoch=4)
    return img


def test_a_partition_led_by_a_live_broker_reports_leader_epoch_isr_and_offline_replicas():
    img = image()
    assert (img.leader("t", 0), img.leader_epoch("t", 0), img.isr("t", 0)) == (1, 2, (1, 3))
    assert img.offline_replicas("t", 0) == (3,)
    assert img.leader_endpoint("t", 0, "PLAINTEXT") == EndPoint("PLAINTEXT", "127.0.0.1", 9091)


def test_a_leader_whose_broker_is_gone_reads_as_no_leader():
    img = image()
    assert img.leader("t", 1) == -1 and img.leader_endpoint("t", 1, "PLAINTEXT") is None
    img.without_broker(1)
    assert img.leader("t", 0) == -1 and img.live_broker_ids() == [2]


def test_unknown_partitions_have_no_leader_and_brokers_list_their_partitions():
    img = image()
    assert img.leader("u", 0) == -1 and img.isr("t", 9) == ()
    assert img.partitions_on_broker(3) == [("t", 0), ("t", 1)]
    assert img.partitions_led_by(1) == [("t", 0)]
