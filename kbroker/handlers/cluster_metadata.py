"""What Metadata (key 3) and DescribeCluster (key 60) do differently in cluster mode; the
answers themselves come from the metadata cache through kbroker/metadata_view.py's
``ClusterView`` (as Kafka's ZkMetadataCache answers them) and metadata.py's one code path.

* Auto-creation (Metadata v1-3 always, v4+ when asked, ``auto.create.topics.enable``):
  the broker writes the topic znodes itself as Kafka 2.x's ZooKeeper mode did
  (AdminZkClient; any broker may) with ``num.partitions`` and
  ``default.replication.factor``, and answers LEADER_NOT_AVAILABLE for it; the client asks
  again once the controller has elected leaders.  Too few live brokers for the replication
  factor: INVALID_REPLICATION_FACTOR for that topic.  The znode writes wait out a lost
  ZooKeeper connection for up to ``zookeeper.connection.timeout.ms`` (kbroker/zk_retry.py);
  if it is not back by then the topic still answers LEADER_NOT_AVAILABLE (the client asks
  again) where Kafka answered the ZooKeeper timeout as UNKNOWN_SERVER_ERROR.
* DescribeCluster lists every live broker with its endpoint on the listener the request
  came in on (the one listener here), and rack.
"""

from __future__ import annotations

from cluster.assignment import AdminOperationError
from kbroker import zk_admin
from kbroker.metadata_view import ClusterView
from kbroker.request_context import RequestContext
from kbroker.zk_retry import ZkUnavailableError
from wire.error_codes import ErrorCode


async def auto_create_in_cluster(ctx: RequestContext, name: str) -> ErrorCode:
    """Write topic ``name``'s znodes; the error its Metadata entry answers meanwhile."""
    state = ctx.broker
    cluster = state.cluster
    assert cluster is not None
    try:
        assignment = zk_admin.assign(cluster.cache.live_brokers(), state.config["num.partitions"],
                                     state.config["default.replication.factor"])
    except (AdminOperationError, ValueError):
        return ErrorCode.INVALID_REPLICATION_FACTOR
    try:
        await zk_admin.create_topic(cluster.zk, name, assignment, {})
    except (zk_admin.TopicExistsError, ZkUnavailableError):
        pass
    return ErrorCode.LEADER_NOT_AVAILABLE


def live_brokers_for_describe(ctx: RequestContext) -> list[tuple[int, str, int, str | None]]:
    """(id, host, port, rack) of every live broker, for DescribeCluster."""
    state = ctx.broker
    assert state.cluster is not None
    return [(b.node_id, b.host, b.port, b.rack) for b in ClusterView(state, state.cluster).brokers()]
