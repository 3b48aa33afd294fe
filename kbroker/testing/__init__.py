"""testing: kbroker as a test fixture for other projects.

Theory of operation: installing kbroker registers ``pytest_plugin`` (entry point
``pytest11``): fixtures that start a broker, or a ZooKeeper cluster of brokers, on ports
chosen before start-up (``free_ports``, which keeps pytest-xdist workers apart) and stop it
after the test.  It starts brokers through ``kbroker.Broker`` or as processes, and talks to
them only over the protocol.
"""
