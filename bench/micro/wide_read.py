"""Broker CPU per partition of one Fetch naming many partitions (issue 15), on a real broker.

Run: ``.venv/bin/python -m bench.micro.wide_read [--partitions 2000] [--rounds 5]``.

A ``kbroker serve`` process (bench/harness/broker_cpu.py) driven over TCP by
``kbroker.client``.  Per round, a fresh topic of ``--partitions`` partitions, each holding
one batch of 3 records of 1 KiB (what a consumer of the 10,000-partition cost curve finds:
~3 KiB per partition, written by one Produce naming every partition), then two Fetch v12
requests naming them all, read_committed and sessionless as librdkafka sends them, with
``max_wait_ms`` 0:

* first read: every partition from offset 0 (each partition's first read since its log was
  created: an offset-index lookup and a header scan, the data copied into the answer);
* empty read: every partition at its end (the common case of a wide fetch: nothing new).

Figure: the broker's event-loop thread CPU per Fetch (decode, the per-partition reads, the
answer's encoding and its write), divided by the partitions, median of ``--rounds``; the
topic is deleted after each round.  The in-process version of this bench (``_read_all`` on
partitions built in the bench's process, read and encode timed apart; figures in
bench/results/profile.md and cost_curves.md) was bench/wide_read_bench.py at 7501772.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.harness import broker_cpu
from kbroker.client import Connection
from wire.messages import FetchRequest, FetchResponse
from wire.record_batch import build_batch

VALUE_BYTES = 1024
RECORDS = 3


def _fetch(topic: str, offsets: dict[int, int]) -> FetchRequest:
    return FetchRequest(cluster_id=None, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=52_428_800,
                        isolation_level=1, session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                            topic=topic, partitions=[FetchRequest.FetchPartition(
                                partition=i, current_leader_epoch=-1, fetch_offset=o, last_fetched_epoch=-1,
                                log_start_offset=-1, partition_max_bytes=1_048_576) for i, o in offsets.items()])],
                        forgotten_topics_data=[], rack_id="")


def _timed_fetch(conn: Connection, pid: int, req: FetchRequest) -> tuple[float, FetchResponse]:
    """(broker loop CPU seconds, the answer) of one Fetch v12."""
    c0 = broker_cpu.loop_cpu_ns(pid)
    resp = conn.call(req, 12)
    return (broker_cpu.loop_cpu_ns(pid) - c0) / 1e9, resp


def _round(conn: Connection, pid: int, topic: str, n: int) -> dict[str, float]:
    broker_cpu.create_topic(conn, topic, n)
    now = int(time.time() * 1000)
    batch = build_batch([(None, bytes([65 + i]) * VALUE_BYTES, None, now) for i in range(RECORDS)])
    broker_cpu.check_produce(conn.call(broker_cpu.produce_request(topic, {i: batch for i in range(n)})))
    first_s, first = _timed_fetch(conn, pid, _fetch(topic, {i: 0 for i in range(n)}))
    got = sum(len(p.records or b"") for t in first.responses for p in t.partitions)
    assert got == n * len(batch), f"first read returned {got} bytes, not {n * len(batch)}"
    empty_s, empty = _timed_fetch(conn, pid, _fetch(topic, {i: RECORDS for i in range(n)}))
    assert all(not p.records and p.error_code == 0 for t in empty.responses for p in t.partitions)
    broker_cpu.delete_topic(conn, topic)
    return {"first read": first_s, "empty read": empty_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with broker_cpu.kbroker() as broker, broker_cpu.connect(broker) as conn:
        assert broker.proc is not None
        rounds = [_round(conn, broker.proc.pid, f"wide-{r}", args.partitions) for r in range(args.rounds)]
    for figure in rounds[0]:
        values = [r[figure] * 1e6 / args.partitions for r in rounds]
        print(f"{figure}: {statistics.median(values):.1f} us of broker CPU per partition "
              f"({min(values):.1f}-{max(values):.1f}, {args.rounds} Fetches of {args.partitions:,} partitions)")


if __name__ == "__main__":
    main()
