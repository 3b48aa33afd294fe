"""kbroker's tests, by what they start (``make test`` runs them all; tests/spark and spark_it
need the Spark jars):

- ``unit/``: mirrors the source (``wire/``, ``log/``, ``groups/``, ``txn/``, ``cluster/``,
  ``kbroker/<room>/``); nothing but the code under test, in seconds: ``pytest tests/unit``;
- ``properties/``: the long property and exhaustive suites of wire/ and log/;
- ``broker/``: a whole ``kbroker.Broker`` in this process, spoken to over TCP;
- ``compat/``: stock clients (confluent-kafka, kafka-python, aiokafka, kcat, Kafka's Java
  clients and tools) against a real broker process;
- ``cluster/``: ZooKeeper and several broker processes: replication, faults, network
  partitions (and the contract of the coordination port against a real ZooKeeper);
- ``console/``, ``tools/``, ``spark/``, ``soak/``: the web console, the command-line tools,
  Spark's Kafka source and sink, the soak test's one-minute variant (``make soak`` runs it long);
- ``support/``: what they all run on (processes, ZooKeeper, network namespaces, certificates,
  the wire client, fakes of the ports, workloads and checkers), with its own tests.
"""
