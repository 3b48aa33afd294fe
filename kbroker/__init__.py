"""kbroker: the broker process.

Theory of operation: kbroker speaks Kafka's binary protocol (wire/) over asyncio and adapts
each request to the storage engine (log/), the coordinators' pure logic (groups/, txn/) and
the ZooKeeper-era controller (cluster/).  It is the only package that does network I/O or
runs an event loop; dependencies between packages point one way,
``kbroker -> (groups | cluster | txn) -> log -> wire``.

Inside, the broker is cut into rooms, each a package whose ``__init__.py`` says what it is.
Top to bottom, a room imports only rooms below it (pyproject.toml, "kbroker's rooms, one
way"; no import cycle anywhere, tests/unit/test_import_graph.py):

- ``testing``: the pytest plugin other projects install;
- ``app``: the composition root (``Broker``; ``wiring.assemble`` builds the ``Services``);
- ``tools``, ``console``: the client wing, which knows only the protocol (``client``);
- ``handlers``: one module per API family, seeing only the ports on the request context;
- ``server``: connections, the API registry, the request context, the ports (``services``);
- ``zk``: the broker's life in a ZooKeeper cluster, and its implementations of the ports;
- ``coordinators``: the group and transaction coordinators on their internal topics;
- ``replica``: the partition store, ``Partition`` (the one door to a log), the replicas;
- ``metadata`` | ``interbroker``: what the broker knows of the cluster; links to other brokers;
- ``security``: listeners, TLS, SASL, ACLs, quotas;
- ``configs`` | ``metrics`` | ``client`` | ``runtime``: configuration, hot-path counters, the
  one protocol client, asyncio helpers.
"""

from typing import Any

__all__ = ["Broker", "SyncBroker"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so that ``kbroker <tool>`` (kbroker/tools/) starts without
    # loading the broker: ``kbroker.Broker`` and ``from kbroker import Broker`` work as before.
    if name in __all__:
        from kbroker.app import broker
        return getattr(broker, name)
    raise AttributeError(f"module 'kbroker' has no attribute {name!r}")
