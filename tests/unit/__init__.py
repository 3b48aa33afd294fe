"""Unit tests, mirroring the source: ``wire/``, ``log/``, ``groups/``, ``txn/``, ``cluster/`` and
``kbroker/<room>/`` (the room of the module each one tests), plus the import-graph test of
the whole tree.  No broker, ZooKeeper or JVM is started here (those tests are in
``tests/broker/``, ``tests/compat/``, ``tests/cluster/``); ``pytest tests/unit`` is the quick
run.  The long property suites of wire/ and log/ are in ``tests/properties/``."""
