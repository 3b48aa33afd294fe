"""A real kbroker process for compat tests: started with ``python -m kbroker serve``,
talked to over TCP on 127.0.0.1, stopped by SIGTERM or killed with SIGKILL.

The port is chosen once (a free ephemeral port) and kept across restarts, so clients
bootstrapped before a restart find the broker again.  The broker's own log line
"started ... listening on HOST:PORT" is what tells us it is up.  Started with
``log_level="DEBUG"``, the broker also logs the end of every retention pass ("Log cleanup
completed ... (retention pass N, began at MS ms)"), which ``wait_for_retention_pass`` waits on
so that a test can assert that retention ran and left something alone.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

_LISTENING = re.compile(r"started \(kbroker id=\d+\) listening on ([^\s:]+):(\d+)")
# log/log_manager.py's LogManager.cleanup_logs, at DEBUG
_RETENTION_PASS = re.compile(r"Log cleanup completed\. .* \(retention pass (\d+), began at (\d+) ms\)")
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    def __init__(self, data_dir: Path, port: int | None = None, overrides: dict[str, str] | None = None,
                 python_args: tuple[str, ...] = (), log_level: str | None = None):
        """``python_args`` go between the interpreter and ``-m kbroker`` (e.g. a profiler:
        ``("-m", "cProfile", "-o", path)``); ``log_level`` is kbroker's ``--log-level``."""
        self.data_dir = Path(data_dir)
        self.python_args = tuple(python_args)
        self.log_level = log_level
        self.port = port or free_port()
        self.overrides = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            **(overrides or {}),
        }
        self.proc: subprocess.Popen[str] | None = None
        self.output: list[str] = []
        self._new_output = threading.Condition()  # notified for each line read into output
        self._reader: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        """The process to run (bench/kafka_dist.py's KafkaProcess runs Apache Kafka instead)."""
        args = [sys.executable, *self.python_args, "-m", "kbroker", "serve"]
        if self.log_level is not None:
            args += ["--log-level", self.log_level]
        for k, v in self.overrides.items():
            args += ["--override", f"{k}={v}"]
        return args

    # the output line that says the broker is up
    ready_line: re.Pattern[str] = _LISTENING

    def start(self, timeout_s: float = 90.0) -> BrokerProcess:
        self.proc = subprocess.Popen(self.command(), cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        started = threading.Event()

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                with self._new_output:
                    self.output.append(line)
                    self._new_output.notify_all()
                if self.ready_line.search(line):
                    started.set()
            started.set()
            with self._new_output:
                self._new_output.notify_all()  # the process ended: waiters give up

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        if not started.wait(timeout_s) or self.proc.poll() is not None:
            self.kill()
            raise RuntimeError("broker did not start:\n" + "".join(self.output))
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM and wait: a clean shutdown (flush, checkpoints, clean-shutdown marker)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            # a broker that does not finish shutting down: its task and thread stacks into
            # the output (kbroker/stack_dump.py) for the failure report, then kill -9
            self.proc.send_signal(signal.SIGUSR1)
            try:
                rc = self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        self.proc = None
        return rc

    def kill(self) -> None:
        """SIGKILL: an unclean shutdown, like kill -9."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        self.proc = None

    def restart(self, clean: bool = True) -> BrokerProcess:
        if clean:
            self.stop()
        else:
            self.kill()
        deadline = time.time() + 60
        while time.time() < deadline:  # the old socket may linger briefly
            try:
                with socket.socket() as s:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind(("127.0.0.1", self.port))
                break
            except OSError:
                time.sleep(0.1)
        return self.start()

    def log_text(self) -> str:
        return "".join(self.output)

    def wait_for_output(self, predicate: Callable[[list[str]], bool], timeout_s: float = 60.0) -> bool:
        """Wait until ``predicate(output lines so far)`` holds (True), the process has ended
        or ``timeout_s`` passed (False); re-checked on each new line, so it returns at once."""
        with self._new_output:
            return self._new_output.wait_for(
                lambda: predicate(self.output) or not self.alive(), timeout_s) and predicate(self.output)

    def retention_passes(self) -> list[tuple[int, int]]:
        """(pass number, epoch ms it began) of every retention pass logged so far; the broker
        must run with ``log_level="DEBUG"``."""
        with self._new_output:
            return [(int(m[1]), int(m[2])) for m in map(_RETENTION_PASS.search, self.output) if m]

    def wait_for_retention_pass(self, after_ms: int | None = None, passes: int = 1,
                                timeout_s: float = 60.0) -> None:
        """Wait until ``passes`` retention passes that began after ``after_ms`` (epoch ms,
        default now) have completed: every change made before ``after_ms`` (a config altered,
        a record appended) has been through retention.  Needs ``log_level="DEBUG"``."""
        assert self.log_level == "DEBUG", "retention passes are logged at DEBUG"
        since = time.time_ns() // 1_000_000 if after_ms is None else after_ms

        def done(lines: list[str]) -> bool:
            return sum(1 for m in map(_RETENTION_PASS.search, lines) if m and int(m[2]) > since) >= passes

        if not self.wait_for_output(done, timeout_s):
            raise AssertionError(f"no {passes} retention pass(es) began after {since} ms within {timeout_s} s; "
                                 f"passes logged: {self.retention_passes()[-5:]}")
