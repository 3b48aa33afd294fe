"""DescribeCluster (key 60) v0-1 and DescribeLogDirs (key 35) v1-4.

DescribeCluster (Kafka's AuthHelper.computeDescribeClusterResponse): v1 carries the
endpoint type the client wants; this is a broker endpoint (1), so a request for the
controller (2) gets MISMATCHED_ENDPOINT_TYPE and an unknown type UNSUPPORTED_ENDPOINT_TYPE.
Every live broker is listed with its advertised address on the request's listener, and the
controller id as the metadata has it (a single node: itself, as a KRaft broker answers with
an alive broker's id).  Cluster authorized operations as in
Metadata when asked, INT32_MIN when not.

DescribeLogDirs (Kafka's ReplicaManager.describeLogDirs): one result per log dir (its
absolute path), listing every topic it holds with those of its partitions that were
requested (all when ``topics`` is null): size in bytes, offset lag 0 (only future
replicas lag), is_future_key false; v4 adds the filesystem's total and usable bytes.

Ports (kbroker/server/services.py): ``metadata``, ``catalog``, ``config``.
"""

from __future__ import annotations

import os

from kbroker.handlers.metadata import CLUSTER_OPERATIONS, INT_MIN
from kbroker.handlers.metadata_readiness import held_until_metadata_known
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)

ENDPOINT_BROKER, ENDPOINT_CONTROLLER = 1, 2


@REGISTRY.register(60, 0, 1)
@held_until_metadata_known
def handle_describe_cluster(ctx: RequestContext, req: DescribeClusterRequest) -> DescribeClusterResponse:
    services = ctx.services
    wanted = req.endpoint_type if ctx.api_version >= 1 else ENDPOINT_BROKER
    if wanted != ENDPOINT_BROKER:
        if wanted == ENDPOINT_CONTROLLER:
            code, message = (ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                             "The request was sent to an endpoint of type BROKER, but we wanted an "
                             "endpoint of type CONTROLLER")
        else:
            code, message = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {wanted}"
        return DescribeClusterResponse(throttle_time_ms=0, error_code=code, error_message=message,
                                       endpoint_type=ENDPOINT_BROKER, cluster_id="", controller_id=-1,
                                       brokers=[], cluster_authorized_operations=INT_MIN)
    # every live broker with its endpoint on the listener the request came in on (Kafka's
    # getAliveBrokerNodes(listenerName)); a single node is its only broker and controller
    view = services.metadata.view()
    return DescribeClusterResponse(
        throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=ENDPOINT_BROKER,
        cluster_id=services.cluster_id, controller_id=view.controller_id,
        brokers=[DescribeClusterResponse.DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port,
                                                               rack=b.rack)
                 for b in view.brokers(ctx.listener_name)],
        cluster_authorized_operations=CLUSTER_OPERATIONS if req.include_cluster_authorized_operations
        else INT_MIN)


@REGISTRY.register(35, 1, 4)
def handle_describe_log_dirs(ctx: RequestContext, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    services = ctx.services
    held = services.catalog.partitions
    R = DescribeLogDirsResponse
    if req.topics is None:
        wanted = set(held)
    else:
        wanted = {(t.topic, i) for t in req.topics for i in t.partitions}
    results = []
    for log_dir in services.config.static_config.log_dirs:
        path = os.path.abspath(log_dir)
        # Kafka groups every log of the dir by topic and then keeps the requested partitions,
        # so each topic held in the dir is listed, with an empty partition list when none of
        # its partitions was asked for (ReplicaManager.describeLogDirs).
        by_topic: dict[str, list] = {}
        for (topic, index), p in sorted(held.items()):
            if p.log_dir != path:
                continue
            parts = by_topic.setdefault(topic, [])
            if (topic, index) in wanted:
                parts.append(R.DescribeLogDirsPartition(
                    partition_index=index, partition_size=p.size_in_bytes, offset_lag=0, is_future_key=False))
        fs = os.statvfs(path)
        results.append(R.DescribeLogDirsResult(
            error_code=0, log_dir=path,
            topics=[R.DescribeLogDirsTopic(name=n, partitions=ps) for n, ps in by_topic.items()],
            total_bytes=fs.f_blocks * fs.f_frsize, usable_bytes=fs.f_bavail * fs.f_frsize))
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=results)
