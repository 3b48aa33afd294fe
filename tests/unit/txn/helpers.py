"""A transaction coordinator on a manual clock with an in-memory ``__transaction_state``
and a marker sender that only records jobs (the tests decide when markers are written)."""

from __future__ import annotations

import itertools
from typing import Any

from log.clock import ManualClock
from txn import MarkerJob, TransactionCoordinator, TxnConfig
from wire.error_codes import ErrorCode


class Harness:
    def __init__(self, num_partitions: int = 4, **config: Any) -> None:
        self.clock = ManualClock()
        self.log: dict[int, list[tuple[bytes, bytes | None]]] = {}  # partition -> records
        self.jobs: list[MarkerJob] = []
        self.fail_next_append: ErrorCode | None = None
        self.deferred: list[Any] = []       # appends held back (defer_appends)
        self.defer_appends = False
        self._pids = itertools.count(1000)
        self.c = TransactionCoordinator(TxnConfig(num_partitions=num_partitions, **config),
                                        self.clock, self._store, self.jobs.append,
                                        lambda: next(self._pids))
        for p in range(num_partitions):
            self.c.begin_load(p)
            self.c.complete_load(p, 0)

    def _store(self, partition: int, key: bytes, value: bytes | None, done: Any) -> None:
        if self.defer_appends:
            self.deferred.append((partition, key, value, done))
            return
        if self.fail_next_append is not None:
            error, self.fail_next_append = self.fail_next_append, None
            done(error)
            return
        self.log.setdefault(partition, []).append((key, value))
        done(ErrorCode.NONE)

    def release_appends(self) -> None:
        pending, self.deferred = self.deferred, []
        self.defer_appends = False
        for partition, key, value, done in pending:
            self.log.setdefault(partition, []).append((key, value))
            done(ErrorCode.NONE)

    # ------------------------------------------------------------ calls, answered at once
    def init(self, txn_id: str, timeout_ms: int = 60000, pid: int = -1, epoch: int = -1) -> tuple:
        out: list[tuple] = []
        self.c.init_producer_id(txn_id, timeout_ms, pid, epoch, lambda *a: out.append(a))
        return out[0] if out else None

    def add(self, txn_id: str, pid: int, epoch: int, *tps: tuple[str, int]) -> ErrorCode | None:
        out: list[ErrorCode] = []
        self.c.add_partitions(txn_id, pid, epoch, set(tps), out.append)
        return out[0] if out else None

    def end(self, txn_id: str, pid: int, epoch: int, commit: bool) -> ErrorCode | None:
        out: list[ErrorCode] = []
        self.c.end_txn(txn_id, pid, epoch, commit, out.append)
        return out[0] if out else None

    def write_all_markers(self) -> None:
        jobs, self.jobs[:] = list(self.jobs), []
        for job in jobs:
            for tp in sorted(job.partitions):
                self.c.marker_written(job, tp)

    def state(self, txn_id: str) -> str:
        return self.c.txns[txn_id].state.state_name

    def replayed(self) -> TransactionCoordinator:
        """A new coordinator that loaded this one's log (a failover)."""
        other = TransactionCoordinator(self.c.config, self.clock, self._store, self.jobs.append,
                                       lambda: next(self._pids))
        for p in range(self.c.num_partitions):
            other.begin_load(p)
            for key, value in self.log.get(p, []):
                other.replay(key, value)
            other.complete_load(p, 1)
        return other
