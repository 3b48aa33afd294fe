"""Benchmarks: figures, never pass/fail tests.

Theory of operation
-------------------
* ``bench.harness`` starts the brokers and drives the clients: a real Apache Kafka from the
  jars of ``make kafka-jars`` (``kafka_dist``), kbroker as ``python -m kbroker serve``, the
  client workloads both get (``workloads``), the side-by-side frame that measures each pair
  seconds apart in alternating order (``paired``), the machine facts a report carries
  (``machine``) and the report with its history table (``report``, ``history``).
* ``bench.suites`` are the benchmarks behind ``make bench*`` targets and the other
  process-level runs: each starts brokers, runs workloads against them over TCP and writes
  one report, ``bench/results/<suite>.md`` with its ``.json``.
* ``bench.micro`` are in-process micro-benchmarks of one layer (``wire`` codecs, ``log``
  storage, the cleaner) or, for the broker's request paths, a real broker process driven by
  the project's protocol client (``kbroker.client``) with the process's CPU read from /proc:
  none reaches into the broker's state, so a refactor of ``kbroker/`` does not break them
  (an import-linter contract in pyproject.toml keeps bench/ off kbroker's rooms).
* A run's report replaces the suite's previous one and adds a row to its history table;
  the figures of earlier runs stay as rows of that table, not as folders per run.

bench/README.md lists every suite and micro-benchmark, what it measures and its result file.
"""
