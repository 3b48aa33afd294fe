"""cluster: Kafka's ZooKeeper-mode control plane as pure logic (issue 13).  No I/O.

Theory of operation
-------------------
Several kbroker processes form one Kafka cluster coordinated through Apache ZooKeeper with
Kafka's own znode layout (``znodes``), so that ``zookeeper-shell`` shows what a Kafka 3.x
operator expects.  This package holds everything about it that can be decided without I/O;
``kbroker/`` owns the sockets, the kazoo session and the event loop.

* ``znodes``: every path and JSON codec of ``ZkData.scala``, byte-compatible with Kafka 3.9
  (``jvm_order`` reproduces the Scala/Java map orders Jackson writes keys in).
* ``coordination``: the port to the store (a ``Protocol``): create (persistent, ephemeral,
  sequential), get with its ``Stat`` (version, czxid, mzxid), conditional set/delete,
  children, one-shot data/child watches, atomic ``multi`` of check/create/set/delete, and
  session events.  ``fake_store`` implements it in memory with ZooKeeper's semantics for
  unit tests; ``kbroker.zk.zk_client`` implements it over kazoo against a real ZooKeeper, and
  tests/cluster/test_coordination_contract.py runs one behaviour suite against both.
* ``metadata_image``: the cluster as the brokers see it (live brokers with endpoints, rack
  and epoch, topics with ids and assignments, per-partition leader/epoch/ISR and the
  partition epoch), with the queries Metadata and DescribeCluster need.
* ``assignment``: ``AdminUtils.assignReplicasToBrokers`` (rack-unaware and rack-aware), its
  random start index and shift injectable so Kafka's own test vectors can be replayed.
* ``election``: ``PartitionLeaderElectionAlgorithms`` (offline with the unclean flag,
  reassignment, preferred replica, controlled shutdown) and the leader-and-ISR update rules
  for a broker's failure or controlled shutdown.
* ``controller`` (a package, Kafka's ``kafka.controller`` in ZooKeeper mode, 3.x): the
  controller as a pure state machine.  ``Controller(config).handle(event)`` takes one event
  (``events``: became controller with the cluster as read, broker set changed, topics
  changed, partitions added, deletion queued, a StopReplica(delete) answered, controlled
  shutdown, leader election (ElectLeaders, ``/admin/preferred_replica_election``), the
  auto-rebalance tick, a write's result, resign) and returns a ``ControllerOutput``
  (``commands``): ZooKeeper writes, each a ``multi`` guarded by
  ``check(/controller_epoch, version)`` (``fencing``; Kafka's
  ``wrapRequestWithControllerEpochCheck``, so a deposed controller's writes fail and it
  resigns), then LeaderAndIsr v7 / UpdateMetadata v8 / StopReplica v4 requests per broker
  (``request_batch``, ``wire`` message classes), plus the ControlledShutdown or
  ElectLeaders answer.  Inside: ``context`` (Kafka's ControllerContext: brokers with epochs,
  topic ids, assignments, leadership with the znode version, partition and replica
  states, deletion queues), ``partition_state_machine``, ``replica_state_machine``,
  ``topic_deletion``; the context is updated as each write is decided and any failed write
  makes the controller resign, so it never outlives a write ZooKeeper refused.
  ``controller.zk_io`` executes a write and reads the cluster over the coordination port,
  for the runner in kbroker and for tests on ``fake_store``.  ``controller.alter_partition``
  commits leaders' ISR changes (AlterPartition, KIP-497).  Not yet: partition
  reassignment, log-dir failures.

Rules
-----
* Kafka's source is the spec: names, formats, algorithms and error texts follow it; every
  module names the Kafka class it ports.
* No asyncio, sockets, threads or clocks here (import-linter enforces it); time is passed in
  as milliseconds by the caller.
* May import ``log`` and ``wire``; never ``groups`` or ``kbroker``.
"""
