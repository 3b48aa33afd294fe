"""The soak's clients, each a process of its own (so it can live in the client network
namespace, and a client that librdkafka wedges can be killed and replaced without touching
the others):

    python -m tests.soak.workers KIND --bootstrap B --out HISTORY.jsonl --stop-file F [options]

KIND is ``idempotent`` or ``transactional`` (tests/soak/producers.py), ``member``, ``sampler``
or ``readback`` (tests/soak/consumers.py).  A worker runs until ``--stop-file`` exists or it
gets SIGTERM, then finishes what it was doing (flushes, ends its transaction, drains its
in-flight commits) and exits 0.  Everything it observes is one JSON line in ``--out``,
written as it happens (line-buffered), so a worker killed mid-run still leaves a history
whose every complete line is true; tests/soak/checks.py reads them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

# librdkafka 2.10+ may wait forever on a broker it decommissioned after a re-bootstrap
# (confluentinc/librdkafka#5456, #5511; tests/support/eos_worker.py has the story): keep the
# known brokers instead.
NO_REBOOTSTRAP = {"metadata.recovery.strategy": "none"}
# tests.support.eos_worker.bounded (producers and consumers use it): a call still running HUNG_AFTER_S past its own timeout will not return; the worker
# exits with HUNG_EXIT and the runner's supervisor starts a new incarnation (as a liveness
# probe would).  One implementation, the EOS worker's.


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Out:
    """Line-buffered JSONL: each line reaches the file when written (the runner follows it)."""

    def __init__(self, path: str | Path) -> None:
        self.f = open(path, "a", buffering=1)  # noqa: SIM115 - closed in close()
        self.lock = threading.Lock()   # librdkafka callbacks may come from another thread

    def write(self, **entry: Any) -> None:
        line = json.dumps(entry, separators=(",", ":")) + "\n"
        with self.lock:
            self.f.write(line)

    def close(self) -> None:
        self.f.close()


class Stop:
    """True once the stop file exists or SIGTERM arrived."""

    def __init__(self, stop_file: str | None) -> None:
        self.path = Path(stop_file) if stop_file else None
        self.signalled = False
        signal.signal(signal.SIGTERM, self._on_term)

    def _on_term(self, *_: object) -> None:
        self.signalled = True

    def __call__(self) -> bool:
        return self.signalled or (self.path is not None and self.path.exists())


def common_client_config(bootstrap: str) -> dict[str, Any]:
    """Settings every soak client shares: notice leader moves within a second or two.
    ``SOAK_CLIENT_DEBUG=eos,protocol`` (say) turns librdkafka's debug log on, into each
    worker's ``.log`` file, to see what a client sent before an error."""
    debug = {"debug": os.environ["SOAK_CLIENT_DEBUG"]} if os.environ.get("SOAK_CLIENT_DEBUG") else {}
    return {
        **debug,
        "bootstrap.servers": bootstrap,
        "topic.metadata.refresh.interval.ms": 1000,
        "reconnect.backoff.max.ms": 1000,
        "retry.backoff.ms": 100,
        "retry.backoff.max.ms": 1000,
        **NO_REBOOTSTRAP,
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tests.soak.workers")
    p.add_argument("kind", choices=["idempotent", "transactional", "member", "sampler", "readback"])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--stop-file")
    p.add_argument("--name", default="w")
    p.add_argument("--topics", default="", help="comma-separated topic names")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    # idempotent: records a second; transactional: pause between transactions
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--pause-s", type=float, default=0.05)
    p.add_argument("--txn-id", default="")
    p.add_argument("--abort-ratio", type=float, default=0.25)
    # member: commit every N records, sample committed offsets every S seconds
    p.add_argument("--group", default="soak-group")
    p.add_argument("--commit-every", type=int, default=10)
    p.add_argument("--fetch-every-s", type=float, default=0.25)
    p.add_argument("--txn-topic", default="")
    # sampler: interval; readback: how long it may take to settle and read
    p.add_argument("--interval-s", type=float, default=0.5)
    p.add_argument("--seconds", type=float, default=300.0)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.kind in ("idempotent", "transactional"):
        from tests.soak import producers
        return producers.run(args)
    from tests.soak import consumers
    return consumers.run(args)


if __name__ == "__main__":
    sys.exit(main())
