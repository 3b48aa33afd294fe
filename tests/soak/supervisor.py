"""Running the workers (tests/soak/workers.py) from the soak: each is a child process in the
client namespace; one that exits before it is asked to stop (a librdkafka hang it noticed,
a crash) is started again as its next *incarnation*, with a history file of its own
(``<name>.<k>.jsonl``) and, for producers, new values (the name carries the incarnation).
A transactional worker keeps its transactional.id, so the new incarnation fences the old
one and finishes what it left open.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Worker:
    def __init__(self, kind: str, name: str, work: Path, prefix: list[str], args: list[str]) -> None:
        self.kind, self.name, self.work = kind, name, Path(work)
        self.prefix, self.args = list(prefix), list(args)
        self.stop_file = self.work / f"{name}.stop"
        self.incarnation = -1
        self.proc: subprocess.Popen[bytes] | None = None
        self.exits: list[int] = []          # exit codes of incarnations that ended on their own
        self.stopping = False
        self._counts: dict[Path, tuple[int, dict[str, int]]] = {}   # file -> (bytes read, t -> lines)
        self._lock = threading.Lock()

    def history(self, k: int) -> Path:
        return self.work / f"{self.name}.{k}.jsonl"

    def histories(self) -> list[Path]:
        return [self.history(k) for k in range(self.incarnation + 1) if self.history(k).exists()]

    def start(self) -> Worker:
        with self._lock:
            self.incarnation += 1
            k = self.incarnation
            cmd = [*self.prefix, sys.executable, "-m", "tests.soak.workers", self.kind, "--out", str(self.history(k)),
                   "--stop-file", str(self.stop_file), "--name", f"{self.name}-{k}", *self.args]
            with open(self.work / f"{self.name}.{k}.log", "ab") as log:
                self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
        return self

    def ensure(self) -> None:
        """Start the next incarnation if this one ended before it was asked to stop."""
        with self._lock:
            ended = not self.stopping and self.proc is not None and self.proc.poll() is not None
            if ended:
                assert self.proc is not None
                self.exits.append(self.proc.returncode)
        if ended:
            self.start()

    def request_stop(self) -> None:
        with self._lock:
            self.stopping = True
            self.stop_file.touch()

    def wait(self, timeout_s: float) -> int | None:
        """Wait for the stopping worker; kill it past ``timeout_s`` (None then)."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def count(self, t: str) -> int:
        """Lines of type ``t`` in every history so far (each file read incrementally)."""
        total = 0
        for path in self.histories():
            read, counts = self._counts.get(path, (0, {}))
            with open(path, "rb") as f:
                f.seek(read)
                chunk = f.read()
            complete = chunk[:chunk.rfind(b"\n") + 1]
            for line in complete.splitlines():
                try:
                    kind = json.loads(line).get("t")
                except json.JSONDecodeError:
                    continue
                counts[kind] = counts.get(kind, 0) + 1
            self._counts[path] = (read + len(complete), counts)
            total += counts.get(t, 0)
        return total

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def entries(self) -> Iterator[dict]:
        """Every complete line of every incarnation's history, in order."""
        for path in self.histories():
            yield from self.entries_of(path)

    @staticmethod
    def entries_of(path: Path) -> Iterator[dict]:
        for line in Path(path).read_bytes().splitlines():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue   # a line torn by a kill


class Supervisor:
    """Restarts workers that end on their own, every second, on a thread of its own."""

    def __init__(self, workers: list[Worker]) -> None:
        self.workers = workers
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="soak-supervisor", daemon=True)

    def start(self) -> Supervisor:
        for w in self.workers:
            w.start()
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            for w in self.workers:
                w.ensure()

    def halt(self) -> None:
        """No more restarts (the workers are about to be asked to stop)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def kill_all(self) -> None:
        self._stop.set()
        for w in self.workers:
            w.kill()

    def restarts(self) -> dict[str, list[int]]:
        return {w.name: list(w.exits) for w in self.workers if w.exits}
