"""Broker restarts with confluent-kafka clients: a clean stop (SIGTERM) and a kill -9
between produce and consume and in the middle of a continuous acks=all load.

What must hold (Kafka's guarantees on one broker, where acks=all means "in the log"):
every record whose delivery report said success is in the log exactly once, at the offset
the report gave, in produce order; an idempotent producer that keeps going across the
restart leaves no duplicate and no gap.  A clean shutdown leaves Kafka's
``.kafka_cleanshutdown`` marker and checkpoint files in the data dir.
"""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 4


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10, request_timeout=15)
    assert fs[name].result(timeout=20) is None


def read_partitions(bootstrap: str, topic: str, partitions: int, timeout_s: float = 60.0
                    ) -> dict[int, list[tuple[int, bytes]]]:
    """Every (offset, value) of every partition, from the beginning up to the high watermark."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compat-unused", "enable.auto.commit": False})
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    try:
        high = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=15, cached=False)[1]
                for p in range(partitions)}
        c.assign([TopicPartition(topic, p, OFFSET_END) for p in range(partitions)])
        for p in range(partitions):
            c.seek(TopicPartition(topic, p, OFFSET_BEGINNING))
        deadline = time.monotonic() + timeout_s
        while any(len(got[p]) < high[p] for p in range(partitions)):
            assert time.monotonic() < deadline, f"read {[len(v) for v in got.values()]} of {high}"
            for m in c.consume(10_000, 0.5):
                assert m.error() is None, m.error()
                got[m.partition()].append((m.offset(), m.value()))
        # nothing beyond the high watermark shows up
        for m in c.consume(10_000, 0.3):
            assert m.error() is None, m.error()
            got[m.partition()].append((m.offset(), m.value()))
    finally:
        c.close()
    return got


class Load:
    """A producer thread sending ``id-<n>`` payloads round-robin over the partitions until
    stopped; delivery reports are collected per id."""

    def __init__(self, bootstrap: str, topic: str, conf: dict):
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                                  "message.timeout.ms": 60_000, **conf})
        self.sent: list[int] = []
        self.acked: dict[int, tuple[int, int]] = {}   # id -> (partition, offset)
        self.failed: dict[int, str] = {}
        self.fatal: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._lock = threading.Lock()

    def _report(self, n: int, err, msg) -> None:
        with self._lock:
            if err is None:
                self.acked[n] = (msg.partition(), msg.offset())
            else:
                self.failed[n] = str(err)
                if err.fatal():
                    self.fatal.append(str(err))

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            try:
                self.producer.produce(self.topic, value=b"id-%08d" % n, partition=n % PARTITIONS,
                                      on_delivery=functools.partial(self._report, n))
            except BufferError:
                self.producer.poll(0.01)
                continue
            self.sent.append(n)
            n += 1
            if n % 50 == 0:
                self.producer.poll(0)
                time.sleep(0.002)  # a steady load, not a flood

    def start(self) -> Load:
        self._thread.start()
        return self

    def wait_acked(self, count: int, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.acked) < count:
            assert time.monotonic() < deadline, f"only {len(self.acked)} acked, failed: {list(self.failed.values())[:3]}"
            time.sleep(0.02)

    def finish(self, timeout_s: float = 60.0) -> None:
        self._stop.set()
        self._thread.join(10)
        assert not self._thread.is_alive()
        remaining = self.producer.flush(timeout_s)
        assert remaining == 0, f"{remaining} records never got a delivery report"
        assert len(self.acked) + len(self.failed) == len(self.sent)


def payload_id(value: bytes) -> int:
    assert value.startswith(b"id-"), value
    return int(value[3:])


def assert_acked_records_exactly_once_in_order(load: Load, log: dict[int, list[tuple[int, bytes]]]) -> None:
    for p, entries in log.items():
        assert [off for off, _ in entries] == list(range(len(entries))), f"partition {p}: offsets"
        ids = [payload_id(v) for _, v in entries]
        assert len(ids) == len(set(ids)), f"partition {p}: a record is there twice"
        assert ids == sorted(ids), f"partition {p}: records out of produce order"
        assert all(n % PARTITIONS == p for n in ids)
        at = {n: off for off, n in enumerate(ids)}
        acked_here = {n: off for n, (part, off) in load.acked.items() if part == p}
        missing = sorted(set(acked_here) - set(at))
        assert missing == [], f"partition {p}: {len(missing)} acknowledged records lost, first {missing[:5]}"
        moved = {n: (off, at[n]) for n, off in acked_here.items() if at[n] != off}
        assert moved == {}, f"partition {p}: records not at the offset their delivery report gave"


@pytest.mark.parametrize("clean", [True, False], ids=["sigterm", "sigkill"])
def test_records_produced_before_a_restart_are_all_read_after_it(broker, clean):
    create_topic(broker.bootstrap, "before", PARTITIONS)
    load = Load(broker.bootstrap, "before", {}).start()
    load.wait_acked(5_000)
    load.finish()
    assert load.failed == {}
    broker.restart(clean=clean)
    log = read_partitions(broker.bootstrap, "before", PARTITIONS)
    assert sum(len(v) for v in log.values()) == len(load.sent)
    assert_acked_records_exactly_once_in_order(load, log)


@pytest.mark.parametrize("clean", [True, False], ids=["sigterm", "sigkill"])
def test_a_restart_in_the_middle_of_an_acks_all_load_loses_no_acknowledged_record(broker, clean):
    create_topic(broker.bootstrap, "midload", PARTITIONS)
    # no retries: every record is sent at most once, so acknowledged ones cannot be doubled
    # or reordered by the client; failures are the in-flight requests the restart cut off
    load = Load(broker.bootstrap, "midload", {"retries": 0}).start()
    load.wait_acked(3_000)
    broker.restart(clean=clean)
    acked_at_restart = len(load.acked)
    load.wait_acked(acked_at_restart + 3_000)  # the producer goes on against the new process
    load.finish()
    log = read_partitions(broker.bootstrap, "midload", PARTITIONS)
    assert_acked_records_exactly_once_in_order(load, log)
    assert len(load.acked) >= acked_at_restart + 3_000


@pytest.mark.parametrize("clean", [True, False], ids=["sigterm", "sigkill"])
def test_an_idempotent_producer_across_a_restart_leaves_no_duplicate_and_no_gap(broker, clean):
    create_topic(broker.bootstrap, "idem", PARTITIONS)
    load = Load(broker.bootstrap, "idem", {"enable.idempotence": True}).start()
    load.wait_acked(3_000)
    broker.restart(clean=clean)
    acked_at_restart = len(load.acked)
    load.wait_acked(acked_at_restart + 3_000)
    load.finish()
    assert load.fatal == []
    assert load.failed == {}
    log = read_partitions(broker.bootstrap, "idem", PARTITIONS)
    assert_acked_records_exactly_once_in_order(load, log)
    # every record sent is there once: per partition exactly the produced sequence
    for p in range(PARTITIONS):
        assert [payload_id(v) for _, v in log[p]] == [n for n in load.sent if n % PARTITIONS == p]
    assert "Traceback" not in broker.log_text()


def _read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    lines = path.read_text().splitlines()
    assert lines[0] == "0"          # version
    assert int(lines[1]) == len(lines) - 2
    out = {}
    for line in lines[2:]:
        topic, part, off = line.split(" ")
        out[(topic, int(part))] = int(off)
    return out


def test_a_clean_shutdown_leaves_the_clean_shutdown_marker_and_checkpoints(broker):
    create_topic(broker.bootstrap, "ckpt", PARTITIONS)
    load = Load(broker.bootstrap, "ckpt", {"enable.idempotence": True}).start()
    load.wait_acked(2_000)
    load.finish()
    assert load.failed == {}
    ends = {p: sum(1 for n in load.sent if n % PARTITIONS == p) for p in range(PARTITIONS)}
    data = broker.data_dir
    assert not (data / ".kafka_cleanshutdown").exists()  # only after a clean shutdown

    assert broker.stop() == 0
    assert (data / ".kafka_cleanshutdown").is_file()
    assert _read_checkpoint(data / "recovery-point-offset-checkpoint") == {
        ("ckpt", p): ends[p] for p in range(PARTITIONS)}
    assert _read_checkpoint(data / "log-start-offset-checkpoint") == {}  # no log start moved
    for p in range(PARTITIONS):
        files = sorted(f.name for f in (data / f"ckpt-{p}").iterdir())
        assert f"{ends[p]:020d}.snapshot" in files   # producer state at the log end (Log.close)
        assert {"00000000000000000000.log", "00000000000000000000.index",
                "00000000000000000000.timeindex"} <= set(files)

    broker.start()
    assert not (data / ".kafka_cleanshutdown").exists()  # consumed at startup
    log = read_partitions(broker.bootstrap, "ckpt", PARTITIONS)
    assert {p: len(v) for p, v in log.items()} == ends


def test_a_killed_broker_leaves_no_clean_shutdown_marker_and_recovers_its_logs(broker):
    create_topic(broker.bootstrap, "crash", PARTITIONS)
    load = Load(broker.bootstrap, "crash", {}).start()
    load.wait_acked(2_000)
    load.finish()
    broker.kill()
    assert not (broker.data_dir / ".kafka_cleanshutdown").exists()
    broker.start()
    log = read_partitions(broker.bootstrap, "crash", PARTITIONS)
    assert sum(len(v) for v in log.values()) == len(load.sent)
    assert_acked_records_exactly_once_in_order(load, log)
    # the recovered log takes new records at the right offsets
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    offsets: list[int] = []
    p.produce("crash", value=b"id-99999999", partition=0,
              on_delivery=lambda err, msg: offsets.append(-1 if err else msg.offset()))
    assert p.flush(15) == 0
    assert offsets == [len(log[0])]


def test_log_start_and_end_offsets_survive_a_kill(broker):
    create_topic(broker.bootstrap, "marks", 2)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 1})
    for i in range(100):
        p.produce("marks", value=b"id-%08d" % i, partition=i % 2)
    assert p.flush(15) == 0
    broker.restart(clean=False)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "compat-unused"})
    try:
        assert [c.get_watermark_offsets(TopicPartition("marks", q), timeout=15, cached=False)
                for q in range(2)] == [(0, 50), (0, 50)]
    finally:
        c.close()
