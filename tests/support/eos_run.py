"""Driving tests/support/eos_worker.py and checking its output exactly once; shared by the
single-node test (tests/compat/test_transactions_eos.py) and the cluster one
(tests/cluster/test_transactions_cluster.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from confluent_kafka import Producer

from tests.support.admin_helpers import wait_until
from tests.support.broker_process import ROOT
from tests.support.eos_worker import HUNG_EXIT
from tests.support.txn_workload import read_all


@dataclass
class Kill:
    """A kill the test injected: ``start`` and ``end`` index the worker's output lines read
    when the kill began and when the test had restored what it killed."""

    what: str
    start: int
    end: int | None = None


class EosWorker:
    """The worker process; ``progress`` is the last committed input offset sum it printed.

    The test tells it about every kill it injects (``kill_and_replace`` for the worker
    itself, ``injected_kill`` around a broker's), and the run reports how the worker coped:

    - ``restarts``: its ``restart <kind> <error>`` lines (tests/support/eos_worker.py), each
      explained by a kill only when it came after the kill began and before the worker's
      first commit once the test had restored what it killed; a fatal error is explained by
      nothing (a killed process or broker gives a transactional producer no fatal error);
      ``unexplained_restarts()`` lists the others, which fail the tests;
    - ``hangs``: how often it exited with ``HUNG_EXIT`` (a librdkafka call stuck past its
      timeout) and was started again, as a supervisor would; ``hung`` holds their lines.
      The tests require none.

    Its lines, and markers for the kills and new processes (``[eos_run] ...``), accumulate
    across the processes it starts."""

    def __init__(self, bootstrap: str, src: str, dst: str, partitions: int,
                 group: str = "eos", txn_id: str = "eos-txn") -> None:
        self.args = [sys.executable, "-m", "tests.support.eos_worker", bootstrap, src, dst,
                     str(partitions), group, txn_id]
        self.lines: list[str] = []
        self.progress = 0
        self.hangs = 0
        self.hung: list[str] = []
        self.kills: list[Kill] = []
        self.returncode: int | None = None   # set when the worker is gone for good
        self._stopping = False
        self._replace = False   # the process is being killed on purpose: start another
        self._changed = threading.Condition()
        self.proc: subprocess.Popen[str] | None = None
        self._supervisor: threading.Thread | None = None

    def start(self) -> EosWorker:
        self._spawn()
        self._supervisor = threading.Thread(target=self._supervise, daemon=True)
        self._supervisor.start()
        return self

    def _spawn(self) -> None:
        self.proc = subprocess.Popen(self.args, cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)

    def _supervise(self) -> None:
        while True:
            proc = self.proc
            assert proc is not None and proc.stdout is not None
            for line in proc.stdout:
                with self._changed:
                    self.lines.append(line)
                    if line.startswith("progress "):
                        self.progress = int(line.split()[1])
                    elif line.startswith("hung "):
                        self.hung.append(line)
                    self._changed.notify_all()
            rc = proc.wait()
            with self._changed:
                if self._replace and not self._stopping:
                    self._replace = False
                    self.lines.append(f"[eos_run] worker {proc.pid} killed by the test (exit {rc}); new worker\n")
                    self._spawn()
                    self._changed.notify_all()
                    continue
                if rc == HUNG_EXIT and not self._stopping:
                    self.hangs += 1
                    self.lines.append(f"[eos_run] worker {proc.pid} hung (exit {rc}); new worker\n")
                    self._spawn()
                    continue
                self.returncode = rc
                self._changed.notify_all()
                return

    @property
    def restarts(self) -> list[str]:
        return [line for line in self.lines if line.startswith("restart ")]

    @contextmanager
    def injected_kill(self, what: str) -> Iterator[None]:
        """Around a kill the test injects and whatever it does to recover (a broker killed and
        started again): the worker's restarts from then until its first commit after the
        block are explained by the kill."""
        with self._changed:
            kill = Kill(what, len(self.lines))
            self.kills.append(kill)
            self.lines.append(f"[eos_run] injected kill: {what}\n")
        try:
            yield
        finally:
            with self._changed:
                kill.end = len(self.lines)

    def _explained_by(self, index: int) -> Kill | None:
        line = self.lines[index]
        if line.split()[1:2] == ["fatal"]:
            return None
        for kill in self.kills:
            if kill.start > index:
                continue
            recovered = kill.end if kill.end is not None else len(self.lines)
            if not any(later.startswith("progress ") for later in self.lines[recovered:index]):
                return kill
        return None

    def _cause(self, index: int) -> str:
        kill = self._explained_by(index)
        return f"after the injected kill of {kill.what}" if kill is not None else "UNEXPLAINED"

    def unexplained_restarts(self) -> list[str]:
        """The restart lines (kind and error text) that no injected kill explains."""
        with self._changed:
            return [line.rstrip() for i, line in enumerate(self.lines)
                    if line.startswith("restart ") and self._explained_by(i) is None]

    def unexplained_hangs(self) -> list[str]:
        """The hang lines no injected kill explains.  A call stuck past its timeout while the
        broker it waits on is being killed and restarted is librdkafka's (a killed broker
        leaves the Metadata answers, against Apache Kafka too, and librdkafka decommissions
        it: confluentinc/librdkafka#5511, eos_worker.py); one anywhere else is not."""
        with self._changed:
            return [line.rstrip() for i, line in enumerate(self.lines)
                    if line.startswith("hung ") and self._explained_by(i) is None]

    def report(self) -> str:
        """Kills, restarts (each with the kill explaining it, or UNEXPLAINED) and hangs."""
        with self._changed:
            restarts = [f"  {line.rstrip()}  <- {self._cause(i)}"
                        for i, line in enumerate(self.lines) if line.startswith("restart ")]
            return "\n".join([
                f"injected kills: {[k.what for k in self.kills]}",
                f"restarts: {len(restarts)}", *restarts,
                f"hangs: {self.hangs}", *(f"  {line.rstrip()}" for line in self.hung)])

    def wait_progress(self, at_least: int, timeout_s: float) -> int:
        """Wait (returns at once when reached) until ``progress >= at_least``."""
        with self._changed:
            self._changed.wait_for(lambda: self.progress >= at_least or self.returncode is not None,
                                   timeout_s)
            return self.progress

    def stop(self) -> int:
        """SIGTERM: the worker finishes the transaction it is in and exits."""
        with self._changed:
            self._stopping = True
            proc = self.proc
        assert proc is not None and self._supervisor is not None
        proc.terminate()
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
        self._supervisor.join(30)
        return proc.wait() if self.returncode is None else self.returncode

    def kill_and_replace(self) -> None:
        """SIGKILL, mid-transaction as likely as not, and a new worker process: its
        init_transactions aborts what the killed one left open, and it resumes from the
        committed offsets.  An injected kill (``injected_kill``) until the new one commits."""
        with self.injected_kill("worker"):
            with self._changed:
                self._replace = True
                proc = self.proc
            assert proc is not None
            proc.kill()
            with self._changed:
                assert self._changed.wait_for(lambda: self.proc is not proc or self.returncode is not None, 60)

    def describe(self) -> str:
        """For assertion messages: the report, then the last output lines."""
        return f"{self.report()}\n-- last output:\n{self.output_tail()}"

    def output_tail(self) -> str:
        return "".join(self.lines[-40:])


def produce_input(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    """``n`` records, key ``i`` and value ``v<i>``, record i to partition i % partitions."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20,
                  "batch.num.messages": 5000})
    for i in range(n):
        while True:
            try:
                p.produce(topic, key=b"%d" % i, value=b"v%d" % i, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(120) == 0


def end_offsets(bootstrap: str, topic: str, partitions: int, isolation: str) -> dict[int, int]:
    """ListOffsets latest with the isolation level: the high watermarks, or the LSOs."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
    try:
        ends = c.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
        return {tp.partition: o for tp, o in ends.items()}
    finally:
        c.close()


def check_exactly_once(bootstrap: str, src: str, dst: str, partitions: int, n: int) -> None:
    """The output read with read_committed is the input transformed, each record once, in
    order, per partition (no duplicate, no gap)."""
    src_end = end_offsets(bootstrap, src, partitions, "read_uncommitted")
    assert sum(src_end.values()) == n
    dst_end = end_offsets(bootstrap, dst, partitions, "read_uncommitted")
    # every transaction ended: the LSO reaches the high watermark once the markers are in
    lso = wait_until(lambda: end_offsets(bootstrap, dst, partitions, "read_committed"),
                     lambda v: v == dst_end, timeout_s=180, interval_s=0.5)
    assert lso == dst_end
    inputs = read_all(bootstrap, src, "read_uncommitted", end=src_end, partitions=partitions,
                      timeout_s=600)
    outputs = read_all(bootstrap, dst, "read_committed", end=dst_end, partitions=partitions,
                       timeout_s=600)
    for p in range(partitions):
        want = [b"out-" + v for part, _, _, v in inputs if part == p]
        got = [v for part, _, _, v in outputs if part == p]
        assert len(got) == len(want), (p, len(got), len(want))
        assert got == want, p
