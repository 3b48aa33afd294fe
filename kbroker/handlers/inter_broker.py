"""The controller-to-broker APIs of ZooKeeper mode: LeaderAndIsr (4) v7, StopReplica (5) v4,
UpdateMetadata (6) v8, and the broker-to-controller ones: ControlledShutdown (7) v3 and
AlterPartition (56) v0-3 (a leader's ISR change, KIP-497; Kafka 3.9 serves it on the
``zkBroker`` listener too).

Served only in cluster mode, and never advertised: they live in their own registry
(``INTER_BROKER``), which the connection consults only when the broker runs in a cluster
and which ApiVersions does not list.  Kafka 3.x in ZooKeeper mode did list them to
everyone; Kafka 4 removed them (KAFKA-14552), no stock client sends them, and advertising
them would only invite clients to probe; so kbroker keeps them off the client-facing list.

Authorization (Kafka checks CLUSTER_ACTION on the Cluster resource, which without an
authorizer every principal has).  There is no authorizer here, so the check is on what a
broker can prove and a client cannot know: the sender must name a broker registered in
ZooKeeper (``controller_id``, or ``broker_id`` for ControlledShutdown and AlterPartition; the image of live
brokers first, then ``/brokers/ids/<id>`` itself, since the first UpdateMetadata arrives
before the cache knows anyone), else CLUSTER_AUTHORIZATION_FAILED.  Then Kafka's own
fencing: a controller epoch older than the newest this broker has seen is
STALE_CONTROLLER_EPOCH, and a broker epoch other than this broker's registration czxid
is STALE_BROKER_EPOCH (KIP-380; -1 = unknown, accepted).  This is not security against a
hostile client (that is what SASL/ACLs are for) but it keeps a stray tool or a deposed
controller from rewriting the broker's view.  The ``/brokers/ids/<id>`` read waits out a
lost ZooKeeper connection (kbroker/zk_retry.py, ``zookeeper.connection.timeout.ms``): a
LeaderAndIsr that arrived while this broker reconnected was answered UNKNOWN_SERVER_ERROR
and its partitions' change was lost.
"""

from __future__ import annotations

from typing import Any

from cluster import znodes
from kbroker.registry import INTER_BROKER
from kbroker.request_context import RequestContext
from kbroker.zk_retry import deadline, until_connected
from wire.error_codes import ErrorCode
from wire.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)

LeaderAndIsrTopicError = LeaderAndIsrResponse.LeaderAndIsrTopicError  # type: ignore[attr-defined]
LeaderAndIsrPartitionError = LeaderAndIsrResponse.LeaderAndIsrPartitionError  # type: ignore[attr-defined]
StopReplicaPartitionError = StopReplicaResponse.StopReplicaPartitionError  # type: ignore[attr-defined]
RemainingPartition = ControlledShutdownResponse.RemainingPartition  # type: ignore[attr-defined]


async def _is_registered_broker(ctx: RequestContext, broker_id: int) -> bool:
    cluster = ctx.broker.cluster
    if cluster is None or broker_id < 0:
        return False
    if cluster.cache.broker(broker_id) is not None or broker_id == cluster.broker_id:
        return True

    async def read() -> bool:
        return await cluster.zk.exists(znodes.broker_path(broker_id)) is not None

    return await until_connected(read, deadline(cluster.zk), f"the registration of broker {broker_id}")


async def _controller_request_error(ctx: RequestContext, req: Any) -> ErrorCode | None:
    cluster = ctx.broker.cluster
    assert cluster is not None
    if not await _is_registered_broker(ctx, req.controller_id):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if req.controller_epoch < cluster.cache.image.controller_epoch:
        return ErrorCode.STALE_CONTROLLER_EPOCH
    if req.broker_epoch not in (-1, cluster.broker_epoch):
        return ErrorCode.STALE_BROKER_EPOCH
    return None


