"""zk: the broker's life in a ZooKeeper cluster (Kafka's ZooKeeper-era KafkaServer).

Theory of operation: ``cluster_runtime.ClusterRuntime`` opens the ZooKeeper session
(``zk_client``, kazoo behind the ``cluster.coordination`` port), registers the broker, runs
the controller election and, on the elected broker, the controller's I/O half
(``controller_runner`` around the pure ``cluster.controller``), builds the replica manager
and follows the config, ACL and quota znodes (``topic_config_sync``, ``broker_config_sync``,
``acl_zk_store``, ``quotas_zk``).  The ZooKeeper implementations of the ports handlers use
live here: ``zk_topic_admin``, ``zk_config_admin``, ``zk_controller``,
``zk_coordinators`` and ``zk_inter_broker`` (LeaderAndIsr, UpdateMetadata, StopReplica).
Calls made on behalf of a request are retried through a lost connection
(``runtime.zk_retry``); nothing here blocks the event loop.

Above this room: server/, handlers/ (which see only ports) and app/.  Below: the
coordinators it hosts in a cluster, the replicas, metadata/ and interbroker/.
"""
