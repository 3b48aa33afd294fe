"""Exactly once through kill -9: a confluent-kafka consume-transform-produce loop
(tests/support/eos_worker.py, send_offsets_to_transaction) over 100,000 records while the
broker process is killed with SIGKILL three times and restarted on the same data, and the
worker itself is killed once and replaced by a new one (whose init_transactions aborts the
transaction the dead one left open); the output read with read_committed is the input,
each record once, in order.  The worker may start over (``restart`` in its output) only
after one of those kills, never for a fatal error, and no librdkafka call of it may hang."""

from __future__ import annotations

from tests.support.eos_run import EosWorker, check_exactly_once, produce_input
from tests.support.txn_workload import create_topic

N = 100_000
PARTITIONS = 4


def test_consume_transform_produce_is_exactly_once_through_kill_9s_of_broker_and_worker(broker):
    create_topic(broker.bootstrap, "eos-in", PARTITIONS)
    create_topic(broker.bootstrap, "eos-out", PARTITIONS)
    produce_input(broker.bootstrap, "eos-in", N, PARTITIONS)
    worker = EosWorker(broker.bootstrap, "eos-in", "eos-out", PARTITIONS).start()
    try:
        for fraction, victim in ((0.2, "broker"), (0.35, "worker"), (0.5, "broker"),
                                 (0.7, "broker")):
            seen = worker.wait_progress(int(N * fraction), timeout_s=600)
            assert seen >= N * fraction, worker.describe()
            if victim == "broker":
                with worker.injected_kill("broker"):
                    broker.restart(clean=False)   # kill -9, then the same data dir and port
            else:
                worker.kill_and_replace()
        assert worker.wait_progress(N, timeout_s=900) == N, worker.describe()
    finally:
        assert worker.stop() == 0, worker.describe()
    check_exactly_once(broker.bootstrap, "eos-in", "eos-out", PARTITIONS, N)
    # the output can be right while the transactions were not: a broker that failed the
    # worker's transactions (fatally or not) outside the kills made it start over
    assert worker.hangs == 0, worker.describe()
    assert worker.unexplained_restarts() == [], worker.describe()
