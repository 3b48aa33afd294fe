"""app: the composition root: one broker process assembled, started and stopped.

Theory of operation: ``broker.Broker`` reads the configuration, joins ZooKeeper first in
cluster mode (its ``/cluster/id`` is the one the log dirs must carry), loads the logs off
the event loop into a ``replica.broker_state.BrokerState``, then ``wiring.assemble`` builds
the coordinators and the ``server.services.Services`` every request reaches the broker
through, once, before any listener accepts.  The rest of this room is what only a process
has: the background thread for log/'s due tasks (``background``), the cleaner threads and
their workers (``cleaner_processes``), flushing and closing the logs off the loop at
shutdown (``log_shutdown``), ``gc.freeze`` (``gc_freeze``), ``kill -USR1`` stack dumps
(``stack_dump``) and the ``/metrics`` endpoint (``metrics_server`` over
``metrics_collector``, which reads a snapshot of the running broker at scrape time).

Nothing imports this room but ``kbroker/__init__.py``, ``__main__`` and the testing plugin:
it is the top of the one-way rule (pyproject.toml, "kbroker's rooms, one way").
"""
