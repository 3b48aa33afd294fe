"""A soak test for kbroker in cluster mode (issue 28: requests of one connection take effect
in order): ``make soak [SOAK_MINUTES=30]`` or ``python -m tests.soak --minutes N``; a bounded
variant runs in ``make test`` (test_soak_short.py).

Theory of operation.  A real ZooKeeper and three real kbroker processes (environment.py;
each in a network namespace of its own when run as root, tests/support/netns.py) serve two
topics of 3 partitions, replication factor 3, min.insync.replicas=2, and the internal
``__consumer_offsets`` and ``__transaction_state`` with the same replication.  Stock
confluent-kafka clients, each a child process (workers.py, producers.py, consumers.py),
write down everything the cluster acknowledges to them, line by line, as it happens:

- two idempotent producers (acks=all, 5 requests in flight) and the offsets they were given;
- two transactional producers, committing most transactions and aborting about a quarter,
  and which transactions' commit or abort returned;
- a consumer group of two members (auto commit off) committing asynchronously every few
  records and fetching the committed offsets four times a second, with every commit callback and
  every rebalance callback, in the order the member saw them;
- a sampler asking each partition's leader for its high watermark twice a second.

Meanwhile the nemesis (nemesis.py) takes turns at kill -9 of a broker, SIGSTOP of a broker
past its ZooKeeper session, cutting a broker off from ZooKeeper and its peers, restarting
ZooKeeper, and a rolling restart (SIGTERM each broker in turn), each followed by the wait
for full health.  Then the workers stop, a read-back reads every partition from its start
(read_committed, and read_uncommitted for the transactional topic), and checks.py holds
the histories against what was read and against the brokers' logs: nothing acknowledged
lost, duplicated or misplaced, no aborted record read, committed offsets and high
watermarks never going backwards, no unhandled exception logged.  report.py prints the
table; the exit status is 1 when any check failed.

Only acknowledged facts count, and every wait is a condition with a generous deadline, so
the verdict does not depend on how busy the machine is: a slow run acknowledges fewer
records and commits, it does not fail.
"""
