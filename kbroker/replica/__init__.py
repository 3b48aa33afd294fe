"""replica: the partitions this broker holds, and the one door to their logs.

Theory of operation: ``broker_state.BrokerState`` is the partition store: the topics and
``partition.Partition`` objects loaded from ``log.dirs`` (log/'s ``LogManager``), topic ids,
topic configs, the fetch purgatory and fetch sessions.  ``Partition`` is the only door to a
``log.Log``: appends as leader or follower, reads, and its own high watermark.  Who leads
what, and the acks=all wait, are the ``Replicas`` port with two implementations:
``local_replicas.LocalReplicas`` on a single node (leads everything; waits return at once)
and ``replica_manager.ReplicaManager`` in a ZooKeeper cluster (Kafka's ReplicaManager:
LeaderAndIsr, ISR changes through ``alter_partition_manager``, the produce purgatory of
``delayed_produce``, followers fetching through ``replica_fetcher``).  Topic creation and
deletion open and close logs off the event loop (``topic_creation``); the single-node
implementations of the admin ports (``local_topic_admin``, ``local_config_admin``,
``local_controller``) change this store directly.

Below: metadata/ (the topic catalog's vocabulary, the metadata cache), interbroker/,
security/, configs/, runtime/.
"""
