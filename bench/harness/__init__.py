"""The shared harness of the benchmarks.

Theory of operation
-------------------
* ``kafka_dist``: a real single-node KRaft Apache Kafka broker and Kafka's Java perf tools,
  run from the jars of ``make kafka-jars`` exactly as ``kafka-server-start.sh`` would.
  kbroker is started by ``tests/support/broker_process.py``'s ``BrokerProcess``; both have the
  same ``bootstrap``/``pid`` face, so a workload does not know which broker it drives.
* ``common``: the settings both brokers get (``COMMON``), where reports go (``RESULTS``) and
  the byte-compilation of kbroker before a timed start.
* ``workloads``: the client side, each a function of a bootstrap address (confluent-kafka
  produce and consume, the fill, end-to-end latency, cold start) plus /proc readings of a
  process (CPU seconds, peak RSS).
* ``paired``: both brokers fresh per repetition, every measurement on one and then the
  other, the first alternating; ratios kbroker/Kafka within a repetition, summarised as
  median (min-max) over repetitions.
* ``machine``: the CPU, memory, disk, load and versions a report states.
* ``report``: the side-by-side report (tables and PNG charts from its JSON).
* ``history``: every suite's report ends in a history table: writing a report keeps the
  rows already there and adds this run's one-line summary.
* ``loop_probe``: ``kbroker serve`` with a thread that times its event loop's stalls
  (the shutdown suite runs the broker through it).
"""
