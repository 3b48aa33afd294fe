"""What the tests run on, in one place: no test module here but the support code's own tests.

- processes: ``broker_process`` (a ``kbroker serve`` process), ``zookeeper_process``,
  ``cluster_processes`` (ZooKeeper and three brokers), ``replication_harness`` and
  ``netns`` (network namespaces), ``faults``, ``load_client``, ``group_member`` and
  ``eos_worker`` (clients in processes of their own, with ``eos_run`` driving the latter);
- certificates and security: ``security_certs``, ``security_helpers``;
- clients: ``wire_client`` (kbroker.client with the raw-request tests' signatures),
  ``java_admin`` and ``java/`` (Kafka's Java clients), ``kafka_tools`` (Kafka's own tools),
  ``request_recorder`` (a relay noting the versions a client chose), ``metrics_scrape``;
- fakes of the ports: ``fakes`` (a ``Services`` of null objects for handler tests),
  ``controller_harness`` (the controller over the in-memory ZooKeeper);
- workloads and checkers: ``txn_workload``, ``py_clients_workload``, ``group_helpers``,
  ``admin_helpers``, ``replication_checker``, ``shutdown_log``;
- ``requirements_helper``: the ``needs_tool`` mark (a missing tool skips, or fails under CI).
"""
