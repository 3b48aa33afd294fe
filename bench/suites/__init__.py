"""Suites: process-level benchmarks, most of them behind a ``make bench*`` target.

Theory of operation
-------------------
Each suite starts fresh broker processes (kbroker, and Apache Kafka where the figure is a
ratio), runs client workloads against them over TCP (confluent-kafka, Kafka's Java perf
tools, or ``kbroker.client``) and reads what it needs of the broker from outside: wall
time, the process's CPU and memory from /proc, ``/metrics``.  Nothing here imports the
broker's internals, so a suite measures any revision of the tree.  A suite writes its
report to ``bench/results/<name>.md`` and its raw figures to ``.json`` (bench/README.md
says which file is whose); the report ends in a history table of the earlier runs
(``bench.harness.history``).
"""
