"""A real kbroker process for compat tests: started with ``python -m kbroker serve``,
talked to over TCP on 127.0.0.1, stopped by SIGTERM or killed with SIGKILL.

The port is chosen once (kbroker/testing/free_ports.py: at random outside the kernel's ephemeral
range, so no outgoing connection takes it meanwhile) and kept across restarts, so clients
bootstrapped before a restart find the broker again.  The broker's own log line
"started ... listening on HOST:PORT" is what tells us it is up.  If another process took a
port chosen by ``free_port`` between the choice and the broker's bind (the broker exits saying "address
already in use"), the first start picks a new port for it and starts again, a few times at
most, when this object holds every use of that port: its own ``port`` (unless the caller
gave it), or a port kept in ``ports`` / ``*_port`` (tests keep their other listeners' ports
there); the listeners are rewritten to match.  A restart keeps its port and waits for it to
be free again.  Started with
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

from kbroker.testing.free_ports import bind_conflict, handed_out
from kbroker.testing.free_ports import free_port as free_port

_LISTENING = re.compile(r"started \(kbroker id=\d+\) listening on ([^\s:]+):(\d+)")
# log/log_manager.py's LogManager.cleanup_logs, at DEBUG
_RETENTION_PASS = re.compile(r"Log cleanup completed\. .* \(retention pass (\d+), began at (\d+) ms\)")
ROOT = Path(__file__).resolve().parents[2]
_BIND_ATTEMPTS = 5   # starts of one broker whose port was taken before it could bind it


class BrokerProcess:
    def __init__(self, data_dir: Path, port: int | None = None, overrides: dict[str, str] | None = None,
                 python_args: tuple[str, ...] = (), log_level: str | None = None):
        """``python_args`` go between the interpreter and ``-m kbroker`` (e.g. a profiler:
        ``("-m", "cProfile", "-o", path)``); ``log_level`` is kbroker's ``--log-level``."""
        self.data_dir = Path(data_dir)
        self.python_args = tuple(python_args)
        self.log_level = log_level
        self._fixed_port = port is not None   # the caller's port is never re-chosen
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
        self._started_once = False   # from then on the port is the broker's: never re-chosen

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        """The process to run (bench/harness/kafka_dist.py's KafkaProcess runs Apache Kafka instead)."""
        args = [sys.executable, *self.python_args, "-m", "kbroker", "serve"]
        if self.log_level is not None:
            args += ["--log-level", self.log_level]
        for k, v in self.overrides.items():
            args += ["--override", f"{k}={v}"]
        return args

    # the output line that says the broker is up
    ready_line: re.Pattern[str] = _LISTENING

    def start(self, timeout_s: float = 90.0) -> BrokerProcess:
        """Start the process and wait for its "listening" line (``timeout_s``); a port taken
        meanwhile by someone else is dealt with as the module docstring says."""
        deadline = time.monotonic() + timeout_s
        for _ in range(_BIND_ATTEMPTS):
            first_line = len(self.output)
            if self._start_once(max(1.0, deadline - time.monotonic())):
                self._started_once = True
                return self
            taken = bind_conflict("".join(self.output[first_line:]))
            if taken is None or time.monotonic() >= deadline:
                break
            if self._started_once:
                self._wait_bindable(taken, deadline)
            elif self._may_replace(taken):
                self._replace_port(taken, free_port())
            else:
                break
        raise RuntimeError("broker did not start:\n" + "".join(self.output))

    def _may_replace(self, port: int) -> bool:
        """A port chosen by ``free_port`` that this object holds everywhere it is used: its
        own port when the caller did not fix it, or one kept in ``ports`` / ``*_port``."""
        if not handed_out(port):
            return False
        if port == self.port and not self._fixed_port:
            return True
        return any(value == port for attr, value in vars(self).items()
                   if attr.endswith("_port") and attr != "port") or (
            isinstance(getattr(self, "ports", None), dict) and port in self.ports.values()  # type: ignore[attr-defined]
            and (port != self.port or not self._fixed_port))

    def _replace_port(self, old: int, new: int) -> None:
        """Move everything that names port ``old`` to ``new``: the properties (listeners) and
        this object's port attributes (tests keep the other listeners' ports on it)."""
        named = re.compile(rf":{old}(?!\d)")
        self.overrides = {k: named.sub(f":{new}", v) for k, v in self.overrides.items()}
        for attr, value in list(vars(self).items()):
            if attr.endswith("port") and not attr.startswith("_") and value == old:
                setattr(self, attr, new)
            elif attr == "ports" and isinstance(value, dict):
                value.update({k: new for k, v in value.items() if v == old})
        with self._new_output:
            self.output.append(f"[broker_process] port {old} was taken before the broker bound it; "
                               f"starting again on {new}\n")

    def _wait_bindable(self, port: int, deadline: float) -> None:
        while time.monotonic() < deadline:  # the old socket may linger briefly
            try:
                with socket.socket() as s:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind(("127.0.0.1", port))
                return
            except OSError:
                time.sleep(0.1)

    def _start_once(self, timeout_s: float) -> bool:
        """One process start: True once it is listening; False (and the process gone) if it
        ended or did not say so within ``timeout_s``."""
        self.proc = subprocess.Popen(self.command(), cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        started = threading.Event()   # the ready line was read, or the output ended
        listening: list[bool] = []
        proc = self.proc

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                with self._new_output:
                    self.output.append(line)
                    self._new_output.notify_all()
                if self.ready_line.search(line):
                    listening.append(True)
                    started.set()
            started.set()
            with self._new_output:
                self._new_output.notify_all()  # the process ended: waiters give up

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        if not started.wait(timeout_s) or not listening or proc.poll() is not None:
            self.kill()
            return False
        return True

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
            # the output (kbroker/app/stack_dump.py) for the failure report, then kill -9
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
        self._wait_bindable(self.port, time.monotonic() + 60)
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
