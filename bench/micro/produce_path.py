"""CPU cost of the e2e-latency workload's requests inside the broker (issue 15): a Produce of
8 partitions x 1 small batch (acks=1) and the parked consumer Fetch it wakes.

Run: ``.venv/bin/python -m bench.micro.produce_path [--requests 3000] [--rounds 5] [--profile]``.

What it drives is what `make bench`'s latency workload at 10,000 records/s sends (linger.ms=5:
~6 records of 100 B per partition per Produce, 8 partitions, acks=1, no idempotence, no
compression: a batch of ~700 B), through the broker's own request path, in process: a
``BrokerState`` with a topic of 8 partitions and two ``KafkaConnection`` protocols on
transports that only count bytes (no socket).  Per request:

1. the consumer's connection receives a Fetch (v16, topic id, sessionless as librdkafka's,
   max_wait_ms 500, min_bytes 1) at the log end of every partition; the loop runs until the
   Fetch has parked (nothing to read);
2. *produce*: the producer's connection receives the Produce frame (``data_received``: frame
   decode, handler, validation, 8 appends, response encode and write, all synchronous);
3. *woken fetch*: the loop runs until the consumer's answer is written (the parked
   handler's wake-up, its 8 reads, response encode, the write).

Each step's thread CPU time (``time.thread_time``), so the figure does not count time other
work on a busy machine took the CPU away; per request and per partition (/8).  Medians over
``--rounds`` rounds of ``--requests`` requests each, after a warm-up round.  ``--profile``
runs one round under cProfile and prints the top functions by own time.

Bytes leave nothing behind on the machine but the temporary log dir, removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import shutil
import statistics
import tempfile
import time
from typing import Any

import kbroker.handlers  # noqa: F401  (registers every API)
from kbroker.app.wiring import build_services
from kbroker.configs.config import BrokerConfig
from kbroker.replica.broker_state import BrokerState
from kbroker.server.connection import KafkaConnection
from kbroker.server.registry import REGISTRY
from kbroker.server.server_state import ServerState
from wire.headers import encode_request
from wire.messages import FetchRequest, ProduceRequest
from wire.record_batch import build_batch

PARTITIONS = 8
RECORDS_PER_BATCH = 6
VALUE_BYTES = 100
PRODUCE_VERSION = 9
FETCH_VERSION = 16


class CountingTransport(asyncio.Transport):
    """Counts what is written; ``written`` is set on every write."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0
        self.writes = 0
        self.written = asyncio.Event()

    def write(self, data: Any) -> None:
        self.bytes += len(data)
        self.writes += 1
        self.written.set()

    def writelines(self, parts: Any) -> None:
        for p in parts:
            self.bytes += len(p)
        self.writes += 1
        self.written.set()

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 5555) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def _frame(msg: Any, version: int, correlation_id: int, client_id: str) -> bytes:
    return encode_request(msg, version, correlation_id, client_id)   # size-prefixed


def produce_frame(topic: str, correlation_id: int) -> bytes:
    """librdkafka's Produce at linger.ms=5: one batch of 6 x 100 B records per partition."""
    now = int(time.time() * 1000)
    parts = []
    for p in range(PARTITIONS):
        recs = [(None, bytes([65 + (i + p) % 26]) * VALUE_BYTES, None, now) for i in range(RECORDS_PER_BATCH)]
        parts.append(ProduceRequest.PartitionProduceData(index=p, records=build_batch(recs)))
    req = ProduceRequest(transactional_id=None, acks=1, timeout_ms=30000,
                         topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=parts)])
    return _frame(req, PRODUCE_VERSION, correlation_id, "rdkafka-producer")


