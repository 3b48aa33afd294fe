"""The composition root's one job for requests: build the broker's ``Services``
(kbroker/services.py) from the objects that implement its ports, once, at start-up.

Single node: the state's stores, ``LocalReplicas`` (leads everything, acks=all returns at
once), the single-node metadata view, ``AllowAll`` and ``NoAcls`` when no authorizer is
configured, ``LocalConfigAdmin`` (config changes go to the log-dir stores).
Cluster mode: the same stores, the runtime's ``ReplicaManager`` and its metadata cache's view,
``ZkConfigAdmin`` (config changes go to ZooKeeper too).
Called after ``ClusterRuntime.attach`` (the replica manager and the cluster-wide producer ids
exist) and before the listeners accept a connection.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from kbroker.authorizer import ALLOW_ALL, NO_ACLS
from kbroker.handlers.write_txn_markers import write_txn_markers
from kbroker.local_config_admin import LocalConfigAdmin
from kbroker.local_controller import LocalController
from kbroker.local_coordinators import LocalCoordinators
from kbroker.local_topic_admin import LocalTopicAdmin
from kbroker.metadata_view import ClusterMetadata, SingleNodeMetadata
from kbroker.services import Services
from kbroker.zk_config_admin import ZkConfigAdmin
from kbroker.zk_controller import ZkController
from kbroker.zk_coordinators import ZkCoordinators
from kbroker.zk_inter_broker import NoInterBroker, ZkInterBroker
from kbroker.zk_topic_admin import ZkTopicAdmin

if TYPE_CHECKING:
    from kbroker.broker_state import BrokerState
    from kbroker.cluster_runtime import ClusterRuntime

__all__ = ["build_services"]


def build_services(state: BrokerState, cluster: ClusterRuntime | None = None) -> Services:
    replicas = state.replicas   # LocalReplicas, or the replica manager ClusterRuntime.attach() put there
    metadata = (ClusterMetadata(state.config.listeners[0].name, cluster.cache, lambda: cluster.controller_id)
                if cluster is not None else SingleNodeMetadata(state))
    services = Services(
        node_id=state.node_id,
        cluster_id=state.cluster_id,
        config=state,
        catalog=state,
        replicas=replicas,
        metadata=metadata,
        authorizer=state.authorizer if state.authorizer is not None else ALLOW_ALL,
        groups=state.groups,
        txns=state.txns,
        producer_ids=state.producer_ids,
        quotas=state.quotas,
        scram=state.scram_credentials,
        fetch_waiters=state.fetch_waiters,
        fetch_sessions=state.fetch_sessions,
        clock=state.clock,
        cluster=cluster,
        coordinators=(ZkCoordinators(cluster.cache, cluster.zk, state, state.txns) if cluster is not None
                      else LocalCoordinators(state, state.groups, state.txns)),
        topic_admin=(ZkTopicAdmin(cluster.zk, cluster.cache, cluster.runner, cluster.live_brokers, state)
                     if cluster is not None else LocalTopicAdmin(state, metadata.name_for_id)),
        config_admin=(ZkConfigAdmin(state, cluster.zk, cluster.cache) if cluster is not None
                      else LocalConfigAdmin(state)),
        acls=state.authorizer if state.authorizer is not None else NO_ACLS,
        controller=(ZkController(cluster.runner, cluster.cache) if cluster is not None
                    else LocalController(state.node_id, state)),
        inter_broker=(ZkInterBroker(cluster, state.groups.on_partitions_deleted) if cluster is not None
                      else NoInterBroker()),
    )
    # the transaction coordinator writes the markers of partitions this broker leads itself
    state.txns.markers.local_writer = functools.partial(write_txn_markers, services)
    return services
