"""A real standalone ZooKeeper for the cluster tests (and ``make cluster``).

The server is Apache ZooKeeper from Maven Central (zookeeper/pom.xml, fetched into the
git-ignored zookeeper/jars/ by ``make zookeeper-jars``), run as bin/zkServer.sh runs it:
``java -cp 'jars/*' org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg``.  zoo.cfg
lives in a fresh directory: ``tickTime=500`` (so sessions of 1-10 s are allowed: ZooKeeper
negotiates timeouts within [2, 20] x tickTime), ``clientPort`` a free port on 127.0.0.1, the
AdminServer (an HTTP server on 8080) off, and the ``ruok``/``srvr``/``stat`` four-letter
words allowed.  Ready means ``srvr`` reports a Mode (serving); the port is kept across restart() so
clients find the same server again (its data dir is kept too: znodes survive a restart).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

from kbroker.testing.free_ports import free_port as free_port

ROOT = Path(__file__).resolve().parents[2]
JARS = ROOT / "zookeeper" / "jars"
MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


def four_letter_word(port: int, word: bytes, timeout_s: float = 2.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        s.sendall(word)
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
        return b"".join(chunks)


class _PortTaken(Exception):
    """ZooKeeper exited because its client port was taken."""


class ZooKeeperProcess:
    def __init__(self, work_dir: Path, port: int | None = None, tick_time_ms: int = 500):
        self.work_dir = Path(work_dir)
        self._fixed_port = port is not None   # the caller's port is never re-chosen
        self._started_once = False
        self.port = port or free_port()
        self.tick_time_ms = tick_time_ms
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.work_dir / "zookeeper.out"

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _write_config(self) -> Path:
        data = self.work_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.work_dir / "zoo.cfg"
        cfg.write_text(
            f"tickTime={self.tick_time_ms}\n"
            f"dataDir={data}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            "maxClientCnxns=0\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr,stat\n"
            # Sessions expire only by the server's clock; keep its check granular.
            f"minSessionTimeout={2 * self.tick_time_ms}\n"
            f"maxSessionTimeout={20 * self.tick_time_ms}\n"
        )
        return cfg

    def start(self, timeout_s: float = 60.0) -> ZooKeeperProcess:
        """Start and wait until serving.  A port chosen here (kbroker/testing/free_ports.py) that
        another process took before ZooKeeper bound it (it exits with "Address already in
        use") is chosen again, a few times at most, on the first start only."""
        for _ in range(4):
            try:
                return self._start_once(timeout_s)
            except _PortTaken:
                if self._fixed_port or self._started_once:
                    raise RuntimeError(f"ZooKeeper's port {self.port} is taken: {self.output()}") from None
                self.port = free_port()
        raise RuntimeError(f"ZooKeeper found every port it was given taken: {self.output()}")

    def _start_once(self, timeout_s: float) -> ZooKeeperProcess:
        if not any(JARS.glob("zookeeper-*.jar")):
            raise RuntimeError(f"no ZooKeeper jars in {JARS}: run `make zookeeper-jars`")
        cfg = self._write_config()
        logged_before = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dzookeeper.admin.enableServer=false", "-cp", f"{JARS}/*", MAIN, str(cfg)],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.work_dir,
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if "Address already in use" in self._output_since(logged_before):
                    raise _PortTaken()
                raise RuntimeError(f"ZooKeeper exited with {self.proc.returncode}: {self.output()}")
            try:
                # ruok says imok as soon as the port is open; srvr reports a Mode only
                # once the server is serving requests.
                if b"Mode:" in four_letter_word(self.port, b"srvr"):
                    self._started_once = True
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"ZooKeeper did not answer ruok in {timeout_s}s: {self.output()}")

    def _output_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 30.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self) -> ZooKeeperProcess:
        self.stop()
        return self.start()

    def __enter__(self) -> ZooKeeperProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
