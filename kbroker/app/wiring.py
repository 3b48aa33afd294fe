"""The composition root's one job for requests: build the broker's coordinators and its
``Services`` (kbroker/server/services.py) from the objects that implement its ports, once, at
start-up (``assemble``).

Single node: the state's stores, ``LocalReplicas`` (leads everything, acks=all returns at
once), the single-node metadata view, ``AllowAll`` and ``NoAcls`` when no authorizer is
configured, ``LocalConfigAdmin`` (config changes go to the log-dir stores).
Cluster mode: the same stores, the runtime's ``ReplicaManager`` and its metadata cache's view,
``ZkConfigAdmin`` (config changes go to ZooKeeper too).
Called after the logs are loaded (``BrokerState``) and before the listeners accept a
connection.  ``Node`` keeps what the broker process itself starts, ticks and stops.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbroker.coordinators.group_service import GroupService
from kbroker.coordinators.local_coordinators import LocalCoordinators
from kbroker.coordinators.producer_ids import ProducerIdManager, ProducerIds
from kbroker.coordinators.topics_image import TopicsImageSource
from kbroker.coordinators.txn_service import TxnService
from kbroker.handlers.write_txn_markers import write_txn_markers
from kbroker.metadata.metadata_view import ClusterMetadata, SingleNodeMetadata
from kbroker.replica.local_config_admin import LocalConfigAdmin
from kbroker.replica.local_controller import LocalController
from kbroker.replica.local_replicas import LocalReplicas
from kbroker.replica.local_topic_admin import LocalTopicAdmin
from kbroker.security.authorizer import ALLOW_ALL, NO_ACLS
from kbroker.server.services import Services
from kbroker.zk.zk_config_admin import ZkConfigAdmin
from kbroker.zk.zk_controller import ZkController
from kbroker.zk.zk_coordinators import ZkCoordinators
from kbroker.zk.zk_inter_broker import NoInterBroker, ZkInterBroker
from kbroker.zk.zk_topic_admin import ZkTopicAdmin

if TYPE_CHECKING:
    from kbroker.replica.broker_state import BrokerState
    from kbroker.replica.replica_manager import ReplicaManager
    from kbroker.zk.cluster_runtime import ClusterRuntime

__all__ = ["Node", "assemble", "build_services"]


@dataclass(frozen=True, slots=True)
class Node:
    """One broker's parts around its partition store: the coordinators (started, ticked
    and stopped by kbroker/app/broker.py), the replicas, and the ports handed to requests."""
    state: BrokerState
    producer_ids: ProducerIds
    groups: GroupService
    txns: TxnService
    replicas: LocalReplicas | ReplicaManager
    services: Services

    def close(self) -> None:
        """On a thread, after the logs closed: what the producer-id and transaction
        stores still have queued reaches their files."""
        self.producer_ids.close()
        self.txns.close()


def assemble(state: BrokerState, cluster: ClusterRuntime | None = None) -> Node:
    """Single node (``cluster`` None): ids from a file in the first log dir, a replica
    layer whose waits return at once.  Cluster mode: ids from ZooKeeper blocks and the
    runtime's replica manager (``ClusterRuntime.attach``)."""
    producer_ids: ProducerIds = (cluster.producer_ids if cluster is not None
                                 else ProducerIdManager(state.log_manager.log_dirs[0]))
    replicas = cluster.attach(state) if cluster is not None else LocalReplicas(state.partition)
    groups = GroupService(state, replicas)
    txns = TxnService(state, replicas, producer_ids)   # the transaction coordinator
    if cluster is not None:
        cluster.host_coordinators(groups, txns)
    services = _services(state, cluster, groups, txns, producer_ids, replicas)
    return Node(state, producer_ids, groups, txns, replicas, services)


def _services(state: BrokerState, cluster: ClusterRuntime | None, groups: GroupService, txns: TxnService,
              producer_ids: ProducerIds, replicas: LocalReplicas | ReplicaManager) -> Services:
    metadata = (ClusterMetadata(state.config.listeners[0].name, cluster.cache, lambda: cluster.controller_id)
                if cluster is not None else SingleNodeMetadata(state))
    # the consumer group protocol reads topics (ids, partitions, racks) through the same port
    groups.coordinator.consumer.topics = TopicsImageSource(metadata, state.clock.milliseconds)
    services = Services(
        node_id=state.node_id,
        cluster_id=state.cluster_id,
        config=state,
        catalog=state,
        replicas=replicas,
        metadata=metadata,
        authorizer=state.authorizer if state.authorizer is not None else ALLOW_ALL,
        groups=groups,
        txns=txns,
        producer_ids=producer_ids,
        quotas=state.quotas,
        scram=state.scram_credentials,
        fetch_waiters=state.fetch_waiters,
        fetch_sessions=state.fetch_sessions,
        clock=state.clock,
        coordinators=(ZkCoordinators(cluster.cache, cluster.zk, state, txns) if cluster is not None
                      else LocalCoordinators(state, groups, txns)),
        topic_admin=(ZkTopicAdmin(cluster.zk, cluster.cache, cluster.runner, cluster.live_brokers, state)
                     if cluster is not None else LocalTopicAdmin(state, metadata.name_for_id, groups.on_partitions_deleted)),
        config_admin=(ZkConfigAdmin(state, cluster.zk, cluster.cache) if cluster is not None
                      else LocalConfigAdmin(state)),
        acls=state.authorizer if state.authorizer is not None else NO_ACLS,
        controller=(ZkController(cluster.runner, cluster.cache) if cluster is not None
                    else LocalController(state.node_id, state)),
        inter_broker=(ZkInterBroker(cluster, groups.on_partitions_deleted) if cluster is not None
                      else NoInterBroker()),
    )
    # the transaction coordinator writes the markers of partitions this broker leads itself
    txns.markers.local_writer = functools.partial(write_txn_markers, services)
    return services


def build_services(state: BrokerState) -> Services:
    """A single node's ``Services`` over ``state`` (tests and micro-benchmarks that drive
    handlers in process, without a server)."""
    return assemble(state).services
