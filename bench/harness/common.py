"""What every suite shares about the brokers it starts: the settings both get, where results
go, and the byte-compilation of kbroker before a timed start."""

from __future__ import annotations

import compileall

from bench.harness import machine

# bench/results/: one report (.md, with its history table) and one .json per suite
RESULTS = machine.ROOT / "bench" / "results"
MIB = 1024 * 1024

# Settings both brokers get (beyond ports and dirs): a single node cannot give the internal
# topics 3 replicas, and the first consumer-group join should not wait 3 s on either.
COMMON = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}


def compile_kbroker() -> None:
    """Byte-compile kbroker's packages, as installing a wheel does (pip compiles every module).
    The project is installed editable, and with PYTHONDONTWRITEBYTECODE set (as it is on
    this workplace's machines) nothing else would ever write .pyc files, so every kbroker
    start would compile its ~1 MB of source first: a cost of a checkout, not of the broker."""
    for package in ("kbroker", "wire", "log", "groups"):
        compileall.compile_dir(str(machine.ROOT / package), quiet=1)

