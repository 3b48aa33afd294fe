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
  unit tests; ``kbroker.zk_client`` implements it over kazoo against a real ZooKeeper, and
  tests/cluster/test_coordination_contract.py runs one behaviour suite against both.
* ``metadata_image``: the cluster as the brokers see it (live brokers with endpoints, rack
  and epoch, topics with ids and assignments, per-partition leader/epoch/ISR and the
  partition epoch), with the queries Metadata and DescribeCluster need.
* ``assignment``: ``AdminUtils.assignReplicasToBrokers`` (rack-unaware and rack-aware), its
  random start index and shift injectable so Kafka's own test vectors can be replayed.
* ``election``: ``PartitionLeaderElectionAlgorithms`` (offline with the unclean flag,
  reassignment, preferred replica, controlled shutdown) and the leader-and-ISR update rules
  for a broker's failure or controlled shutdown.
* ``controller``: the controller as a state machine.  It is fed events (became controller,
  broker registered/gone, topic created, partitions added, deletion requested, controlled
  shutdown, preferred election) and returns commands: ZooKeeper writes, each a ``multi``
  guarded by ``check(/controller_epoch, version)`` (Kafka's
  ``wrapRequestWithControllerEpochCheck``, so a deposed controller's writes fail), and
  LeaderAndIsr / UpdateMetadata / StopReplica requests (``wire`` message classes) per broker.

Rules
-----
* Kafka's source is the spec: names, formats, algorithms and error texts follow it; every
  module names the Kafka class it ports.
* No asyncio, sockets, threads or clocks here (import-linter enforces it); time is passed in
  as milliseconds by the caller.
* May import ``log`` and ``wire``; never ``groups`` or ``kbroker``.
"""
