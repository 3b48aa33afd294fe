"""``ZkInterBroker``: what the controller-to-broker and broker-to-controller APIs of ZooKeeper
mode do on this broker (the ``InterBroker`` port, kbroker/server/services.py; the handlers that
decode and answer them are kbroker/handlers/inter_broker.py).

Authorization: Kafka checks CLUSTER_ACTION on the Cluster resource, which without an
authorizer every principal has.  Here the check is on what a broker can prove and a client
cannot know: the sender must name a broker registered in ZooKeeper (the image of live
brokers first, then ``/brokers/ids/<id>`` itself, since the first UpdateMetadata arrives
before the cache knows anyone).  Then Kafka's own fencing: a controller epoch older than the
newest this broker has seen is STALE_CONTROLLER_EPOCH, and a broker epoch other than this
broker's registration czxid is STALE_BROKER_EPOCH (KIP-380; -1 = unknown, accepted).  The
``/brokers/ids/<id>`` read waits out a lost ZooKeeper connection (kbroker/runtime/zk_retry.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cluster import znodes
from kbroker.runtime.zk_retry import deadline, until_connected
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from kbroker.zk.cluster_runtime import ClusterRuntime

__all__ = ["NoInterBroker", "ZkInterBroker"]

TopicPartition = tuple[str, int]


class ZkInterBroker:
    def __init__(self, runtime: ClusterRuntime, on_partitions_deleted: Any) -> None:
        self._runtime = runtime
        self._on_partitions_deleted = on_partitions_deleted   # the group coordinator's hook

    async def is_registered_broker(self, broker_id: int) -> bool:
        cluster = self._runtime
        if broker_id < 0:
            return False
        if cluster.cache.broker(broker_id) is not None or broker_id == cluster.broker_id:
            return True

        async def read() -> bool:
            return await cluster.zk.exists(znodes.broker_path(broker_id)) is not None

        return await until_connected(read, deadline(cluster.zk), f"the registration of broker {broker_id}")

    async def controller_request_error(self, req: Any) -> ErrorCode | None:
        """Whether a LeaderAndIsr / StopReplica / UpdateMetadata may be applied."""
        if not await self.is_registered_broker(req.controller_id):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        if req.controller_epoch < self._runtime.cache.image.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if req.broker_epoch not in (-1, self._runtime.broker_epoch):
            return ErrorCode.STALE_BROKER_EPOCH
        return None

    async def become_leader_or_follower(self, req: Any) -> dict[TopicPartition, int]:
        replicas = self._runtime.replicas
        assert replicas is not None
        return await replicas.become_leader_or_follower(req)

    async def stop_replicas(self, req: Any) -> dict[TopicPartition, int]:
        replicas = self._runtime.replicas
        assert replicas is not None
        return await replicas.stop_replicas(req)

    def apply_update_metadata(self, req: Any) -> None:
        deleted = self._runtime.cache.apply_update_metadata(req)
        if deleted:   # KafkaApis.handleUpdateMetadataRequest (ZooKeeper mode): groupCoordinator.onPartitionsDeleted
            self._on_partitions_deleted(deleted)

    @property
    def controller_active(self) -> bool:
        return self._runtime.runner.is_active

    async def controller_ready(self, timeout_s: float) -> bool:
        return await self._runtime.runner.wait_ready(timeout_s)

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> Any:
        return await self._runtime.runner.controlled_shutdown(broker_id, broker_epoch)

    async def alter_partition(self, req: Any, version: int) -> Any:
        return await self._runtime.runner.alter_partition(req, version)


class NoInterBroker:
    """A single node has no controller and no other broker: nobody it could prove to be a
    registered broker, so every inter-broker request is CLUSTER_AUTHORIZATION_FAILED (the
    connection does not even route them here outside cluster mode)."""

    controller_active = False

    async def is_registered_broker(self, broker_id: int) -> bool:
        return False

    async def controller_request_error(self, req: Any) -> ErrorCode | None:
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    async def controller_ready(self, timeout_s: float) -> bool:
        return False

    async def become_leader_or_follower(self, req: Any) -> dict[TopicPartition, int]:
        raise AssertionError("refused by controller_request_error first")

    stop_replicas = become_leader_or_follower

    def apply_update_metadata(self, req: Any) -> None:
        raise AssertionError("refused by controller_request_error first")

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> Any:
        raise AssertionError("refused by is_registered_broker first")

    async def alter_partition(self, req: Any, version: int) -> Any:
        raise AssertionError("refused by is_registered_broker first")
