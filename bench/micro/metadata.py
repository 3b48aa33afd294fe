"""CPU time of a consumer's start-up requests at many partitions (issue 15), in this process.

Run: ``.venv/bin/python -m bench.micro.metadata [--partitions 10000] [--rounds 5] [--profile]``.

A real single-node ``BrokerState`` (``--partitions`` partition logs of topic ``big`` plus
nine 1-partition topics, in a temporary log dir), and a cluster-mode metadata cache (three
live brokers, the same topics, replication factor 3) filled by one UpdateMetadata; then, per
request, the handler's answer and its encoding (thread CPU time, median of ``--rounds``,
each round after the metadata changed once, so a cache has to be refilled in the first
request of a round (single node: the caches are cleared, as a change of every topic
would), the second request of the round is the "warm" figure):

* Metadata v12, all topics (what librdkafka asks at start-up and every
  ``topic.metadata.refresh.interval.ms``), and Metadata v12 naming ``big`` only;
* ListOffsets v7 "latest" for every partition of ``big`` (a consumer without committed
  offsets, ``auto.offset.reset=latest``), and 1,000 ListOffsets of one partition each (what
  librdkafka sends: one request per partition), single node only;
* cluster: the UpdateMetadata that fills the cache, and one that moves one leader, then
  Metadata for all topics (a rebuild of the one changed partition).

``--profile`` prints the top of a cProfile of one warm round instead.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import kbroker.handlers  # noqa: F401  (registers the handlers)
import kbroker.metadata.metadata_view as metadata_view_module
from kbroker.app.wiring import build_services
from kbroker.configs.config import BrokerConfig
from kbroker.metadata.metadata_cache import MetadataCache
from kbroker.metadata.metadata_view import ClusterMetadata
from kbroker.replica.broker_state import BrokerState
from kbroker.security.authorizer import ALLOW_ALL
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from kbroker.server.services import Services
from wire.codec import encode_parts
from wire.messages import ListOffsetsRequest, MetadataRequest, UpdateMetadataRequest

SMALL = [f"small-{i}" for i in range(9)]


def _metadata_request(names: list[str] | None) -> MetadataRequest:
    topics = None if names is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in names]
    return MetadataRequest(topics=topics, allow_auto_topic_creation=False)


def _list_offsets_request(n: int) -> ListOffsetsRequest:
    LT = ListOffsetsRequest.ListOffsetsTopic
    LP = ListOffsetsRequest.ListOffsetsPartition
    return ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[LT(name="big", partitions=[
        LP(partition_index=i, current_leader_epoch=-1, timestamp=-1) for i in range(n)])])


def _one_list_offsets(index: int) -> ListOffsetsRequest:
    req = _list_offsets_request(index + 1)
    req.topics[0].partitions = req.topics[0].partitions[index:]
    return req


def _timed(state: Any, key: int, version: int, req: Any) -> tuple[float, float]:
    """(handler CPU s, encode CPU s) of one request (``state``: a BrokerState, or the
    cluster-mode ports of ``_cluster_state``)."""
    services = state.services if isinstance(state, SimpleNamespace) else build_services(state)
    ctx = RequestContext(key, version, 1, "bench", services, "127.0.0.1:5000")
    t0 = time.thread_time()
    resp = REGISTRY.get(key).handler(ctx, req)
    t1 = time.thread_time()
    encode_parts(resp, version)
    return t1 - t0, time.thread_time() - t1


def _update_metadata(n: int, leader_shift: int) -> UpdateMetadataRequest:
    """Brokers 1-3 live; ``big`` with ``n`` partitions and the small topics, RF 3, leaders
    rotated by ``leader_shift`` (a new round: every partition's leader changed)."""
    U = UpdateMetadataRequest
    brokers = [U.UpdateMetadataBroker(id=b, endpoints=[U.UpdateMetadataEndpoint(
        port=9090 + b, host="127.0.0.1", listener="PLAINTEXT", security_protocol=0)], rack=None)
        for b in (1, 2, 3)]
    topics = []
    for name, count in [("big", n)] + [(s, 1) for s in SMALL]:
        parts = []
        for i in range(count):
            replicas = [1 + (i + k + leader_shift) % 3 for k in range(3)]
            parts.append(U.UpdateMetadataPartitionState(
                topic_name=name, partition_index=i, controller_epoch=1, leader=replicas[0],
                leader_epoch=leader_shift, isr=replicas, zk_version=leader_shift, replicas=replicas,
                offline_replicas=[]))
        topics.append(U.UpdateMetadataTopicState(topic_name=name, topic_id=uuid.uuid5(uuid.NAMESPACE_OID, name),
                                                 partition_states=parts))
    return U(controller_id=1, controller_epoch=1, broker_epoch=-1, live_brokers=brokers, topic_states=topics)


def _one_leader_moved(r: int) -> UpdateMetadataRequest:
    """Partition 0 of ``big`` only, its leader moved (what a leader election sends)."""
    req = _update_metadata(1, r + 1)
    req.topic_states = req.topic_states[:1]
    return req


def _cluster_state(config: BrokerConfig) -> Any:
    """The ports a cluster-mode broker's Metadata handler reads: its metadata cache behind
    the MetadataSource port, and the config (``.cache`` for the bench to fill)."""
    cache = MetadataCache(broker_id=1)
    ports = Services(node_id=1, cluster_id="bench-cluster", config=SimpleNamespace(config=config, static_config=config),
                     catalog=None, replicas=None, metadata=ClusterMetadata(config.listeners[0].name, cache, lambda: 1),
                     authorizer=ALLOW_ALL, groups=None, txns=None, producer_ids=None, quotas=None, scram=None,
                     fetch_waiters=None, fetch_sessions=None, clock=None)  # type: ignore[arg-type]
    return SimpleNamespace(cache=cache, services=ports)


def _rounds(rounds: int, one: Callable[[int], dict[str, float]]) -> dict[str, float]:
    results = [one(r) for r in range(rounds)]
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    n = args.partitions
    where = tempfile.mkdtemp(prefix="metadata-bench-")
    try:
        config = BrokerConfig({"log.dirs": where, "auto.create.topics.enable": "false"})
        state = BrokerState(config)
        t0 = time.monotonic()
        state.create_topic("big", n)
        for s in SMALL:
            state.create_topic(s, 1)
        print(f"# {n} partitions created in {time.monotonic() - t0:.1f} s")
        cluster = _cluster_state(config)
        all_topics, one_topic, offsets = _metadata_request(None), _metadata_request(["big"]), _list_offsets_request(n)
        singles = [_one_list_offsets(i) for i in range(min(n, 1000))]

        def single(r: int) -> dict[str, float]:
            # as after a change of every topic: nothing cached (kbroker/metadata/metadata_view.py)
            getattr(metadata_view_module, "_caches", {}).clear()
            out = {}
            for label, key, req in (("metadata all", 3, all_topics), ("metadata one", 3, one_topic),
                                    ("list_offsets", 2, offsets)):
                version = 12 if key == 3 else 7
                h, e = _timed(state, key, version, req)
                h2, e2 = _timed(state, key, version, req)
                out[f"single {label} handler"], out[f"single {label} encode"] = h, e
                out[f"single {label} handler warm"], out[f"single {label} encode warm"] = h2, e2
            # librdkafka asks one ListOffsets per partition: the per-request figure, x1000
            h = e = 0.0
            for i in range(1000):
                hi, ei = _timed(state, 2, 7, singles[i % len(singles)])
                h, e = h + hi, e + ei
            out["single list_offsets 1 partition handler x1000"] = h
            out["single list_offsets 1 partition encode x1000"] = e
            return out

        def clustered(r: int) -> dict[str, float]:
            t = time.thread_time()
            cluster.cache.apply_update_metadata(_update_metadata(n, r))
            out = {"cluster update_metadata apply": time.thread_time() - t}
            for label, req in (("metadata all", all_topics), ("metadata one", one_topic)):
                h, e = _timed(cluster, 3, 12, req)
                h2, e2 = _timed(cluster, 3, 12, req)
                out[f"cluster {label} handler"], out[f"cluster {label} encode"] = h, e
                out[f"cluster {label} handler warm"], out[f"cluster {label} encode warm"] = h2, e2
            t = time.thread_time()
            cluster.cache.apply_update_metadata(_one_leader_moved(r))
            out["cluster update_metadata apply, 1 partition"] = time.thread_time() - t
            h, e = _timed(cluster, 3, 12, all_topics)
            out["cluster metadata all handler, 1 partition changed"] = h
            return out

        if args.profile:
            single(0)
            clustered(0)
            prof = cProfile.Profile()
            prof.enable()
            single(1)
            clustered(1)
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
            return
        figures = {**_rounds(args.rounds, single), **_rounds(args.rounds, clustered)}
        print(f"# {n} partitions, median of {args.rounds} rounds, thread CPU ms")
        for k, v in figures.items():
            print(f"{k:45s} {v * 1000:9.2f}")
        state.shutdown()
    finally:
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
