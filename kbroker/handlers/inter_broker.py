"""The controller-to-broker APIs of ZooKeeper mode: LeaderAndIsr (4) v7, StopReplica (5) v4,
UpdateMetadata (6) v8, and the broker-to-controller ones: ControlledShutdown (7) v3 and
AlterPartition (56) v0-3 (a leader's ISR change, KIP-497; Kafka 3.9 serves it on the
``zkBroker`` listener too).

Served only in cluster mode, and never advertised: they live in their own registry
(``INTER_BROKER``), which the connection consults only when the broker runs in a cluster
and which ApiVersions does not list.  Kafka 3.x in ZooKeeper mode did list them to
everyone; Kafka 4 removed them (KAFKA-14552), no stock client sends them, and advertising
them would only invite clients to probe; so kbroker keeps them off the client-facing list.

Authorization and fencing (a registered broker, the controller and broker epochs) are the
port's: kbroker/zk/zk_inter_broker.py.

Ports (kbroker/server/services.py): ``inter_broker``.
"""

from __future__ import annotations

from kbroker.server.registry import INTER_BROKER
from kbroker.server.request_context import RequestContext
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


@INTER_BROKER.register(4, 7, 7)
async def handle_leader_and_isr(ctx: RequestContext, req: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
    inter_broker = ctx.services.inter_broker
    error = await inter_broker.controller_request_error(req)
    if error is not None:
        return LeaderAndIsrResponse(error_code=error, topics=[])
    errors = await inter_broker.become_leader_or_follower(req)
    topics = []
    for t in req.topic_states:
        topics.append(LeaderAndIsrTopicError(topic_id=t.topic_id, partition_errors=[
            LeaderAndIsrPartitionError(partition_index=p.partition_index,
                                       error_code=errors.get((t.topic_name, p.partition_index), 0))
            for p in t.partition_states]))
    return LeaderAndIsrResponse(error_code=ErrorCode.NONE, topics=topics)


@INTER_BROKER.register(5, 4, 4)
async def handle_stop_replica(ctx: RequestContext, req: StopReplicaRequest) -> StopReplicaResponse:
    inter_broker = ctx.services.inter_broker
    error = await inter_broker.controller_request_error(req)
    if error is not None:
        return StopReplicaResponse(error_code=error, partition_errors=[])
    errors = await inter_broker.stop_replicas(req)
    return StopReplicaResponse(error_code=ErrorCode.NONE, partition_errors=[
        StopReplicaPartitionError(topic_name=t, partition_index=p, error_code=code)
        for (t, p), code in errors.items()])


@INTER_BROKER.register(6, 8, 8)
async def handle_update_metadata(ctx: RequestContext, req: UpdateMetadataRequest) -> UpdateMetadataResponse:
    inter_broker = ctx.services.inter_broker
    error = await inter_broker.controller_request_error(req)
    if error is not None:
        return UpdateMetadataResponse(error_code=error)
    inter_broker.apply_update_metadata(req)
    return UpdateMetadataResponse(error_code=ErrorCode.NONE)


@INTER_BROKER.register(7, 3, 3)
async def handle_controlled_shutdown(ctx: RequestContext, req: ControlledShutdownRequest
                                     ) -> ControlledShutdownResponse:
    inter_broker = ctx.services.inter_broker
    if not await inter_broker.is_registered_broker(req.broker_id):
        return ControlledShutdownResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                          remaining_partitions=[])
    if not inter_broker.controller_active:
        return ControlledShutdownResponse(error_code=ErrorCode.NOT_CONTROLLER, remaining_partitions=[])
    result = await inter_broker.controlled_shutdown(req.broker_id, req.broker_epoch)
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
    inter_broker = ctx.services.inter_broker
    if not await inter_broker.is_registered_broker(req.broker_id):
        return AlterPartitionResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, topics=[])
    if not await inter_broker.controller_ready(ALTER_PARTITION_FAILOVER_WAIT_S):
        return AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER, topics=[])
    return await inter_broker.alter_partition(req, ctx.api_version)