def fetch_frame(topic_id: Any, offsets: list[int], correlation_id: int) -> bytes:
    parts = [FetchRequest.FetchPartition(partition=p, current_leader_epoch=0, fetch_offset=offsets[p],
                                         last_fetched_epoch=-1, log_start_offset=-1,
                                         partition_max_bytes=1 << 20)
             for p in range(PARTITIONS)]
    req = FetchRequest(cluster_id=None, replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800,
                       isolation_level=0, session_id=0, session_epoch=-1,
                       topics=[FetchRequest.FetchTopic(topic="", topic_id=topic_id, partitions=parts)],
                       forgotten_topics_data=[], rack_id="")
    return _frame(req, FETCH_VERSION, correlation_id, "rdkafka-consumer")


async def _round(state: BrokerState, prod: KafkaConnection, cons: KafkaConnection, ptx: CountingTransport,
                 ctx: CountingTransport, requests: int, corr: list[int]) -> tuple[float, float]:
    """``requests`` Produce + woken Fetch pairs; returns CPU seconds (produce, woken fetch)."""
    topic_id = state.topic_ids.id_of("t")
    partitions = [state.partition("t", p) for p in range(PARTITIONS)]
    produce_cpu = fetch_cpu = 0.0
    for _ in range(requests):
        corr[0] += 1
        frame = produce_frame("t", corr[0])
        offsets = [p.log_end_offset for p in partitions]
        ctx.written.clear()
        cons.data_received(fetch_frame(topic_id, offsets, corr[0]))
        for _ in range(3):   # the Fetch task starts, reads nothing and parks
            await asyncio.sleep(0)
        assert not ctx.written.is_set(), "the Fetch answered without waiting"
        writes = ptx.writes
        t0 = time.thread_time()
        prod.data_received(frame)
        t1 = time.thread_time()
        await ctx.written.wait()
        t2 = time.thread_time()
        assert ptx.writes == writes + 1, "the Produce was not answered synchronously"
        produce_cpu += t1 - t0
        fetch_cpu += t2 - t1
    return produce_cpu, fetch_cpu


async def main_async(requests: int, rounds: int, profile: bool) -> None:
    tmp = tempfile.mkdtemp(prefix="produce-path-")
    state = BrokerState(BrokerConfig({"log.dirs": tmp}))
    try:
        state.create_topic("t", PARTITIONS)
        for _ in range(100):   # the topic id is written off the loop
            if state.topic_ids.id_of("t") is not None:
                break
            await asyncio.sleep(0.05)
        server, ports = ServerState(REGISTRY), build_services(state)
        prod, cons = KafkaConnection(server, ports), KafkaConnection(server, ports)
        ptx, ctx = CountingTransport(), CountingTransport()
        prod.connection_made(ptx)
        cons.connection_made(ctx)
        corr = [0]
        await _round(state, prod, cons, ptx, ctx, min(requests, 1000), corr)   # warm-up
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            await _round(state, prod, cons, ptx, ctx, requests, corr)
            prof.disable()
            stats = pstats.Stats(prof)
            stats.sort_stats("tottime").print_stats(35)
            stats.sort_stats("cumulative").print_stats(45)
            return
        per_produce, per_fetch = [], []
        for _ in range(rounds):
            p, f = await _round(state, prod, cons, ptx, ctx, requests, corr)
            per_produce.append(p / requests * 1e6)
            per_fetch.append(f / requests * 1e6)
        pm, fm = statistics.median(per_produce), statistics.median(per_fetch)
        print(f"produce (8 partitions, acks=1): {pm:6.1f} us per request, {pm / PARTITIONS:5.1f} us per partition "
              f"(rounds: {', '.join(f'{v:.1f}' for v in per_produce)})")
        print(f"woken fetch (8 partitions):     {fm:6.1f} us per request, {fm / PARTITIONS:5.1f} us per partition "
              f"(rounds: {', '.join(f'{v:.1f}' for v in per_fetch)})")
        print(f"both:                           {pm + fm:6.1f} us")
    finally:
        state.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="one round under cProfile, top functions")
    args = ap.parse_args()
    try:
        import uvloop  # the broker's loop (kbroker/app/broker.py)
        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    runner(main_async(args.requests, args.rounds, args.profile))


if __name__ == "__main__":
    main()
