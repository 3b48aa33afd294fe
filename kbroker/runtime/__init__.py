"""runtime: asyncio helpers every room shares.

Theory of operation: ``tasks`` ends asyncio tasks at shutdown so none is left pending when
the loop closes (``TaskSet``, ``cancel_and_wait``, ``finish_loop``); ``zk_retry`` retries a
ZooKeeper call made on behalf of a request through a lost connection, within the
request's deadline, as Kafka's ZooKeeper client does.  A leaf: it imports nothing of the
broker (only ``cluster.coordination``'s errors).
"""
