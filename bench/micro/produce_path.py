"""Broker CPU of the e2e-latency workload's requests (issue 15): a Produce of 8 partitions x 1
small batch (acks=1) and the parked consumer Fetch it wakes, on a real broker.

Run: ``.venv/bin/python -m bench.micro.produce_path [--requests 2000] [--rounds 5]``.

What it sends is what `make bench`'s latency workload at 10,000 records/s sends (linger.ms=5:
~6 records of 100 B per partition per Produce, 8 partitions, acks=1, no idempotence, no
compression: a batch of ~700 B per partition), to a ``kbroker serve`` process
(bench/harness/broker_cpu.py) over TCP with ``kbroker.client``: a producer connection
(Produce v9) and a consumer connection (Fetch v16 by topic id, sessionless as librdkafka's,
max_wait_ms 500, min_bytes 1, at the log end of every partition).  Per round of
``--requests``, after a warm-up round:

1. *produce alone*: Produce requests with no Fetch waiting;
2. *park*: the consumer sends its Fetch, which finds nothing and parks (the bench waits 2 ms);
3. *produce + woken fetch*: then the Produce, and the consumer reads the Fetch's answer
   (the parked Fetch's wake-up, its 8 reads, the answer's encoding and write).

Figure: the broker's event-loop thread CPU per request (and per partition, /8), median of
``--rounds``; the woken Fetch is (3) minus (1).  Socket reads and writes are in the figures.
The in-process version of this bench (a ``BrokerState`` and two connection protocols on
transports without sockets, thread CPU of the handler path; the figures in
bench/results/profile.md) was bench/produce_path_bench.py at b98eb5c.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from bench.harness import broker_cpu
from kbroker.client import Connection
from wire.messages import FetchRequest, FetchResponse
from wire.record_batch import build_batch

PARTITIONS = 8
RECORDS_PER_BATCH = 6
VALUE_BYTES = 100
PRODUCE_VERSION = 9
FETCH_VERSION = 16
PARK_WAIT_S = 0.002


def _batches() -> dict[int, bytes]:
    now = int(time.time() * 1000)
    return {p: build_batch([(None, bytes([65 + (i + p) % 26]) * VALUE_BYTES, None, now)
                            for i in range(RECORDS_PER_BATCH)]) for p in range(PARTITIONS)}


def _fetch(topic_id: uuid.UUID, offset: int) -> FetchRequest:
    parts = [FetchRequest.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=offset,
                                         last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20)
             for p in range(PARTITIONS)]
    return FetchRequest(cluster_id=None, replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52_428_800,
                        isolation_level=0, session_id=0, session_epoch=-1,
                        topics=[FetchRequest.FetchTopic(topic="", topic_id=topic_id, partitions=parts)],
                        forgotten_topics_data=[], rack_id="")


class Bench:
    def __init__(self, pid: int, producer: Connection, consumer: Connection, topic: str, topic_id: uuid.UUID):
        self.pid, self.producer, self.consumer = pid, producer, consumer
        self.topic, self.topic_id = topic, topic_id
        self.end = 0   # every partition's log end offset

    def _produce(self) -> None:
        broker_cpu.check_produce(self.producer.call(broker_cpu.produce_request(self.topic, _batches()),
                                                    PRODUCE_VERSION))
        self.end += RECORDS_PER_BATCH

    def produce_alone(self, n: int) -> float:
        """Broker CPU seconds per Produce with no Fetch waiting."""
        c0 = broker_cpu.loop_cpu_ns(self.pid)
        for _ in range(n):
            self._produce()
        return (broker_cpu.loop_cpu_ns(self.pid) - c0) / 1e9 / n

    def with_fetch(self, n: int) -> tuple[float, float]:
        """(park, produce + woken fetch): broker CPU seconds per request."""
        park = woken = 0
        for _ in range(n):
            c0 = broker_cpu.loop_cpu_ns(self.pid)
            self.consumer.send(_fetch(self.topic_id, self.end), FETCH_VERSION)
            time.sleep(PARK_WAIT_S)
            c1 = broker_cpu.loop_cpu_ns(self.pid)
            self._produce()
            _, resp = self.consumer.receive(FetchResponse, FETCH_VERSION)
            c2 = broker_cpu.loop_cpu_ns(self.pid)
            parts = [p for t in resp.responses for p in t.partitions]
            assert len(parts) == PARTITIONS and all(p.records for p in parts), "the Fetch did not get the batch"
            park += c1 - c0
            woken += c2 - c1
        return park / 1e9 / n, woken / 1e9 / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with broker_cpu.kbroker() as broker, broker_cpu.connect(broker, "rdkafka-producer") as producer, \
            broker_cpu.connect(broker, "rdkafka-consumer") as consumer:
        assert broker.proc is not None
        topic_id = broker_cpu.create_topic(producer, "t", PARTITIONS)
        bench = Bench(broker.proc.pid, producer, consumer, "t", topic_id)
        warm = min(args.requests, 500)
        bench.produce_alone(warm)
        bench.with_fetch(warm)
        alone, park, both = [], [], []
        for _ in range(args.rounds):
            alone.append(bench.produce_alone(args.requests) * 1e6)
            p, b = bench.with_fetch(args.requests)
            park.append(p * 1e6)
            both.append(b * 1e6)
    woken = [b - a for a, b in zip(alone, both, strict=True)]
    for label, values in (("produce alone (8 partitions, acks=1)", alone), ("park a Fetch (8 partitions)", park),
                          ("produce + the woken Fetch", both), ("woken Fetch (the difference)", woken)):
        m = statistics.median(values)
        print(f"{label:38s} {m:6.1f} us of broker CPU per request, {m / PARTITIONS:5.1f} us per partition "
              f"(rounds: {', '.join(f'{v:.1f}' for v in values)})")


if __name__ == "__main__":
    main()
