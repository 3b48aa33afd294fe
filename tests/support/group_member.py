"""A confluent-kafka group member in its own process, so a test can freeze it (SIGSTOP: it
stops heartbeating without leaving the group) or kill it (SIGKILL: no LeaveGroup).

Run as ``python -m tests.support.group_member BOOTSTRAP GROUP TOPIC [key=value ...]``; the
key=value pairs are extra consumer configs.  It prints one JSON object per line on stdout:
``{"assigned": [partitions]}`` whenever its assignment changes (the first one included) and
``{"p": partition, "o": offset, "v": value}`` for every record, and
``{"callback": "assign" | "revoke", "partitions": [...]}`` from the rebalance callbacks (so a
test sees a rebalance even when the assignment comes back unchanged).  It runs until stdin closes
or it is killed; on stdin EOF it closes the consumer (a static member leaves no LeaveGroup).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> None:
    bootstrap, group, topic, *pairs = argv
    config = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False}
    config.update(pair.split("=", 1) for pair in pairs)
    c = Consumer(config)

    def callback(kind: str):
        return lambda _c, tps: print(json.dumps({"callback": kind, "partitions": sorted(
            tp.partition for tp in tps)}), flush=True)

    c.subscribe([topic], on_assign=callback("assign"), on_revoke=callback("revoke"))
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    last = None
    while not stop.is_set():
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            print(json.dumps({"p": m.partition(), "o": m.offset(), "v": int(m.value())}), flush=True)
        now = sorted(tp.partition for tp in c.assignment())
        if now != last:
            print(json.dumps({"assigned": now}), flush=True)
            last = now
    c.close()


class MemberProcess:
    """Test-side handle: start the member, read its events, freeze/kill/close it."""

    def __init__(self, bootstrap: str, group: str, topic: str, **config: str):
        args = [sys.executable, "-m", "tests.support.group_member", bootstrap, group, topic,
                *(f"{k}={v}" for k, v in config.items())]
        self.proc = subprocess.Popen(args, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.assignments: list[tuple[float, list[int]]] = []  # (monotonic time, partitions)
        self.records: list[tuple[int, int, int]] = []  # (partition, offset, value)
        self.callbacks: list[tuple[str, list[int]]] = []  # ("assign" | "revoke", partitions)
        self._lock = threading.RLock()  # wait_for predicates call assignment()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            with self._lock:
                if "assigned" in event:
                    self.assignments.append((time.monotonic(), event["assigned"]))
                elif "callback" in event:
                    self.callbacks.append((event["callback"], event["partitions"]))
                else:
                    self.records.append((event["p"], event["o"], event["v"]))

    def assignment(self) -> list[int]:
        with self._lock:
            return self.assignments[-1][1] if self.assignments else []

    def wait_for(self, predicate, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(self):
                    return
            time.sleep(0.05)
        raise AssertionError(f"timed out; assignments={self.assignments} records={len(self.records)}")

    def close(self, timeout_s: float = 30.0) -> None:
        """Close the consumer cleanly (stdin EOF) and wait for the process to end."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)


if __name__ == "__main__":
    main(sys.argv[1:])
