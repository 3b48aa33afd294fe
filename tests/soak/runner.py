"""One soak run: start the cluster and the workers, let the nemesis work for the given
minutes (or through a given list of faults), stop the workers, read everything back, check,
and return a SoakResult (report.py prints it)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.soak import checks
from tests.soak.environment import (
    IDEMPOTENT_TOPIC,
    OFFSETS_TOPIC,
    PARTITIONS,
    TXN_STATE_TOPIC,
    TXN_TOPIC,
    SoakCluster,
)
from tests.soak.nemesis import Fault, Nemesis
from tests.soak.supervisor import Supervisor, Worker

WARMUP_S = 240.0     # from the workers' start to every kind of acknowledgement seen once
PROGRESS_S = 120.0   # after a fault, for the workload to be acknowledged again
STOP_S = 180.0       # for the workers to flush, end their transactions and drain commits
READBACK_S = 300.0   # for the read-back to settle (no open transaction) and read it all
GROUP = "soak-group"
TXN_IDS = ["soak-txn-1", "soak-txn-2"]


@dataclass
class SoakResult:
    work: Path
    seed: int
    netns: str                      # "yes", or why not
    minutes: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    findings: checks.Findings = field(default_factory=checks.Findings)
    stalls: list[str] = field(default_factory=list)     # progress that did not come, unclean exits (notes)
    worker_restarts: dict[str, list[int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)   # the run itself went wrong

    @property
    def fault_errors(self) -> list[str]:
        return [f"{f.kind} broker {f.broker}: {f.error}" for f in self.faults if f.error]

    @property
    def ok(self) -> bool:
        return self.findings.ok and not self.fault_errors and not self.problems


class _Run:
    def __init__(self, sc: SoakCluster, work: Path, seed: int, log: Callable[[str], None], rate: float) -> None:
        self.sc, self.work, self.log = sc, work, log
        prefix, bootstrap = sc.client_prefix(), ["--bootstrap", sc.bootstrap]
        both = f"{IDEMPOTENT_TOPIC},{TXN_TOPIC}"
        parts = ["--partitions", str(PARTITIONS)]
        self.idempotent = [Worker("idempotent", f"idem{i}", work, prefix,
                                  [*bootstrap, *parts, "--topics", IDEMPOTENT_TOPIC, "--rate", str(rate)])
                           for i in (1, 2)]
        self.transactional = [Worker("transactional", f"txn{i}", work, prefix,
                                     [*bootstrap, *parts, "--topics", TXN_TOPIC, "--txn-id", TXN_IDS[i - 1],
                                      "--seed", str(seed + i)])
                              for i in (1, 2)]
        self.members = [Worker("member", f"member{i}", work, prefix,
                               [*bootstrap, "--topics", both, "--txn-topic", TXN_TOPIC, "--group", GROUP])
                        for i in (1, 2)]
        self.sampler = Worker("sampler", "sampler", work, prefix, [*bootstrap, *parts, "--topics", both])
        self.workers = [*self.idempotent, *self.transactional, *self.members, self.sampler]
        self.supervisor = Supervisor(self.workers)

    def progress(self) -> tuple[int, int, int]:
        """(idempotent acks, transactions ended, commits answered) so far."""
        return (sum(w.count("ack") for w in self.idempotent), sum(w.count("end") for w in self.transactional),
                sum(w.count("commit_ack") for w in self.members))

    def wait_for(self, check: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.5)
        return check()

    def warm_up(self) -> None:
        """Every worker acknowledged once, and both internal topics exist: only then do
        faults meet the whole system (coordinators included)."""
        def warm() -> bool:
            return (all(w.count("ack") >= 20 for w in self.idempotent)
                    and all(w.count("end") >= 2 for w in self.transactional)
                    and all(w.count("commit_ack") >= 1 for w in self.members)
                    and self.sampler.count("hw") >= 1
                    and {OFFSETS_TOPIC, TXN_STATE_TOPIC} <= set(self.sc.topics()))
        if not self.wait_for(warm, WARMUP_S):
            raise RuntimeError(f"the workload did not get going in {WARMUP_S} s: progress {self.progress()}, "
                               f"topics {self.sc.topics()}")
        self.sc.wait_healthy(WARMUP_S)

    def wait_progress(self, what: str) -> str | None:
        """Each kind of acknowledgement once more; a note (not a failure) when it does not come."""
        before = self.progress()
        if self.wait_for(lambda: all(n > b for n, b in zip(self.progress(), before, strict=True)), PROGRESS_S):
            return None
        return f"no progress of every kind within {PROGRESS_S} s after {what}: {before} -> {self.progress()}"

    def stop_workers(self) -> list[str]:
        self.supervisor.halt()
        for w in self.workers:
            w.request_stop()
        # members take their final fetch, then wait for each other before leaving the group
        self.wait_for(lambda: all(m.count("final_done") >= 1 or not m.running() for m in self.members), STOP_S)
        for m in self.members:
            Path(f"{m.stop_file}.close").touch()
        deadline = time.monotonic() + STOP_S
        codes = {w.name: w.wait(max(1.0, deadline - time.monotonic())) for w in self.workers}
        return [f"worker {name} did not stop cleanly (exit {rc})" for name, rc in codes.items() if rc != 0]

    def read_back(self) -> tuple[Worker, list[str]]:
        rb = Worker("readback", "readback", self.work, self.sc.client_prefix(),
                    ["--bootstrap", self.sc.bootstrap, "--partitions", str(PARTITIONS),
                     "--topics", f"{IDEMPOTENT_TOPIC},{TXN_TOPIC}", "--txn-topic", TXN_TOPIC,
                     "--seconds", str(READBACK_S)]).start()
        rc = rb.wait(READBACK_S + 120)
        problems = [] if rc == 0 else [f"read-back exited {rc}: see {rb.history(0)}"]
        problems += [f"read-back: {e}" for e in rb.entries() if e.get("t") in ("unsettled", "unfinished")]
        return rb, problems


def run_soak(work: Path, *, minutes: float | None = None, plan: Sequence[str] | None = None,
             seed: int | None = None, use_netns: bool | None = None, rate: float = 100.0,
             log: Callable[[str], None] = print) -> SoakResult:
    """Run the soak in ``work``: for ``minutes`` of faults cycling through every kind, or
    through exactly the faults of ``plan``; an empty plan runs the workload for ``minutes``
    without any fault (a baseline)."""
    assert minutes is not None or plan is not None, "give minutes or a plan"
    # the harness's own ZooKeeper client warns on every ZooKeeper restart; the faults are ours
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    seed = random.randrange(1 << 30) if seed is None else seed
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()

    def say(msg: str) -> None:
        log(f"[soak {time.monotonic() - t0:7.1f}s {time.strftime('%H:%M:%S')}] {msg}")

    sc = SoakCluster(work / "cluster", use_netns=use_netns)
    result = SoakResult(work, seed, "yes" if sc.use_netns else f"no ({sc.no_netns_reason})")
    say(f"work dir {work}, seed {seed}, network namespaces: {result.netns}")
    run: _Run | None = None
    readback: Worker | None = None
    try:
        sc.start()
        say(f"cluster up: {sc.bootstrap}")
        run = _Run(sc, work, seed, say, rate)
        run.supervisor.start()
        run.warm_up()
        say(f"workload going: progress {run.progress()}")
        nemesis = Nemesis(sc, random.Random(seed), say, group=GROUP, txn_ids=TXN_IDS)
        kinds = nemesis.kinds()
        started = time.monotonic()
        todo = list(plan) if plan is not None else None
        if todo == []:
            run.wait_for(lambda: False, (minutes or 0) * 60)
        i = 0
        while (todo if todo is not None else time.monotonic() - started < (minutes or 0) * 60):
            kind = todo.pop(0) if todo is not None else kinds[i % len(kinds)]
            i += 1
            fault = nemesis.run(kind)
            if (stall := run.wait_progress(f"{kind} (fault {i})")) is not None:
                say(stall)
                result.stalls.append(stall)
            if fault.error and not sc.healthy():
                result.problems.append(f"the cluster did not recover after {kind}: {fault.error}")
                break
        result.minutes = (time.monotonic() - started) / 60
        result.faults = nemesis.done
        say(f"faults done: progress {run.progress()}; stopping the workers")
        # a client that does not finish cleanly (a librdkafka hang at close, say) is noted:
        # what it acknowledged before is in its history and checked all the same
        result.stalls += run.stop_workers()
        sc.wait_healthy(READBACK_S)
        say("reading everything back")
        readback, problems = run.read_back()
        result.problems += problems
    except Exception as e:  # noqa: BLE001 - the run failing is a finding: reported, never hidden
        result.problems.append(f"{type(e).__name__}: {e}")
        say(f"run failed: {type(e).__name__}: {e}")
    finally:
        if run is not None:
            run.supervisor.kill_all()
            result.worker_restarts = run.supervisor.restarts()
        sc.stop()   # writes each broker's output to cluster/cluster/broker-N.out
    say("checking")
    if run is not None and readback is None:
        result.problems.append("nothing was read back: delivery not checked")
    if run is not None and readback is not None:
        f = result.findings
        checks.check_delivery(f, (e for w in run.idempotent for e in w.entries()),
                              (e for w in run.transactional for e in w.entries()),
                              readback.entries() if readback is not None else iter(()),
                              (e for w in run.members for e in w.entries()))
    if run is not None:
        f = result.findings
        for m in run.members:
            for k, path in enumerate(m.histories()):
                checks.check_commits(f, f"{m.name}.{k}", m.entries_of(path))
        checks.check_high_watermarks(f, run.sampler.entries())
    if sc.cluster is not None:
        outputs = {b: sc.cluster.root / f"broker-{b}.out" for b in sc.cluster.brokers}
        checks.scan_logs(result.findings, {b: p for b, p in outputs.items() if p.exists()})
    return result
