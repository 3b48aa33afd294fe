"""A kill -9 while a clean shutdown is closing many partitions (kbroker/app/log_shutdown.py runs
the closes off the event loop, batch by batch) loses nothing acknowledged: the
clean-shutdown marker is written only after every log is closed and checkpointed, so a
broker cut before that recovers at its next start, and every record whose acks=all
delivery report said success is read back at the offset the report gave.

The kill is sent once the broker logs that it is closing its logs (an event, not a delay).
On a machine fast enough to close 2,000 logs before the SIGKILL lands the shutdown simply
completed: the records must be there all the same, and only the "recovered" check is
skipped (it is asserted whenever the cut came before the marker line).
"""

from __future__ import annotations

import signal
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess

PARTITIONS = 2000
RECORDS = 3   # per partition
DEADLINE_S = 120.0


def _create(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic("many", PARTITIONS, 1)], operation_timeout=DEADLINE_S,
                             request_timeout=DEADLINE_S)
    assert fs["many"].result(timeout=DEADLINE_S) is None


def _produce(bootstrap: str) -> dict[tuple[int, int], bytes]:
    """(partition, offset) -> value of every record acknowledged."""
    acked: dict[tuple[int, int], bytes] = {}
    errors: list[object] = []

    def report(err, msg) -> None:  # noqa: ANN001 - confluent-kafka callback
        if err is not None:
            errors.append(err)
        else:
            acked[(msg.partition(), msg.offset())] = msg.value()
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
    for part in range(PARTITIONS):
        for r in range(RECORDS):
            p.produce("many", value=b"%d-%d" % (part, r), partition=part, on_delivery=report)
        p.poll(0)
    assert p.flush(DEADLINE_S) == 0
    assert errors == []
    return acked


def _read(bootstrap: str, want: int) -> dict[tuple[int, int], bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    got: dict[tuple[int, int], bytes] = {}
    try:
        c.assign([TopicPartition("many", p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < want and time.monotonic() < deadline:
            for m in c.consume(10_000, 0.5):
                assert m.error() is None, m.error()
                got[(m.partition(), m.offset())] = m.value()
    finally:
        c.close()
    return got


def test_a_kill_9_while_the_shutdown_closes_two_thousand_partitions_restarts_with_every_acknowledged_record(tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    try:
        _create(b.bootstrap)
        acked = _produce(b.bootstrap)
        assert len(acked) == PARTITIONS * RECORDS
        b.proc.send_signal(signal.SIGTERM)
        # kbroker/app/log_shutdown.py's line; __consumer_offsets is not there (no group ran)
        assert b.wait_for_output(lambda lines: any(f"closing {PARTITIONS} log(s)" in line for line in lines),
                                 DEADLINE_S)
        b.kill()
        cut_before_marker = not any("clean-shutdown marker written" in line for line in b.output)
        restarted_from = len(b.output)
        b.start()
        recovered = any("recovery after an unclean shutdown" in line for line in b.output[restarted_from:])
        got = _read(b.bootstrap, len(acked))
    finally:
        b.kill()
    if cut_before_marker:
        assert recovered
    missing = {k: v for k, v in acked.items() if got.get(k) != v}
    assert missing == {}, f"{len(missing)} acknowledged record(s) lost or changed, e.g. {list(missing.items())[:3]}"
