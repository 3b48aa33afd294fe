"""A consume-transform-produce worker (confluent-kafka, exactly once), run as its own process
by the transaction tests while they kill the broker(s) under it.

    python -m tests.support.eos_worker BOOTSTRAP INPUT OUTPUT PARTITIONS GROUP TRANSACTIONAL_ID

Reads INPUT (read_committed, the group's committed offsets), writes each record's key and
``b"out-" + value`` to the same partition of OUTPUT and commits the input offsets with
``send_offsets_to_transaction`` in the same transaction: the standard exactly-once loop.
On any error (broker gone, fenced, timed out) it drops its producer and consumer and starts
over with new ones: ``init_transactions`` of the same transactional id completes or aborts
whatever the previous producer left, and the new consumer starts from the group's committed
offsets (fetched with require_stable, so never from an offset still pending).

Prints ``progress N`` (N = sum of the committed input offsets) after every commit and
``restart <kind> <error>`` when it starts over, ``<kind>`` being librdkafka's verdict on the
error (``fatal``, ``abortable``, ``retriable`` or ``other``) and ``<error>`` the KafkaError
(name and text); stops between transactions on SIGTERM.  Starting over is what an
application does after any of them, so the run goes on; whether a restart was to be expected
(after a kill the test injected) is for the test to judge (tests/support/eos_run.py).

A transactional call that has not returned ``HUNG_AFTER_S`` past its own timeout is a
librdkafka hang, not an answer: librdkafka (2.10+) decommissions a broker that leaves the
Metadata answers (a killed broker leaves them, against Apache Kafka too), and
``send_offsets_to_transaction`` whose cached group coordinator was that broker then waits
for it forever, its timeout never checked (confluentinc/librdkafka#5511, #5456; fixes open
upstream).  No call on the stuck handle can end it, so the worker says ``hung <call>`` and
exits with ``HUNG_EXIT``: what a supervisor's liveness check does to such a process.
tests/support/eos_run.py starts a new worker then (the new one's init_transactions fences
the old producer and aborts what it left open, as after a kill) and reports the hang, which
the tests do not accept (NO_REBOOTSTRAP below avoids the known librdkafka trigger).
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

BATCH = 2000
TIMEOUT_S = 30
# librdkafka 2.x re-bootstraps when every broker is gone (the broker being killed) and then
# decommissions the brokers it knew; send_offsets_to_transaction can then wait forever on
# the decommissioned group coordinator, past its timeout (confluentinc/librdkafka#5456,
# #5511).  Without re-bootstrap the client reconnects to the same broker address, as a
# client of a single broker should.
NO_REBOOTSTRAP = {"metadata.recovery.strategy": "none"}
# No commit for this long: the Python stacks go to stdout (which call the worker is in)
STALL_DUMP_S = 90
HUNG_AFTER_S = 60   # past a call's own timeout: librdkafka will not return (see above)
HUNG_EXIT = 75


def bounded(timeout_s: float, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args, timeout_s)``, or exit with HUNG_EXIT if it is still running HUNG_AFTER_S after its
    ``timeout_s`` (it raises or returns by then when librdkafka honours the timeout)."""
    def hung() -> None:
        print(f"hung {call.__name__}: no return {HUNG_AFTER_S} s past its {timeout_s} s timeout "
              "(confluentinc/librdkafka#5511)", flush=True)
        os._exit(HUNG_EXIT)
    timer = threading.Timer(timeout_s + HUNG_AFTER_S, hung)
    timer.daemon = True
    timer.start()
    try:
        return call(*args, timeout_s)
    finally:
        timer.cancel()


def restart_kind(error: KafkaError) -> str:
    """librdkafka's verdict on an error that made the worker start over."""
    if error.fatal():
        return "fatal"
    if error.txn_requires_abort():
        return "abortable"
    return "retriable" if error.retriable() else "other"


def client_debug() -> dict[str, str]:
    """KBROKER_EOS_DEBUG_LOG=<path>: librdkafka's eos/cgrp/broker debug log, written by its
    own threads to stderr, goes to that file (so it is there even while a call blocks)."""
    path = os.environ.get("KBROKER_EOS_DEBUG_LOG")
    if not path:
        return {}
    if not client_debug.__dict__.get("redirected"):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(fd, 2)
        client_debug.__dict__["redirected"] = True
    return {"debug": "eos,cgrp,broker,metadata"}


def main() -> int:
    bootstrap, src, dst, partitions, group, txn_id = sys.argv[1:7]
    tps = [TopicPartition(src, p) for p in range(int(partitions))]
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    faulthandler.dump_traceback_later(STALL_DUMP_S, repeat=True, file=sys.stdout)
    while not stopping:
        producer = consumer = None
        try:
            producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                                 "linger.ms": 5, "transaction.timeout.ms": 60000,
                                 **NO_REBOOTSTRAP, **client_debug()})
            bounded(TIMEOUT_S, producer.init_transactions)
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                 "isolation.level": "read_committed",
                                 "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                 **NO_REBOOTSTRAP, **client_debug()})
            committed = bounded(TIMEOUT_S, consumer.committed, tps)
            done = {tp.partition: max(tp.offset, 0) for tp in committed}  # committed offsets
            consumer.assign([TopicPartition(src, p, o) for p, o in done.items()])
            reported: set[str] = set()
            while not stopping:
                batch = consumer.consume(BATCH, 0.5)
                for m in batch:   # said once per error and client: what a stalled run saw
                    if m.error() is not None and str(m.error()) not in reported:
                        reported.add(str(m.error()))
                        print(f"consume-error {m.topic()} [{m.partition()}] {m.error()}", flush=True)
                msgs = [m for m in batch if m.error() is None]
                if not msgs:
                    continue
                producer.begin_transaction()
                for m in msgs:
                    producer.produce(dst, key=m.key(), value=b"out-" + m.value(),
                                     partition=m.partition())
                positions = consumer.position(consumer.assignment())
                bounded(TIMEOUT_S, producer.send_offsets_to_transaction, positions,
                        consumer.consumer_group_metadata())
                bounded(TIMEOUT_S, producer.commit_transaction)
                done.update((tp.partition, tp.offset) for tp in positions if tp.offset >= 0)
                print(f"progress {sum(done.values())}", flush=True)
                faulthandler.dump_traceback_later(STALL_DUMP_S, repeat=True, file=sys.stdout)
        except KafkaException as e:
            print(f"restart {restart_kind(e.args[0])} {e.args[0]}", flush=True)
            time.sleep(0.5)  # a new client per retry: do not spin while the broker is down
        finally:
            if producer is not None:
                producer.purge()
                del producer
            if consumer is not None:
                consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