@INTER_BROKER.register(4, 7, 7)
async def handle_leader_and_isr(ctx: RequestContext, req: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
    cluster = ctx.broker.cluster
    assert cluster is not None and cluster.replicas is not None
    error = await _controller_request_error(ctx, req)
    if error is not None:
        return LeaderAndIsrResponse(error_code=error, topics=[])
    errors = await cluster.replicas.become_leader_or_follower(req)
    topics = []
    for t in req.topic_states:
        topics.append(LeaderAndIsrTopicError(topic_id=t.topic_id, partition_errors=[
            LeaderAndIsrPartitionError(partition_index=p.partition_index,
                                       error_code=errors.get((t.topic_name, p.partition_index), 0))
            for p in t.partition_states]))
    return LeaderAndIsrResponse(error_code=ErrorCode.NONE, topics=topics)


@INTER_BROKER.register(5, 4, 4)
async def handle_stop_replica(ctx: RequestContext, req: StopReplicaRequest) -> StopReplicaResponse:
    cluster = ctx.broker.cluster
    assert cluster is not None and cluster.replicas is not None
    error = await _controller_request_error(ctx, req)
    if error is not None:
        return StopReplicaResponse(error_code=error, partition_errors=[])
    errors = await cluster.replicas.stop_replicas(req)
    return StopReplicaResponse(error_code=ErrorCode.NONE, partition_errors=[
        StopReplicaPartitionError(topic_name=t, partition_index=p, error_code=code)
        for (t, p), code in errors.items()])


@INTER_BROKER.register(6, 8, 8)
async def handle_update_metadata(ctx: RequestContext, req: UpdateMetadataRequest) -> UpdateMetadataResponse:
    cluster = ctx.broker.cluster
    assert cluster is not None
    error = await _controller_request_error(ctx, req)
    if error is not None:
        return UpdateMetadataResponse(error_code=error)
    deleted = cluster.cache.apply_update_metadata(req)
    if deleted:   # KafkaApis.handleUpdateMetadataRequest (ZooKeeper mode): groupCoordinator.onPartitionsDeleted
        ctx.broker.groups.on_partitions_deleted(deleted)
    return UpdateMetadataResponse(error_code=ErrorCode.NONE)


@INTER_BROKER.register(7, 3, 3)
async def handle_controlled_shutdown(ctx: RequestContext, req: ControlledShutdownRequest
                                     ) -> ControlledShutdownResponse:
    cluster = ctx.broker.cluster
    assert cluster is not None
    if not await _is_registered_broker(ctx, req.broker_id):
        return ControlledShutdownResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                          remaining_partitions=[])
    if not cluster.runner.is_active:
        return ControlledShutdownResponse(error_code=ErrorCode.NOT_CONTROLLER, remaining_partitions=[])
    result = await cluster.runner.controlled_shutdown(req.broker_id, req.broker_epoch)
    return ControlledShutdownResponse(error_code=result.error_code, remaining_partitions=[
        RemainingPartition(topic_name=t, partition_index=p) for t, p in result.remaining_partitions])


# How long an AlterPartition waits for this broker's controller failover to finish (it has
# won /controller and is reading the cluster) before answering NOT_CONTROLLER; Kafka's
# request would sit in the controller's queue behind the failover event the same way.
ALTER_PARTITION_FAILOVER_WAIT_S = 30.0


@INTER_BROKER.register(56, 0, 3)
async def handle_alter_partition(ctx: RequestContext, req: AlterPartitionRequest) -> AlterPartitionResponse:
    """``KafkaApis.handleAlterPartitionRequest`` (ZooKeeper mode): CLUSTER_ACTION (here: a
    registered broker), then the controller's event queue answers (``processAlterPartition``,
    cluster/controller/alter_partition.py); a broker that is not the controller answers
    NOT_CONTROLLER at the top level."""
    cluster = ctx.broker.cluster
    assert cluster is not None
    if not await _is_registered_broker(ctx, req.broker_id):
        return AlterPartitionResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, topics=[])
    if not await cluster.runner.wait_ready(ALTER_PARTITION_FAILOVER_WAIT_S):
        return AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER, topics=[])
    return await cluster.runner.alter_partition(req, ctx.api_version)
