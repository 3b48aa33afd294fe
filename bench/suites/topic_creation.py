"""Topic creation on a single kbroker: seconds to create P partitions, and the event loop's
worst stall meanwhile.

One broker process (``python -m kbroker serve``, fresh data dir per point).  For each
partition count P: a pinger thread sends ApiVersions on its own connection every 10 ms and
records each round trip; the main thread sends one CreateTopics of P partitions
(timeout_ms 600,000) over the raw protocol and then polls Metadata until every partition
has a leader.  Reported per point: seconds until the CreateTopics answer, seconds until
Metadata shows all P partitions, the worst and 99th-percentile ApiVersions round trip while
the creation ran (ms), and the load average at the start.  The round trips are the
measure of "does the broker keep answering": a CreateTopics on the event loop shows up as
one ApiVersions round trip as long as the whole creation.

Usage: ``.venv/bin/python -m bench.suites.topic_creation [--partitions 1000,5000]``
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import threading
import time
from pathlib import Path

from kbroker.client import Connection
from tests.support.broker_process import BrokerProcess
from wire.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    MetadataRequest,
)


def connect(bootstrap: str, timeout_s: float = 900) -> Connection:
    host, port = bootstrap.rsplit(":", 1)
    return Connection.open(host, int(port), client_id="topic-creation-bench", timeout_s=timeout_s, negotiate=False)


class Pinger(threading.Thread):
    """ApiVersions every ``interval_s`` on a connection of its own; round trips in ms."""

    def __init__(self, bootstrap: str, interval_s: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.conn = connect(bootstrap)
        self.interval_s = interval_s
        self.rtts_ms: list[float] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        req = ApiVersionsRequest(client_software_name="bench", client_software_version="1")
        while not self.stop_event.is_set():
            t = time.perf_counter()
            self.conn.call(req, 3)
            self.rtts_ms.append((time.perf_counter() - t) * 1000)
            self.stop_event.wait(self.interval_s)


def measure(bootstrap: str, topic: str, partitions: int) -> dict[str, float]:
    conn = connect(bootstrap)
    pinger = Pinger(bootstrap)
    pinger.start()
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=600_000, validate_only=False)
    resp = conn.call(req, 7)
    answered = time.perf_counter() - t0
    assert resp.topics[0].error_code == 0, resp
    md = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                         allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    while True:
        m = conn.call(md, 12)
        parts = m.topics[0].partitions if m.topics and m.topics[0].error_code == 0 else []
        if len(parts) == partitions and all(p.leader_id >= 0 for p in parts):
            break
    visible = time.perf_counter() - t0
    pinger.stop_event.set()
    pinger.join()
    rtts = sorted(pinger.rtts_ms)
    return {"partitions": partitions, "answered_s": answered, "visible_s": visible,
            "worst_ping_ms": rtts[-1], "p99_ping_ms": rtts[int(len(rtts) * 0.99)],
            "pings": len(rtts), "load": load}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", default="1000,5000")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the broker inherits it
    for p in (int(x) for x in args.partitions.split(",")):
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            broker = BrokerProcess(Path(tmp) / "data").start()
            try:
                r = measure(broker.bootstrap, f"p{p}", p)
            finally:
                broker.stop()
        print(f"{p} partitions: answered {r['answered_s']:.2f} s, all leaders in Metadata "
              f"{r['visible_s']:.2f} s; ApiVersions round trip worst {r['worst_ping_ms']:.0f} ms, "
              f"p99 {r['p99_ping_ms']:.0f} ms over {r['pings']} pings; load average {r['load']:.2f}",
              flush=True)


if __name__ == "__main__":
    main()
