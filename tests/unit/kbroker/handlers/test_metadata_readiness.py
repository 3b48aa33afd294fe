"""A cluster-mode broker that has not yet had the controller's first UpdateMetadata holds
Metadata, DescribeCluster, DescribeTopicPartitions and FindCoordinator until it has (kbroker/handlers/metadata_readiness.py):
an answer listing no brokers makes librdkafka forget every broker it knew."""

from __future__ import annotations

import asyncio
import inspect
import uuid

import kbroker.handlers  # noqa: F401  (registers the handlers)
from kbroker.handlers import metadata_readiness
from kbroker.metadata.metadata_cache import MetadataCache
from kbroker.metadata.metadata_view import ClusterMetadata
from kbroker.server.registry import REGISTRY
from kbroker.server.services import Services
from kbroker.zk.zk_coordinators import ZkCoordinators
from tests.support.fakes import context, fixed_config, services
from wire.messages import (
    DescribeClusterRequest,
    DescribeTopicPartitionsRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    UpdateMetadataRequest,
)

U = UpdateMetadataRequest


def first_update(brokers=(1, 2, 3)) -> UpdateMetadataRequest:
    """The brokers, and __consumer_offsets with one partition led by broker 2."""
    offsets = U.UpdateMetadataTopicState(topic_name="__consumer_offsets", topic_id=uuid.UUID(int=5), partition_states=[
        U.UpdateMetadataPartitionState(topic_name="__consumer_offsets", partition_index=0, controller_epoch=1,
                                       leader=2, leader_epoch=0, isr=[2], zk_version=0, replicas=[2],
                                       offline_replicas=[])])
    return U(controller_id=2, controller_epoch=1, topic_states=[offsets], live_brokers=[
        U.UpdateMetadataBroker(id=b, rack=None, endpoints=[U.UpdateMetadataEndpoint(
            port=9090 + b, host="127.0.0.1", listener="PLAINTEXT", security_protocol=0)]) for b in brokers])


def restarted_broker(tmp_path) -> tuple[MetadataCache, Services]:
    """A broker just registered: its metadata cache has heard nothing yet; its ports."""
    cache = MetadataCache(broker_id=1)
    config = fixed_config({"log.dirs": str(tmp_path), "auto.create.topics.enable": "false"})
    return cache, services(metadata=ClusterMetadata("PLAINTEXT", cache, lambda: -1), config=config, cluster_id="c",
                           # __consumer_offsets is in the first update: FindCoordinator creates nothing
                           coordinators=ZkCoordinators(cache, None, config, None))  # type: ignore[arg-type]


def call(svc: Services, api_key: int, request, version: int):
    return REGISTRY.get(api_key).handler(context(api_key, version, svc), request)


REQUESTS = [(3, MetadataRequest(topics=None, allow_auto_topic_creation=False), 12),
            (60, DescribeClusterRequest(include_cluster_authorized_operations=False), 0),
            (75, DescribeTopicPartitionsRequest(topics=[], response_partition_limit=2000, cursor=None), 0),
            (10, FindCoordinatorRequest(key="g", key_type=0), 3)]


def test_metadata_describe_cluster_describe_topic_partitions_and_find_coordinator_wait_for_the_first_update_metadata(tmp_path):
    cache, svc = restarted_broker(tmp_path)

    async def scenario():
        pending = [asyncio.ensure_future(call(svc, key, req, v)) for key, req, v in REQUESTS]
        await asyncio.sleep(0.05)
        assert not any(p.done() for p in pending)   # held: nothing answered from the empty cache
        cache.apply_update_metadata(first_update())
        return await asyncio.wait_for(asyncio.gather(*pending), 30)

    metadata, cluster, _, coordinator = asyncio.run(scenario())
    assert sorted(b.node_id for b in metadata.brokers) == [1, 2, 3]
    assert (coordinator.error_code, coordinator.node_id, coordinator.port) == (0, 2, 9092)
    assert sorted(b.broker_id for b in cluster.brokers) == [1, 2, 3]


def test_once_the_cache_has_brokers_metadata_is_answered_at_once(tmp_path):
    cache, svc = restarted_broker(tmp_path)
    cache.apply_update_metadata(first_update())
    answer = call(svc, *REQUESTS[0][:2], REQUESTS[0][2])
    assert not inspect.isawaitable(answer)
    assert sorted(b.node_id for b in answer.brokers) == [1, 2, 3]


def test_without_an_update_metadata_the_hold_ends_and_the_broker_answers_what_it_has(tmp_path, monkeypatch):
    monkeypatch.setattr(metadata_readiness, "HOLD_S", 0.1)
    _, svc = restarted_broker(tmp_path)
    answer = asyncio.run(call(svc, *REQUESTS[0][:2], REQUESTS[0][2]))
    assert answer.brokers == [] and answer.topics == []
