"""A bounded load generator and a read-back client for the replication scenarios, run as a
process of its own (so a test can place it in a network namespace: ``ip netns exec NS``).

``python -m tests.support.load_client produce --bootstrap B --topic T --partitions 3 --out F``
  produces with confluent-kafka (idempotent, acks=all by default) at ``--rate`` records/s
  until ``--records`` were sent, ``--seconds`` passed, the file ``--stop-file`` exists or it
  gets SIGTERM; then flushes (up to ``--flush-seconds``) and exits.  Record i goes to
  partition i % partitions with key = value = ``<name>-<i:08d>`` (kgo-verifier style: the
  value names the producer and its sequence number, so a duplicate or a misplaced record is
  visible).  Every outcome is one JSON line in ``--out``, written as it happens:
  ``{"t": "ack", "p", "o", "v", "ms"}`` for an acknowledged record (the offset the broker
  gave), ``{"t": "err", "p", "v", "err", "retriable", "fatal"}`` for a failed one,
  ``{"t": "client_err", "err", "fatal"}`` for the client's own errors (error_cb), and a last
  ``{"t": "done", "sent", "acked", "failed"}``.

``python -m tests.support.load_client consume --bootstrap B --topic T --partitions 3 --out F``
  reads every partition from its log start to its high watermark (as a consumer sees it:
  ListOffsets, then Fetch) and writes ``{"t": "hw", "p", "low", "high"}`` per partition,
  then ``{"t": "read", "p", "o", "v"}`` per record, then ``{"t": "done", ...}``; it exits 1
  if it could not read up to the high watermark within ``--seconds``.

tests/support/replication_checker.py reads both files.  ``LoadProcess`` below runs the
producer from a test and follows its file.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class _Out:
    """Line-buffered JSONL: every line reaches the file when written (a test follows it)."""

    def __init__(self, path: str) -> None:
        self.f = open(path, "a", buffering=1)  # noqa: SIM115 - closed in close()

    def write(self, **entry: object) -> None:
        self.f.write(json.dumps(entry) + "\n")

    def close(self) -> None:
        self.f.close()


def produce(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException, Producer

    out = _Out(args.out)
    stopping = False

    def on_term(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)

    counts = {"acked": 0, "failed": 0}

    def on_client_error(err: object) -> None:
        out.write(t="client_err", err=err.name(), fatal=err.fatal(), ms=_now_ms())  # type: ignore[attr-defined]

    conf = {
        "bootstrap.servers": args.bootstrap,
        "acks": args.acks,
        "enable.idempotence": args.idempotent,
        "linger.ms": 5,
        "message.timeout.ms": args.message_timeout_ms,
        "request.timeout.ms": min(30000, args.message_timeout_ms),
        "retry.backoff.ms": 100,
        "retry.backoff.max.ms": 1000,
        "reconnect.backoff.max.ms": 1000,
        "topic.metadata.refresh.interval.ms": 1000,
        "error_cb": on_client_error,
    }
    if not args.idempotent:
        conf["retries"] = args.retries
    producer = Producer(conf)

    def report(err: object, msg: object) -> None:
        value = msg.value().decode()  # type: ignore[attr-defined]
        if err is None:
            counts["acked"] += 1
            out.write(t="ack", p=msg.partition(), o=msg.offset(), v=value, ms=_now_ms())  # type: ignore[attr-defined]
        else:
            counts["failed"] += 1
            out.write(t="err", p=msg.partition(), v=value, err=err.name(),  # type: ignore[attr-defined]
                      retriable=err.retriable(), fatal=err.fatal(), ms=_now_ms())  # type: ignore[attr-defined]

    started = time.monotonic()
    interval = 1.0 / args.rate if args.rate > 0 else 0.0
    sent = 0
    stop_file = Path(args.stop_file) if args.stop_file else None
    while (not stopping and sent < args.records and time.monotonic() - started < args.seconds
           and not (stop_file and stop_file.exists())):
        value = f"{args.name}-{sent:08d}".encode()
        try:
            producer.produce(args.topic, key=value, value=value, partition=sent % args.partitions,
                             on_delivery=report)
        except BufferError:
            producer.poll(0.1)
            continue
        except KafkaException as e:  # fatal idempotence error: nothing more can be sent
            out.write(t="client_err", err=str(e), fatal=True, ms=_now_ms())
            break
        sent += 1
        # pace to the rate: never ahead of sent / rate seconds since the start
        while True:
            ahead = started + sent * interval - time.monotonic()
            producer.poll(max(0.0, min(ahead, 0.05)))
            if ahead <= 0.05:
                break
    left = producer.flush(args.flush_seconds)
    out.write(t="done", sent=sent, acked=counts["acked"], failed=counts["failed"], unflushed=left, ms=_now_ms())
    out.close()
    return 0


def consume(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer, TopicPartition

    out = _Out(args.out)
    consumer = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "replication-checker",  # never joined: partitions are assigned
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "fetch.wait.max.ms": 100,
        "topic.metadata.refresh.interval.ms": 1000,
    })
    deadline = time.monotonic() + args.seconds
    marks: dict[int, tuple[int, int]] = {}
    for p in range(args.partitions):
        while True:
            try:
                marks[p] = consumer.get_watermark_offsets(TopicPartition(args.topic, p), timeout=10)
                break
            except Exception as e:  # noqa: BLE001 - a leader may still be moving
                if time.monotonic() > deadline:
                    out.write(t="client_err", err=f"watermarks of {p}: {e}", fatal=True)
                    return 1
                time.sleep(0.2)
        out.write(t="hw", p=p, low=marks[p][0], high=marks[p][1])
    todo = {p for p, (low, high) in marks.items() if high > low}
    consumer.assign([TopicPartition(args.topic, p, marks[p][0]) for p in todo])
    reads = 0
    while todo and time.monotonic() < deadline:
        for m in consumer.consume(500, 1.0):
            if m.error() is not None:
                out.write(t="client_err", err=m.error().name(), fatal=False)
                continue
            p, o = m.partition(), m.offset()
            if o >= marks[p][1]:
                continue  # past the high watermark we sampled: not part of this read
            out.write(t="read", p=p, o=o, v=m.value().decode())
            reads += 1
            if o == marks[p][1] - 1:
                todo.discard(p)
    consumer.close()
    out.write(t="done", reads=reads, unfinished=sorted(todo))
    out.close()
    return 1 if todo else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="load_client")
    sub = parser.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("produce")
    co = sub.add_parser("consume")
    for p in (pr, co):
        p.add_argument("--bootstrap", required=True)
        p.add_argument("--topic", required=True)
        p.add_argument("--partitions", type=int, required=True)
        p.add_argument("--out", required=True)
    # the producer's bound is a safety net (a test stops it with the stop file); the reader's
    # is how long it may take to reach the high watermark
    pr.add_argument("--seconds", type=float, default=900.0)
    co.add_argument("--seconds", type=float, default=120.0)
    pr.add_argument("--name", default="L")
    pr.add_argument("--acks", default="all")
    pr.add_argument("--idempotent", type=lambda s: s.lower() == "true", default=True)
    pr.add_argument("--retries", type=int, default=2147483647)
    pr.add_argument("--rate", type=float, default=200.0)
    pr.add_argument("--records", type=int, default=1_000_000)
    pr.add_argument("--stop-file")
    pr.add_argument("--message-timeout-ms", type=int, default=120000)
    pr.add_argument("--flush-seconds", type=float, default=120.0)
    args = parser.parse_args(argv)
    return produce(args) if args.cmd == "produce" else consume(args)


# -- running it from a test --------------------------------------------------------------


def command(*args: str, netns: str | None = None) -> list[str]:
    prefix = ["ip", "netns", "exec", netns] if netns else []
    return [*prefix, sys.executable, "-m", "tests.support.load_client", *args]


class LoadProcess:
    """The producer as a child process; ``out`` is its JSONL history."""

    def __init__(self, out: Path, bootstrap: str, topic: str, partitions: int, *, name: str = "L",
                 netns: str | None = None, **options: object) -> None:
        self.out = Path(out)
        self.stop_file = self.out.with_suffix(".stop")
        args = ["produce", "--bootstrap", bootstrap, "--topic", topic, "--partitions", str(partitions),
                "--out", str(self.out), "--name", name, "--stop-file", str(self.stop_file)]
        for k, v in options.items():
            args += [f"--{k.replace('_', '-')}", str(v)]
        self.cmd = command(*args, netns=netns)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = self.out.with_suffix(".log")
        self._entries: list[dict] = []
        self._read_upto = 0

    def start(self) -> LoadProcess:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        return self

    def entries(self) -> list[dict]:
        """Every complete line so far (read incrementally: tests poll this often)."""
        if not self.out.exists():
            return []
        with open(self.out, "rb") as f:
            f.seek(self._read_upto)
            chunk = f.read()
        complete = chunk[:chunk.rfind(b"\n") + 1]  # a line still being written waits
        self._read_upto += len(complete)
        for line in complete.splitlines():
            try:
                self._entries.append(json.loads(line))
            except json.JSONDecodeError:
                pass
        return self._entries

    def acked(self) -> int:
        return sum(1 for e in self.entries() if e.get("t") == "ack")

    def errors(self) -> list[dict]:
        return [e for e in self.entries() if e.get("t") in ("err", "client_err")]

    def stop(self, timeout_s: float = 180.0) -> dict:
        """Stop producing, let it flush, and return its "done" line."""
        self.stop_file.touch()
        assert self.proc is not None
        try:
            rc = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"load client did not finish in {timeout_s}s: {self.log.read_text()[-2000:]}") from None
        done = [e for e in self.entries() if e.get("t") == "done"]
        assert rc == 0 and done, f"load client exited {rc}: {self.log.read_text()[-2000:]}"
        return done[-1]

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def read_back(out: Path, bootstrap: str, topic: str, partitions: int, *, netns: str | None = None,
              timeout_s: float = 90.0) -> Path:
    """Run the consume command to completion; its JSONL file."""
    out = Path(out)
    cmd = command("consume", "--bootstrap", bootstrap, "--topic", topic, "--partitions", str(partitions),
                  "--out", str(out), "--seconds", str(timeout_s), netns=netns)
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s + 60,
                       env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert r.returncode == 0, f"read-back failed ({r.returncode}): {r.stdout[-2000:]} {r.stderr[-2000:]}"
    return out


if __name__ == "__main__":
    sys.exit(main())
