"""``ClusterRuntime``: the broker's life in a ZooKeeper cluster (Kafka's ``KafkaServer``
start-up and shutdown steps of ZooKeeper mode).

Start-up, in Kafka's order:

1. :meth:`connect`: open the session (``zookeeper.connect``, ``zookeeper.session.timeout.ms``;
   no answer within ``zookeeper.connection.timeout.ms`` fails start-up), create the
   persistent top-level paths (``createTopLevelPaths``), and get or create ``/cluster/id``
   (``getOrGenerateClusterId``), which the log dirs' ``meta.properties`` must match.
2. :meth:`start` (once the listener is bound): register ``/brokers/ids/<id>`` (ephemeral,
   Kafka's JSON; the broker epoch is its czxid; an id held by a live broker refuses start-up
   with Kafka's "node already exists" message), then start the controller runner, which
   campaigns for ``/controller``.

While running: a LOST session (expired: our ephemerals are gone) resigns the controller;
when kazoo has a new session the broker registers again and campaigns again.

Shutdown: with ``controlled.shutdown.enable`` the broker first sends ControlledShutdown to
the controller and retries (``controlled.shutdown.max.retries``, ``...retry.backoff.ms``)
until the controller has moved every leadership it can (Kafka's ``controlledShutdown``);
then the session is closed, so the registration disappears at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from cluster import znodes
from cluster.coordination import CoordinationError, NodeExistsError, NoNodeError, SessionState
from cluster.metadata_image import BrokerInfo
from kbroker.coordinators.producer_ids import ZkProducerIdManager
from kbroker.coordinators.txn_marker_sender import ClusterLinks
from kbroker.interbroker import inter_broker_client
from kbroker.interbroker.broker_channel import send_once
from kbroker.metadata.metadata_cache import MetadataCache
from kbroker.replica.alter_partition_manager import AlterPartitionManager
from kbroker.replica.broker_state import new_cluster_id
from kbroker.replica.replica_manager import ReplicaManager
from kbroker.runtime.tasks import TaskSet, task_name
from kbroker.security.listeners import inter_broker_listener_name, protocol_map
from kbroker.zk.acl_zk_store import AclZkStore
from kbroker.zk.acl_zk_store import start_in_cluster as start_acls_in_cluster
from kbroker.zk.controller_runner import ControllerRunner
from kbroker.zk.topic_config_sync import ConfigChangeListener
from kbroker.zk.zk_client import ZkClient
from wire.error_codes import ErrorCode
from wire.messages import AlterPartitionRequest, AlterPartitionResponse, ControlledShutdownRequest

if TYPE_CHECKING:
    from kbroker.configs.config import BrokerConfig
    from kbroker.coordinators.group_service import GroupService
    from kbroker.coordinators.txn_service import TxnService
    from kbroker.replica.broker_state import BrokerState

__all__ = ["ClusterRuntime"]

log = logging.getLogger("kbroker.cluster")

CONTROLLED_SHUTDOWN_VERSION = 3


class ClusterRuntime:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker_id = config.node_id
        self.zk = ZkClient(config["zookeeper.connect"], config["zookeeper.session.timeout.ms"],
                           config["zookeeper.connection.timeout.ms"])
        self.cache = MetadataCache(self.broker_id)
        self.cluster_id: str | None = None
        self.broker_epoch = -1
        self.state: BrokerState | None = None
        self.replicas: ReplicaManager | None = None
        self.inter_broker_listener = inter_broker_listener_name(config)
        # how this broker connects to the others' inter-broker listener (TLS, SASL login)
        inter_broker_client.configure(config, self.inter_broker_listener)
        interval = config["leader.imbalance.check.interval.seconds"]
        self.runner = ControllerRunner(
            self.zk, self.broker_id, self.inter_broker_listener,
            delete_topic_enable=config["delete.topic.enable"],
            unclean_leader_election=config["unclean.leader.election.enable"],
            leader_imbalance_per_broker_percentage=config["leader.imbalance.per.broker.percentage"],
            auto_rebalance_interval_s=interval if config["auto.leader.rebalance.enable"] else None)
        self._registration: znodes.BrokerRegistration | None = None
        # Leaders' ISR changes to the controller (AlterPartition, KIP-497).
        self.alter_partitions = AlterPartitionManager(
            self.broker_id, lambda: self.broker_epoch, self._send_alter_partition,
            topic_id=lambda t: None if (info := self.cache.topic(t)) is None else info.topic_id,
            epoch_of=self._known_broker_epoch)
        self.configs: ConfigChangeListener | None = None
        # ids unique cluster-wide; generate() answers ProducerIdsNotReady until start()
        # has claimed the first block
        self.producer_ids = ZkProducerIdManager(self.zk, self.broker_id)
        self._session_lost = False
        self._tasks = TaskSet()   # re-registration and re-reads after a new session
        self.shutting_down = False

    # -- start-up ------------------------------------------------------------------------

    async def connect(self) -> str:
        """Open the session, create the top-level paths, return the cluster id."""
        await self._create_chroot()
        await self.zk.start()
        for path in znodes.PERSISTENT_PATHS:
            await self.zk.ensure_path(path)
        try:
            data, _ = await self.zk.get(znodes.CLUSTER_ID_PATH)
            self.cluster_id = znodes.decode_cluster_id(data)
        except NoNodeError:
            cluster_id = new_cluster_id()
            try:
                await self.zk.create(znodes.CLUSTER_ID_PATH, znodes.encode_cluster_id(cluster_id),
                                     make_parents=True)
                self.cluster_id = cluster_id
            except NodeExistsError:
                data, _ = await self.zk.get(znodes.CLUSTER_ID_PATH)
                self.cluster_id = znodes.decode_cluster_id(data)
        return self.cluster_id

    async def _create_chroot(self) -> None:
        """``zookeeper.connect=h1:2181,h2:2181/kbroker``: create ``/kbroker`` if missing, on
        a session without the chroot (KafkaServer.initZkClient does the same)."""
        connect = self.config["zookeeper.connect"]
        hosts, slash, chroot = connect.partition("/")
        if not slash or not chroot.strip("/"):
            return
        bare = ZkClient(hosts, self.config["zookeeper.session.timeout.ms"],
                        self.config["zookeeper.connection.timeout.ms"])
        await bare.start()
        try:
            await bare.ensure_path("/" + chroot.strip("/"))
        finally:
            await bare.close()

    def attach(self, state: BrokerState) -> ReplicaManager:
        """Build what serves requests in cluster mode (the replica manager, the config
        listener), on the loop, after the logs are loaded and before the listeners accept
        anything: the broker's ports (kbroker/app/wiring.py) are built from these once.  Nothing
        here talks to ZooKeeper yet; :meth:`start` does.  Returns the replica manager (the
        ``Replicas`` port in cluster mode)."""
        self.state = state
        self.cache.min_insync_replicas = lambda topic: state.topic_configs.config_for(topic).min_insync_replicas
        self.replicas = ReplicaManager(state, self.cache, self.zk, self.inter_broker_listener, self.alter_partitions)
        self.configs = ConfigChangeListener(state, self.zk)
        return self.replicas

    def host_coordinators(self, groups: GroupService, txns: TxnService) -> None:
        """After :meth:`attach`: the internal topics' hosts of ``groups`` and ``txns`` load
        and unload their partitions on leadership, and the transaction coordinator learns
        who leads what and how to reach the other brokers."""
        assert self.replicas is not None, "attach() comes first"
        for host in (groups.host, txns.host):
            self.replicas.follow_internal_topic(host)
        txns.markers.cluster = ClusterLinks(self.cache, self.replicas, self.inter_broker_listener)

    async def start(self) -> None:
        """Register this broker and start the controller runner (the listener is bound)."""
        state = self.state
        assert state is not None and self.configs is not None, "attach() comes first"
        # every listener's advertised endpoint (Kafka registers them all); clients get the one
        # of the listener they came on, brokers the inter-broker listener's
        protocols = protocol_map(state.config)
        endpoints = tuple(znodes.EndPoint(lst.name, *state.advertised_address(lst.name),
                                          protocols.get(lst.name, "PLAINTEXT"))
                          for lst in state.config.listeners)
        self._registration = znodes.BrokerRegistration(
            self.broker_id, endpoints,
            rack=state.config["broker.rack"], timestamp_ms=int(time.time() * 1000))
        self.broker_epoch = await self.zk.register_broker(self._registration)
        self.producer_ids.start()
        self.zk.add_session_listener(self._on_session)
        await self.configs.start()
        await start_acls_in_cluster(state.authorizer, self.zk)   # ACLs live in ZooKeeper (kbroker/zk/acl_zk_store.py)
        self.runner.start()

    # -- session -------------------------------------------------------------------------

    def _on_session(self, s: SessionState) -> None:
        if self.shutting_down:
            return
        if s is SessionState.LOST:
            log.warning("ZooKeeper session expired: re-registering broker %d when reconnected",
                        self.broker_id)
            self._session_lost = True
            self.runner.session_lost()
        elif s is SessionState.SUSPENDED:
            log.info("ZooKeeper connection lost; the session may survive")
        elif s is SessionState.CONNECTED and not self._session_lost:
            log.info("ZooKeeper connection re-established (same session)")
        elif s is SessionState.CONNECTED and self._session_lost and not self.shutting_down:
            self._session_lost = False
            self._spawn(self._reregister())

    def _spawn(self, coro: Any) -> None:
        self._tasks.spawn(coro)   # none once stopping (TaskSet.aclose)

    async def _reregister(self) -> None:
        assert self._registration is not None
        while not self.shutting_down:
            try:
                self.broker_epoch = await self.zk.register_broker(self._registration)
                break
            except CoordinationError as e:
                log.warning("re-registering broker %d failed (%r); retrying", self.broker_id, e)
                await asyncio.sleep(1.0)
        self.runner.session_renewed()
        if self.configs is not None:
            self._spawn(self.configs.start())  # the new session has none of our watches
            self._spawn(start_acls_in_cluster(self.state.authorizer if self.state else None, self.zk))

    # -- queries -------------------------------------------------------------------------

    @property
    def controller_id(self) -> int:
        """The controller as last learned (UpdateMetadata, else our own watch)."""
        if self.runner.is_active:
            return self.broker_id
        cid = self.runner.active_controller_id
        return cid if cid >= 0 else self.cache.controller_id

    def live_brokers(self) -> list[BrokerInfo]:
        """The brokers to place replicas on: the controller's own view while this broker is
        the controller (its metadata cache learns of a failover only from the UpdateMetadata
        the failover ends with), else the metadata cache's."""
        ctx = self.runner.controller.context
        if ctx is not None:
            return [ctx.brokers[b] for b in sorted(ctx.live_broker_ids())]
        return self.cache.live_brokers()

    # -- AlterPartition transport -------------------------------------------------------

    def _known_broker_epoch(self, broker_id: int) -> int:
        """A broker's epoch (registration czxid) where this broker knows it, else -1: its own,
        or any while it is the controller (a ZooKeeper-mode UpdateMetadata carries none)."""
        if broker_id == self.broker_id:
            return self.broker_epoch
        ctx = self.runner.controller.context
        return -1 if ctx is None else ctx.broker_epoch(broker_id)

    async def _send_alter_partition(self, req: AlterPartitionRequest, version: int) -> AlterPartitionResponse:
        """To the active controller: our own runner, or over the inter-broker listener.
        Raises ConnectionError while no controller is known (the manager retries)."""
        controller = self.controller_id
        if controller < 0:
            try:
                data, _ = await self.zk.get(znodes.CONTROLLER_PATH)
            except CoordinationError as e:  # NoNode: none elected; or ZooKeeper unreachable
                raise ConnectionError(f"no controller known ({e!r})") from None
            controller = znodes.decode_controller(data)
        if controller == self.broker_id:
            if not await self.runner.wait_ready(30.0):
                return AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER, topics=[])
            return await self.runner.alter_partition(req, version)
        info = self.cache.broker(controller)
        endpoint = None if info is None else (
            info.endpoint(self.inter_broker_listener) or (info.endpoints[0] if info.endpoints else None))
        if endpoint is None:
            try:
                data, _ = await self.zk.get(znodes.broker_path(controller))
            except CoordinationError as e:
                raise ConnectionError(f"controller {controller} not reachable ({e!r})") from None
            endpoint = znodes.decode_broker(controller, data).endpoints[0]
        return await send_once(endpoint.host or "localhost", endpoint.port, req, version,
                               f"broker-{self.broker_id}-alter-partition")

    # -- shutdown ------------------------------------------------------------------------

    async def controlled_shutdown(self) -> bool:
        """Ask the controller to move our leaderships away; True when it reported none left."""
        cfg = self.config
        retries = cfg["controlled.shutdown.max.retries"]
        backoff_s = cfg["controlled.shutdown.retry.backoff.ms"] / 1000
        for attempt in range(1, retries + 1):
            try:
                error, remaining = await self._controlled_shutdown_once()
            except (OSError, TimeoutError, asyncio.IncompleteReadError, CoordinationError) as e:
                error, remaining = None, None
                log.warning("controlled shutdown attempt %d failed: %r", attempt, e)
            if error == ErrorCode.NONE and not remaining:
                log.info("controlled shutdown succeeded")
                return True
            if error is not None:
                log.warning("controlled shutdown attempt %d: error %s, %d partition(s) still led "
                            "here: %s", attempt, ErrorCode(error).name, len(remaining or []),
                            remaining)
            if attempt < retries:
                await asyncio.sleep(backoff_s)
        log.warning("controlled shutdown did not complete after %d attempt(s); proceeding to an "
                    "unclean shutdown", retries)
        return False

    async def _controlled_shutdown_once(self) -> tuple[int, list[tuple[str, int]]]:
        controller = self.controller_id
        if controller < 0:
            try:
                data, _ = await self.zk.get(znodes.CONTROLLER_PATH)
                controller = znodes.decode_controller(data)
            except NoNodeError:
                return ErrorCode.NOT_CONTROLLER, []
        if controller == self.broker_id:
            result = await self.runner.controlled_shutdown(self.broker_id, self.broker_epoch)
            return result.error_code, list(result.remaining_partitions)
        info = self.cache.broker(controller)
        endpoint = None if info is None else (
            info.endpoint(self.inter_broker_listener) or (info.endpoints[0] if info.endpoints else None))
        if endpoint is None:
            data, _ = await self.zk.get(znodes.broker_path(controller))
            reg = znodes.decode_broker(controller, data)
            endpoint = reg.endpoints[0]
        resp = await send_once(endpoint.host or "localhost", endpoint.port,
                               ControlledShutdownRequest(broker_id=self.broker_id,
                                                         broker_epoch=self.broker_epoch),
                               CONTROLLED_SHUTDOWN_VERSION, f"broker-{self.broker_id}")
        return resp.error_code, [(p.topic_name, p.partition_index) for p in resp.remaining_partitions]

    async def stop(self) -> None:
        """Every task of the cluster side ends here, on the loop, before the session
        closes (re-registration, AlterPartition sends, the controller and its broker links,
        the ISR task and the replica fetchers, the config, ACL and producer-id watchers);
        each refuses new work afterwards, since the listeners still answer while the logs
        flush.  The session closes last: a watch it fires meanwhile starts nothing."""
        self.shutting_down = True
        for task in await self._tasks.aclose():
            log.warning("cluster task did not stop: %s", task_name(task))
        await self.alter_partitions.aclose()
        await self.runner.stop()
        if self.replicas is not None:
            await self.replicas.stop()
        if self.configs is not None:
            await self.configs.aclose()
        await self.producer_ids.aclose()
        state = self.state
        if state is not None:
            store = state.authorizer.store if state.authorizer is not None else None
            if isinstance(store, AclZkStore):
                await store.aclose()
        await self.zk.close()
