"""Shutdown and start-up of a single kbroker holding many partitions: seconds, and the event
loop's longest stall meanwhile.

One broker process per run (fresh data dir), started through bench/harness/loop_probe.py (a thread
that asks the event loop every 5 ms to run a no-op and notes how long it waited).  The
bench creates T topics of P partitions (one raw CreateTopics), writes R records to every
partition (confluent-kafka, acks=all), then a pinger thread sends ApiVersions every 10 ms on
its own connection and the broker gets SIGTERM.  Reported: seconds from SIGTERM to exit,
the longest loop stall between SIGTERM and exit, how long ApiVersions kept being answered
after SIGTERM (until the listener closed).  Then the broker starts again on the same data
(clean start: the marker is there) and is stopped again: seconds until "started" and the
longest stall during start-up.

``--tree DIR`` runs the broker from another checkout (e.g. a ``git worktree`` of an older
revision; its compiled ``log/_record_scan*.so`` must be there), with this checkout's probe.

Usage: ``.venv/bin/python -m bench.suites.shutdown [--topics 10 --partitions 1000 --records 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from math import nan
from pathlib import Path

from bench.suites.topic_creation import connect
from kbroker.testing.free_ports import free_port
from wire.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
)

ROOT = Path(__file__).resolve().parents[2]
_STARTED = re.compile(r"started \(kbroker id=\d+\) listening on")
_FLUSHED = re.compile(r"flushed \d+ log\(s\) in ([0-9.]+) s")      # kbroker/app/log_shutdown.py
_CLOSED = re.compile(r"closed \d+ log\(s\), checkpoints and clean-shutdown marker written in ([0-9.]+) s")


class Broker:
    """``python bench/harness/loop_probe.py serve`` from ``tree``; output lines collected with arrival times."""

    def __init__(self, tree: Path, data: Path, port: int, probe_file: Path) -> None:
        self.lines: list[tuple[float, str]] = []
        self.started = threading.Event()
        self.probe_file = probe_file
        cmd = [sys.executable, str(ROOT / "bench" / "harness" / "loop_probe.py"), "serve",
               "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={data}",
               "--override", "num.partitions=1"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(tree), "KBROKER_LOOP_PROBE": str(probe_file)}
        self.t_spawn = time.time()
        self.proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        if not self.started.wait(600):
            raise RuntimeError("broker did not start:\n" + "\n".join(line for _, line in self.lines[-30:]))
        self.t_started = time.time()
        # the SIGTERM handler is installed right after "started", before the loop serves
        # anything: one answer means a SIGTERM from now on is the broker's to handle
        with connect(f"127.0.0.1:{port}") as conn:
            conn.call(ApiVersionsRequest(client_software_name="bench", client_software_version="1"), 3)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.time(), line.rstrip()))
            if _STARTED.search(line):
                self.started.set()

    def phase_seconds(self) -> dict[str, float]:
        """The broker's own log lines' figures: seconds of step 1 (``flush_all``, the listeners
        open) and of step 2 (``close_all``, through the clean-shutdown marker)."""
        out = {}
        for _, line in self.lines:
            if m := _FLUSHED.search(line):
                out["flush_s"] = float(m.group(1))
            elif m := _CLOSED.search(line):
                out["close_s"] = float(m.group(1))
        return out

    def stop(self) -> tuple[float, float]:
        """SIGTERM; (time sent, time exited)."""
        t = time.time()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(900)
        return t, time.time()

    def stalls_ms(self, t_from: float, t_to: float) -> list[float]:
        out = []
        for line in self.probe_file.read_text().splitlines():
            t, ms = json.loads(line)
            if t_from <= t <= t_to:
                out.append(ms)
        return out


class Pinger(threading.Thread):
    """ApiVersions every 10 ms until the connection closes; the time of the last answer."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.conn = connect(bootstrap, timeout_s=900)
        self.last_answer = 0.0
        self.answers = 0

    def run(self) -> None:
        req = ApiVersionsRequest(client_software_name="bench", client_software_version="1")
        try:
            while True:
                self.conn.call(req, 3)
                self.last_answer = time.time()
                self.answers += 1
                time.sleep(0.01)
        except OSError:
            return


def populate(bootstrap: str, topics: int, partitions: int, records: int) -> None:
    from confluent_kafka import Producer

    conn = connect(bootstrap)
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=f"t{i}", num_partitions=partitions, replication_factor=1, assignments=[], configs=[])
        for i in range(topics)], timeout_ms=600_000, validate_only=False)
    resp = conn.call(req, 7)
    assert all(t.error_code == 0 for t in resp.topics), resp
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50,
                  "queue.buffering.max.messages": 1_000_000})
    failed = []
    for i in range(topics):
        for part in range(partitions):
            for r in range(records):
                p.produce(f"t{i}", value=b"v%d" % r, partition=part,
                          on_delivery=lambda err, _m: err is not None and failed.append(err))
        p.poll(0)
    p.flush(600)
    assert not failed, failed[:3]


def run(tree: Path, topics: int, partitions: int, records: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        data, port = Path(tmp) / "data", free_port()
        b = Broker(tree, data, port, Path(tmp) / "probe1.jsonl")
        bootstrap = f"127.0.0.1:{port}"
        populate(bootstrap, topics, partitions, records)
        load = os.getloadavg()[0]
        pinger = Pinger(bootstrap)
        pinger.start()
        time.sleep(0.2)
        t_term, t_exit = b.stop()
        pinger.join(60)
        stalls = b.stalls_ms(t_term, t_exit)
        b2 = Broker(tree, data, port, Path(tmp) / "probe2.jsonl")
        start_s = b2.t_started - b2.t_spawn
        t_term2, t_exit2 = b2.stop()
        if not b2.probe_file.exists():
            raise RuntimeError("no probe file:\n" + "\n".join(line for _, line in b2.lines[-20:]))
        start_stalls = b2.stalls_ms(0, b2.t_started)
        return {"partitions": topics * partitions, "shutdown_s": t_exit - t_term,
                "shutdown_worst_stall_ms": max(stalls, default=float("nan")),
                "answered_after_sigterm_s": max(0.0, pinger.last_answer - t_term),
                "start_s": start_s, "start_worst_stall_ms": max(start_stalls, default=float("nan")),
                "second_shutdown_s": t_exit2 - t_term2, "load": load,
                **b.phase_seconds(), **{f"second_{k}": v for k, v in b2.phase_seconds().items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=1000, help="per topic")
    ap.add_argument("--records", type=int, default=3, help="per partition")
    ap.add_argument("--tree", type=Path, default=ROOT)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the broker inherits it
    r = run(args.tree.resolve(), args.topics, args.partitions, args.records)
    print(f"{r['partitions']} partitions ({args.tree}): shutdown {r['shutdown_s']:.2f} s, worst loop stall "
          f"{r['shutdown_worst_stall_ms']:.0f} ms, ApiVersions answered until {r['answered_after_sigterm_s']:.2f} s "
          f"after SIGTERM; start {r['start_s']:.2f} s, worst loop stall {r['start_worst_stall_ms']:.0f} ms; "
          f"second shutdown {r['second_shutdown_s']:.2f} s; load {r['load']:.2f}; the broker's own figures: "
          f"flush {r.get('flush_s', nan):.2f} s + close {r.get('close_s', nan):.2f} s, second "
          f"{r.get('second_flush_s', nan):.2f} s + {r.get('second_close_s', nan):.2f} s", flush=True)


if __name__ == "__main__":
    main()
