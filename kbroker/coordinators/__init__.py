"""coordinators: the group and transaction coordinators adapted to the running broker.

Theory of operation: the coordinators' logic is pure and lives below kbroker/ (groups/,
txn/: state machines over an injected clock that return the records to write and the
answers to give).  ``group_service.GroupService`` and ``txn_service.TxnService`` run them
here: each owns one internal topic through ``internal_topic`` (the one host of
``__consumer_offsets`` and ``__transaction_state``: create the topic on first use, load and
replay a partition when this broker leads it, unload it when it stops leading, append a
coordinator's records with acks=all and answer once they are replicated), and each ticks
its coordinator's timers.  ``txn_marker_sender`` writes COMMIT/ABORT markers to the
partitions' leaders (this broker's own through the WriteTxnMarkers handler, others over
inter-broker links); ``txn_verification`` is KIP-890 part 1 (a transactional batch is
appended only if its partition is in the transaction).  ``producer_ids`` hands out producer
ids that never repeat (a local file, or ZooKeeper blocks); ``local_coordinators`` answers
FindCoordinator on a single node.

Below: replica/ (partitions, the Replicas port), metadata/, interbroker/.  The ZooKeeper
side (zk/) sits above and hands the coordinators what they need of the cluster.
"""
