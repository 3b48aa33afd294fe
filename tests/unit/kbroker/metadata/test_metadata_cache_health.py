"""The metadata cache logs, once per change, when a partition this broker leads becomes or
stops being under-replicated or under min ISR."""

from __future__ import annotations

import logging

from kbroker.metadata.metadata_cache import MetadataCache
from wire.messages import UpdateMetadataRequest

_Topic = UpdateMetadataRequest.UpdateMetadataTopicState  # type: ignore[attr-defined]
_Partition = UpdateMetadataRequest.UpdateMetadataPartitionState  # type: ignore[attr-defined]


def update(leader: int, isr: list[int], replicas: tuple[int, ...] = (1, 2, 3), epoch: int = 0) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(controller_id=1, controller_epoch=1, topic_states=[_Topic(
        topic_name="t", partition_states=[_Partition(
            partition_index=0, controller_epoch=1, leader=leader, leader_epoch=epoch, isr=isr,
            zk_version=epoch, replicas=list(replicas), offline_replicas=[])])])


def health_lines(caplog) -> list[str]:  # noqa: ANN001
    lines = [r.getMessage() for r in caplog.records
             if r.name == "kbroker.metadata" and r.levelno == logging.WARNING]
    caplog.clear()
    return lines


def test_a_led_partition_logs_each_change_of_replication_health_once(caplog):
    caplog.set_level(logging.WARNING, logger="kbroker.metadata")
    cache = MetadataCache(1, min_insync_replicas=lambda topic: 2)
    cache.apply_update_metadata(update(1, [1, 2, 3]))
    assert health_lines(caplog) == []
    cache.apply_update_metadata(update(1, [1, 2]))
    assert health_lines(caplog) == ["partition t-0 is under-replicated: ISR [1, 2] of replicas [1, 2, 3]"]
    cache.apply_update_metadata(update(1, [1, 2]))  # the same state again: nothing
    assert health_lines(caplog) == []
    cache.apply_update_metadata(update(1, [1]))
    assert health_lines(caplog) == [
        "partition t-0 is under min ISR: ISR [1] is below min.insync.replicas 2 "
        "(acks=all produce answers NOT_ENOUGH_REPLICAS)"]
    assert (cache.under_replicated(), cache.under_min_isr()) == ([("t", 0)], [("t", 0)])
    cache.apply_update_metadata(update(1, [1, 2, 3]))
    assert health_lines(caplog) == ["partition t-0 is fully replicated again: ISR [1, 2, 3]",
                                    "partition t-0 is back at min ISR: ISR [1, 2, 3], min.insync.replicas 2"]
    assert (cache.under_replicated(), cache.under_min_isr()) == ([], [])


def test_only_the_leader_logs_and_min_isr_is_capped_by_the_replication_factor(caplog):
    caplog.set_level(logging.WARNING, logger="kbroker.metadata")
    follower = MetadataCache(2, min_insync_replicas=lambda topic: 2)
    follower.apply_update_metadata(update(1, [1]))
    assert health_lines(caplog) == []
    solo = MetadataCache(1, min_insync_replicas=lambda topic: 2)
    solo.apply_update_metadata(update(1, [1], replicas=(1,)))
    assert health_lines(caplog) == []  # min(2, RF 1) = 1: a single replica is healthy
    # Leadership arriving at a broker with the partition already short is a change for it.
    follower.apply_update_metadata(update(2, [2], epoch=1))
    assert health_lines(caplog) == [
        "partition t-0 is under-replicated: ISR [2] of replicas [1, 2, 3]",
        "partition t-0 is under min ISR: ISR [2] is below min.insync.replicas 2 "
        "(acks=all produce answers NOT_ENOUGH_REPLICAS)"]
