"""Run one measurement on kbroker and on Apache Kafka, fresh processes side by side, in
alternating order, repeated: the frame the issue-15 benchmarks (bench/suites/small_wide.py,
bench/suites/cost_curves.py, bench/suites/memory.py) share with bench/suites/side_by_side.py.

A *measurement* is ``measure(bootstrap, pid) -> {figure id: value}``; every repetition
starts both brokers on empty data dirs (Kafka's storage formatted first, untimed), warms
each up with an unmeasured produce and consume, then runs each measurement on one broker
and then on the other, the first broker alternating per repetition, so that both values
of a pair are taken seconds apart under the same background load.  Ratios are
kbroker/Kafka within a repetition, summarised as median (min-max) over repetitions.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.harness import kafka_dist, workloads
from bench.harness.common import COMMON, compile_kbroker
from bench.harness.kafka_dist import KafkaProcess
from tests.support.broker_process import BrokerProcess

KB, KAFKA = "kbroker", "Kafka"
MIB = 1024 * 1024

Measure = Callable[[str, int], dict[str, float]]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


@contextmanager
def both_brokers(tmp: Path, order: list[str], kafka_heap: list[str] | None = None,
                 overrides: dict[str, str] | None = None,
                 warm_up_records: int = 20_000) -> Iterator[dict[str, Any]]:
    """Both brokers started fresh under ``tmp`` (in ``order``), warmed up; stopped and their
    dirs removed on exit.  ``overrides`` go to both."""
    settings = {**COMMON, **(overrides or {})}
    makers: dict[str, Callable[[], Any]] = {
        KB: lambda: BrokerProcess(tmp / "kbroker", overrides=settings),
        KAFKA: lambda: KafkaProcess(tmp / "kafka", overrides=settings,
                                    heap=kafka_heap or kafka_dist.SERVER_HEAP),
    }
    brokers: dict[str, Any] = {}
    try:
        for b in order:
            brokers[b] = makers[b]().start()
        for b in order:
            workloads.create_topic(brokers[b].bootstrap, "warm-up")
            workloads.produce(brokers[b].bootstrap, "warm-up", warm_up_records)
            workloads.consume(brokers[b].bootstrap, "warm-up", warm_up_records)
        yield brokers
    finally:
        for b in brokers.values():
            b.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run_pair(name: str, measure: Measure, order: list[str], brokers: dict[str, Any],
             rep: dict[str, Any]) -> None:
    """``measure`` on each broker in ``order``; values into rep["values"][fid][broker] and the
    broker process's CPU seconds into rep["cpu"][name][broker].  A failure is recorded in
    rep["errors"] and does not lose the other figures."""
    for b in order:
        pid = brokers[b].proc.pid
        try:
            cpu0 = workloads.cpu_seconds(pid)
            values = measure(brokers[b].bootstrap, pid)
            cpu = workloads.cpu_seconds(pid) - cpu0
        except Exception as e:  # one failed measurement must not lose the run's others
            rep.setdefault("errors", {}).setdefault(name, {})[b] = f"{type(e).__name__}: {str(e)[:300]}"
            log(f"{b}: {name} FAILED: {e}")
            continue
        rep.setdefault("cpu", {}).setdefault(name, {})[b] = cpu
        for fid, v in values.items():
            rep.setdefault("values", {}).setdefault(fid, {})[b] = v
        log(f"{b}: {name}: " + ", ".join(f"{fid} {v:,.3f}" for fid, v in values.items())
            + f" (broker CPU {cpu:.2f} s)")


def repetitions(n: int, body: Callable[[int, list[str], Path], dict[str, Any]],
                data_dir: Path | None = None, after_each: Callable[[list[dict[str, Any]]], None] | None = None,
                ) -> list[dict[str, Any]]:
    """``body(i, order, tmp)`` ``n`` times, kbroker first in even repetitions."""
    compile_kbroker()
    reps: list[dict[str, Any]] = []
    for i in range(n):
        order = [KB, KAFKA] if i % 2 == 0 else [KAFKA, KB]
        tmp = Path(tempfile.mkdtemp(prefix="kbroker-paired-", dir=data_dir))
        rep = body(i, order, tmp)
        rep["order"] = order
        reps.append(rep)
        if after_each:
            after_each(reps)  # a crash later keeps what was measured
    return reps


# ---------------------------------------------------------------- summaries

def values(reps: list[dict[str, Any]], fid: str, broker: str) -> list[float]:
    return [r["values"][fid][broker] for r in reps if r.get("values", {}).get(fid, {}).get(broker) is not None]


def ratios(reps: list[dict[str, Any]], fid: str) -> list[float]:
    out = []
    for r in reps:
        v = r.get("values", {}).get(fid, {})
        if v.get(KB) is not None and v.get(KAFKA):
            out.append(v[KB] / v[KAFKA])
    return out


def cell(xs: list[float], fmt: str = ".2f") -> str:
    """median (min–max), or the one value, or "failed"."""
    if not xs:
        return "failed"
    if len(xs) == 1:
        return format(xs[0], fmt)
    return f"{format(statistics.median(xs), fmt)} ({format(min(xs), fmt)}–{format(max(xs), fmt)})"


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def failures(reps: list[dict[str, Any]]) -> list[str]:
    return [f"- repetition {i + 1}, {name}, {b}: {e}" for i, r in enumerate(reps)
            for name, per in r.get("errors", {}).items() for b, e in per.items()]
