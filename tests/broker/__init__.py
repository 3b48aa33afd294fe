"""A whole kbroker in this process (``kbroker.Broker`` on 127.0.0.1, spoken to over TCP), or
started by the pytest plugin with ZooKeeper: the tests of kbroker/ that need a running
broker rather than one room's code.  Stock clients against a broker process are in
``tests/compat/``, clusters in ``tests/cluster/``."""
