"""Broker CPU of a consumer's start-up requests at many partitions (issue 15), on a real broker.

Run: ``.venv/bin/python -m bench.micro.metadata [--partitions 10000] [--rounds 5]``.

A ``kbroker serve`` process (bench/harness/broker_cpu.py) holding topic ``big`` of
``--partitions`` partitions and nine 1-partition topics, driven over TCP by
``kbroker.client``.  Each round first changes ``big`` (CreatePartitions: one partition
more, so a cached answer for it has to be rebuilt), then times, as broker event-loop thread
CPU per request:

* Metadata v12 for all topics (what librdkafka asks at start-up and every
  ``topic.metadata.refresh.interval.ms``): the first after the change, then unchanged;
* Metadata v12 naming ``big`` only, unchanged;
* ListOffsets v7 "latest" for ``--partitions`` partitions of ``big`` in one request (a
  consumer without committed offsets, ``auto.offset.reset=latest``), and 1,000 ListOffsets
  of one partition each (what librdkafka sends: one request per partition), per request.

Medians over ``--rounds``.  The figures include the request's decode, the answer's encoding
and the socket calls.  The in-process version of this bench (a ``BrokerState`` and, for
cluster mode, a metadata cache filled by UpdateMetadata, handler and encode timed apart; the
figures in bench/results/cost_curves.md, "Metadata and consumer start-up at 10,000
partitions") was bench/metadata_bench.py at b98eb5c; its cluster-mode part needs a
ZooKeeper cluster over TCP and is not measured here.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from bench.harness import broker_cpu
from kbroker.client import Connection
from wire.messages import ListOffsetsRequest, MetadataRequest

SMALL = [f"small-{i}" for i in range(9)]
ONE_PARTITION_REQUESTS = 1000


def _metadata(names: list[str] | None) -> MetadataRequest:
    topics = None if names is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in names]
    return MetadataRequest(topics=topics, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False)


def _list_offsets(indexes: range) -> ListOffsetsRequest:
    LT, LP = ListOffsetsRequest.ListOffsetsTopic, ListOffsetsRequest.ListOffsetsPartition
    return ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[LT(name="big", partitions=[
        LP(partition_index=i, current_leader_epoch=-1, timestamp=-1) for i in indexes])])


def _cpu_ms(conn: Connection, pid: int, req: Any, version: int, times: int = 1) -> float:
    """Broker loop CPU ms per request of ``times`` calls of ``req`` at ``version``."""
    c0 = broker_cpu.loop_cpu_ns(pid)
    for _ in range(times):
        conn.call(req, version)
    return (broker_cpu.loop_cpu_ns(pid) - c0) / 1e6 / times


def _round(conn: Connection, pid: int, partitions: int, r: int) -> dict[str, float]:
    broker_cpu.add_partitions(conn, "big", partitions + r + 1)
    out = {
        "Metadata all topics, first after a change": _cpu_ms(conn, pid, _metadata(None), 12),
        "Metadata all topics, unchanged": _cpu_ms(conn, pid, _metadata(None), 12),
        "Metadata of big, unchanged": _cpu_ms(conn, pid, _metadata(["big"]), 12),
        f"ListOffsets of {partitions:,} partitions": _cpu_ms(conn, pid, _list_offsets(range(partitions)), 7),
    }
    c0 = broker_cpu.loop_cpu_ns(pid)
    for i in range(ONE_PARTITION_REQUESTS):
        conn.call(_list_offsets(range(i % partitions, i % partitions + 1)), 7)
    out["ListOffsets of one partition"] = (broker_cpu.loop_cpu_ns(pid) - c0) / 1e6 / ONE_PARTITION_REQUESTS
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with broker_cpu.kbroker() as broker, broker_cpu.connect(broker) as conn:
        assert broker.proc is not None
        broker_cpu.create_topic(conn, "big", args.partitions)
        for name in SMALL:
            broker_cpu.create_topic(conn, name, 1)
        _round(conn, broker.proc.pid, args.partitions, 0)   # warm-up: the codecs, the first answers
        rounds = [_round(conn, broker.proc.pid, args.partitions, r) for r in range(1, args.rounds + 1)]
    for figure in rounds[0]:
        values = [r[figure] for r in rounds]
        print(f"{figure:45s} {statistics.median(values):8.3f} ms of broker CPU per request "
              f"({min(values):.3f}-{max(values):.3f}, {args.rounds} rounds)")


if __name__ == "__main__":
    main()
