"""The consumer group protocol (KIP-848, ConsumerGroupHeartbeat API 68), kbroker beside Apache
Kafka: ``make bench-consumer-protocol``, writes bench/results/consumer_protocol.md and .json.

Run: ``.venv/bin/python -m bench.suites.consumer_protocol [--quick] [--repetitions N]
[--heartbeat-ms MS] [--set KEY=VALUE ...]``.

The frame is bench/harness/paired.py's: every repetition starts both brokers fresh (Kafka a
single-node KRaft broker+controller, whose 4.x default enables the consumer protocol), warms
them up, then runs each measurement on one broker and then on the other, the first
alternating per repetition; ratios kbroker/Kafka within a repetition.  Both brokers get
``group.consumer.heartbeat.interval.ms`` and ``group.consumer.min.heartbeat.interval.ms`` =
``--heartbeat-ms`` (default 500: Kafka's 5,000 would make a steady group of 100 members 20
heartbeats/s, too few to see beside the brokers' idle CPU, and make every join a matter of
5 s heartbeat rounds); everything else is each broker's default (``--set`` gives both more).

The client: raw ConsumerGroupHeartbeat requests from this process (``kbroker.client``'s
asyncio connection, one connection per member as each Java consumer has its own coordinator
connection), the same on both brokers.  Each member follows the Java consumer's
(kafka-clients 4.x) heartbeat rules, ``ConsumerHeartbeatRequestManager`` and
``AbstractMembershipManager``: the first heartbeat (epoch 0, a client-generated member id
at v1) carries everything (subscription, rebalance timeout = max.poll.interval.ms 300,000,
an empty owned list); later ones only group id, member id and epoch, plus the owned
partitions when they changed; the next heartbeat goes ``heartbeat_interval_ms`` (as the
broker answered) after the last answer, or at once when an answer changed the member's
assignment (the acknowledgement).  What a real consumer adds between the answer and that
acknowledgement (its application thread's rebalance callbacks, OffsetFetch of the new
partitions, commits of the revoked ones) is left out: revocation and assignment are
instant.  Why not 100 ``KafkaConsumer``s in one JVM: their poll loops, background threads
and JIT would share the 2 cores with the broker under test and put the client's own timers
in the figure, and their heartbeats could only be counted from the brokers' metrics; here
every heartbeat is counted exactly and the client is ~1 connection's worth of Python per
member.  An error answer (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, ...) makes the member
rejoin at epoch 0 with nothing owned, as the Java consumer does; errors are counted and
reported (none are expected).

1. **join to stable**, for 10 and for 100 members over one topic of 1,000 partitions: a fresh
   group per round; every member's first heartbeat is written at once (on connections opened,
   negotiated and FindCoordinator'd beforehand); timed from the moment the last of them was
   written until the answer after which every member has the same epoch and a non-empty
   assignment and the assignments are a split of the 1,000 partitions (each exactly once).
   Then, untimed, the group must stay so for max(1 s, 2 heartbeat intervals) (a change
   restarts the wait and the figure becomes the time of the last change) and
   ConsumerGroupDescribe must say Stable, assignment epoch = group epoch, every member at
   that epoch with its assignment equal to its target.  Also per round: heartbeats answered
   from the first join to stable, and the broker process's CPU in that time.  The members
   leave (epoch -1) after each round.  Each repetition's figure is the median of its rounds.
2. **coordinator CPU per heartbeat**: a group of 100 members (joined as in 1, untimed) heartbeats
   at the interval for a fixed time; broker process CPU (user+system from /proc/<pid>/stat,
   10 ms ticks) over that window divided by the heartbeats answered in it.  Before the group
   joins, the broker's idle CPU is measured with the members' connections open (the median
   rate of 1 s slices, so a burst of background work in one slice does not count); the "net"
   figure subtracts that rate (Kafka's KRaft controller, its broker heartbeats and
   kbroker's 100 ms scheduler tick run whether or not anyone heartbeats).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness import history, kafka_dist, machine, paired, workloads
from bench.harness.common import RESULTS
from bench.harness.paired import KAFKA, KB
from kbroker.client import AsyncConnection
from wire import messages as m
from wire.error_codes import ErrorCode
from wire.uuids import random_uuid, uuid_to_string

TOPIC = "consumer-protocol"
CAPS = {68: 1, 69: 1}                 # the ConsumerGroupHeartbeat/Describe versions this code speaks
REBALANCE_TIMEOUT_MS = 300_000        # the Java consumer sends its max.poll.interval.ms
LEAVE_EPOCH = -1
ROUND_TIMEOUT_S = 180.0
CLIENT_ID = "consumer-protocol-bench"
HB = m.ConsumerGroupHeartbeatRequest


@dataclass(frozen=True)
class Sizes:
    repetitions: int
    partitions: int
    join_members: tuple[int, ...]
    join_rounds: int
    steady_members: int
    steady_s: float
    idle_s: float


FULL = Sizes(3, 1_000, (10, 100), 3, 100, 30.0, 10.0)
QUICK = Sizes(1, 1_000, (10, 100), 1, 100, 8.0, 5.0)


# ------------------------------------------------------------------ the members


class Member:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn
        self.member_id = ""
        self.epoch = 0
        self.owned: frozenset[tuple[uuid.UUID, int]] = frozenset()
        self.interval_s = 0.0
        self.join_sent = 0.0


class GroupRun:
    """One group's members heartbeating until ``stop()``; tracks whether they are settled."""

    def __init__(self, conns: list[AsyncConnection], group: str, partitions: int, pid: int) -> None:
        self.members = [Member(c) for c in conns]
        self.group = group
        self.partitions = partitions
        self.pid = pid
        self.version = conns[0].version_for(68, CAPS[68])
        self.heartbeats = 0            # answers received
        self.rtts: list[float] = []    # seconds from each heartbeat's write to its answer
        self.errors: dict[str, int] = {}
        self.changes = 0               # answers that moved a member's epoch or assignment
        self.last_change = 0.0
        self.settled = False           # every member at one epoch, each with a share, a split of all
        self.settled_at: tuple[float, int, float] | None = None   # (time, heartbeats, broker CPU s)
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def first_join(self) -> float:
        return min(x.join_sent for x in self.members)

    @property
    def last_join(self) -> float:
        """When the last member's first heartbeat was written."""
        return max(x.join_sent for x in self.members)

    # -- requests, as the Java consumer's HeartbeatState builds them

    def _join(self, mem: Member) -> Any:
        if self.version >= 1 and not mem.member_id:
            mem.member_id = uuid_to_string(random_uuid())   # KIP-1082: the client makes its id
        return HB(group_id=self.group, member_id=mem.member_id, member_epoch=0,
                  rebalance_timeout_ms=REBALANCE_TIMEOUT_MS, subscribed_topic_names=[TOPIC],
                  topic_partitions=[])

    def _heartbeat(self, mem: Member, ack: bool) -> Any:
        req = HB(group_id=self.group, member_id=mem.member_id, member_epoch=mem.epoch)
        if ack:
            by_topic: dict[uuid.UUID, list[int]] = {}
            for topic_id, p in sorted(mem.owned):
                by_topic.setdefault(topic_id, []).append(p)
            req.topic_partitions = [HB.TopicPartitions(topic_id=t, partitions=ps) for t, ps in by_topic.items()]
        return req

    # -- the loop of one member

    async def _member(self, mem: Member) -> None:
        req = self._join(mem)
        mem.join_sent = time.perf_counter()   # call() writes the request before its first await
        sent = mem.join_sent
        while True:
            resp = await mem.conn.call(req, self.version)
            now = time.perf_counter()
            self.heartbeats += 1
            self.rtts.append(now - sent)
            if resp.error_code != ErrorCode.NONE:
                name = ErrorCode(resp.error_code).name
                self.errors[name] = self.errors.get(name, 0) + 1
                mem.epoch, mem.owned = 0, frozenset()
                self._changed(now)
                if self._stopping.is_set():
                    return
                await asyncio.sleep(0.1)
                req = self._join(mem)
                sent = time.perf_counter()
                continue
            ack = self._on_answer(mem, resp, now)
            if self._stopping.is_set():
                break
            if not ack:
                try:
                    await asyncio.wait_for(self._stopping.wait(), mem.interval_s)
                    break
                except TimeoutError:
                    pass
            req = self._heartbeat(mem, ack)
            sent = time.perf_counter()
        # KafkaConsumer.close(): a last heartbeat at epoch -1
        resp = await mem.conn.call(HB(group_id=self.group, member_id=mem.member_id, member_epoch=LEAVE_EPOCH),
                                   self.version)
        if resp.error_code not in (ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID):
            name = ErrorCode(resp.error_code).name
            self.errors[f"leave {name}"] = self.errors.get(f"leave {name}", 0) + 1

    def _on_answer(self, mem: Member, resp: Any, now: float) -> bool:
        """Take the answer in; True when the assignment changed (acknowledge it at once)."""
        if resp.member_id and not mem.member_id:
            mem.member_id = resp.member_id                     # v0: the broker made the id
        changed = resp.member_epoch != mem.epoch
        mem.epoch = resp.member_epoch
        mem.interval_s = resp.heartbeat_interval_ms / 1000
        ack = False
        if resp.assignment is not None:
            owned = frozenset((tp.topic_id, p) for tp in resp.assignment.topic_partitions for p in tp.partitions)
            if owned != mem.owned:
                mem.owned, ack, changed = owned, True, True
        if changed:
            self._changed(now)
        return ack

    def _changed(self, now: float) -> None:
        self.changes += 1
        self.last_change = now
        was, self.settled = self.settled, self._is_settled()
        if self.settled and not was:
            self.settled_at = (now, self.heartbeats, workloads.cpu_seconds(self.pid))

    def _is_settled(self) -> bool:
        ms = self.members
        epoch = ms[0].epoch
        if not all(x.epoch == epoch and x.epoch > 0 and x.owned for x in ms):
            return False
        if sum(len(x.owned) for x in ms) != self.partitions:
            return False
        return len(frozenset().union(*(x.owned for x in ms))) == self.partitions

    # -- the run

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._member(x)) for x in self.members]

    async def settle(self, describe: AsyncConnection, hold_s: float, timeout_s: float = ROUND_TIMEOUT_S) -> None:
        """Until the members have been settled, unchanged, for ``hold_s`` and the broker's
        ConsumerGroupDescribe agrees."""
        deadline = time.perf_counter() + timeout_s
        while True:
            await asyncio.sleep(0.05)
            for t in self._tasks:
                if t.done() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
            now = time.perf_counter()
            if now > deadline:
                owned = sorted(len(x.owned) for x in self.members)
                raise RuntimeError(f"group {self.group} not stable in {timeout_s:.0f} s: epochs "
                                   f"{sorted({x.epoch for x in self.members})}, shares {owned[:3]}..{owned[-3:]}, "
                                   f"errors {self.errors}")
            if self.settled and now - self.last_change >= hold_s and await self._described_stable(describe):
                return

    async def _described_stable(self, conn: AsyncConnection) -> bool:
        resp = await conn.call(m.ConsumerGroupDescribeRequest(group_ids=[self.group]), conn.version_for(69, CAPS[69]))
        (g,) = resp.groups
        if g.error_code != ErrorCode.NONE or g.group_state.lower() != "stable" \
                or g.assignment_epoch != g.group_epoch or len(g.members) != len(self.members):
            return False

        def parts(a: Any) -> set[tuple[uuid.UUID, int]]:
            return {(tp.topic_id, p) for tp in a.topic_partitions for p in tp.partitions}
        return all(x.member_epoch == g.group_epoch and parts(x.assignment) == parts(x.target_assignment)
                   for x in g.members)

    async def stop(self) -> None:
        """Every member leaves (epoch -1), as KafkaConsumer.close() does."""
        self._stopping.set()
        await asyncio.gather(*self._tasks)


# ------------------------------------------------------------------ connections


async def open_members(bootstrap: str, n: int) -> list[AsyncConnection]:
    """``n`` connections, negotiated, after a FindCoordinator each (as a consumer does before its
    first heartbeat; the broker is its own coordinator here)."""
    host, port = bootstrap.rsplit(":", 1)
    conns = []
    for _ in range(n):
        conn = await AsyncConnection.open(host, int(port), client_id=CLIENT_ID, timeout_s=60, caps=CAPS)
        if conn.versions is None or 68 not in conn.versions.ranges:
            await conn.aclose()
            raise RuntimeError(f"{bootstrap} does not offer ConsumerGroupHeartbeat (API 68)")
        conns.append(conn)
    fc = await conns[0].call(m.FindCoordinatorRequest(key="bench", key_type=0), 3)
    if fc.error_code != ErrorCode.NONE:
        raise RuntimeError(f"FindCoordinator: {ErrorCode(fc.error_code).name}")
    return conns


async def close_all(conns: list[AsyncConnection]) -> None:
    await asyncio.gather(*(c.aclose() for c in conns))


def hold_s(heartbeat_ms: int) -> float:
    return max(1.0, 2 * heartbeat_ms / 1000)


async def wait_coordinator(conn: AsyncConnection, pid: int, partitions: int) -> None:
    """Until a one-member group answers (the offsets partition loaded; Kafka answers
    COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR for a moment after start)."""
    deadline = time.monotonic() + 60
    while True:
        run = GroupRun([conn], f"probe-{uuid.uuid4().hex[:8]}", partitions, pid)
        run.start()
        try:
            await run.settle(conn, 0.0, timeout_s=10)
            await run.stop()
            return
        except RuntimeError:
            await run.stop()
            if time.monotonic() > deadline:
                raise


# ------------------------------------------------------------------ the measurements


async def join_rounds(bootstrap: str, pid: int, n: int, rounds: int, partitions: int, heartbeat_ms: int,
                      raw: list[dict[str, Any]]) -> dict[str, float]:
    conns = await open_members(bootstrap, n)
    admin = await AsyncConnection.open(*_host_port(bootstrap), client_id=CLIENT_ID, timeout_s=60, caps=CAPS)
    try:
        await wait_coordinator(admin, pid, partitions)
        got: list[dict[str, Any]] = []
        for r in range(rounds):
            run = GroupRun(conns, f"join-{n}-{r}-{uuid.uuid4().hex[:8]}", partitions, pid)
            cpu0 = workloads.cpu_seconds(pid)
            run.start()
            await run.settle(admin, hold_s(heartbeat_ms))
            assert run.settled_at is not None
            t_settled, hb_settled, cpu_settled = run.settled_at
            rtt_ms = sorted(x * 1e3 for x in run.rtts[:hb_settled])
            one = {"ms": (t_settled - run.last_join) * 1e3,
                   "first_join_ms": (t_settled - run.first_join) * 1e3,
                   "heartbeats": hb_settled, "cpu_ms": (cpu_settled - cpu0) * 1e3,
                   "join_spread_ms": (run.last_join - run.first_join) * 1e3,
                   "max_rtt_ms": rtt_ms[-1], "p50_rtt_ms": workloads.percentile(rtt_ms, 50),
                   "errors": dict(run.errors)}
            await run.stop()
            got.append(one)
            paired.log(f"  join {n}: {one['ms']:,.0f} ms after the last join, {one['heartbeats']} heartbeats, "
                       f"broker CPU {one['cpu_ms']:,.0f} ms, slowest answer {one['max_rtt_ms']:,.0f} ms, "
                       f"errors {one['errors'] or 'none'}")
            await asyncio.sleep(1.0)   # the leaves' rebalances done before the next round
        raw.extend(got)
        return {f"join{n}.ms": statistics.median(x["ms"] for x in got),
                f"join{n}.heartbeats": statistics.median(x["heartbeats"] for x in got),
                f"join{n}.cpu_ms": statistics.median(x["cpu_ms"] for x in got),
                f"join{n}.max_rtt_ms": statistics.median(x["max_rtt_ms"] for x in got),
                f"join{n}.errors": float(sum(sum(x["errors"].values()) for x in got))}
    finally:
        await close_all([*conns, admin])


async def steady(bootstrap: str, pid: int, n: int, partitions: int, heartbeat_ms: int, seconds: float,
                 idle_s: float, raw: dict[str, Any]) -> dict[str, float]:
    conns = await open_members(bootstrap, n)
    admin = await AsyncConnection.open(*_host_port(bootstrap), client_id=CLIENT_ID, timeout_s=60, caps=CAPS)
    try:
        await wait_coordinator(admin, pid, partitions)
        await asyncio.sleep(2.0)
        idle_rate = await idle_cpu_rate(pid, idle_s)
        run = GroupRun(conns, f"steady-{n}-{uuid.uuid4().hex[:8]}", partitions, pid)
        run.start()
        await run.settle(admin, hold_s(heartbeat_ms))
        hb0, ch0, err0, rtt0 = run.heartbeats, run.changes, sum(run.errors.values()), len(run.rtts)
        cpu0, client0, t0 = workloads.cpu_seconds(pid), workloads.client_cpu_seconds(), time.perf_counter()
        await asyncio.sleep(seconds)
        cpu1, client1, t1 = workloads.cpu_seconds(pid), workloads.client_cpu_seconds(), time.perf_counter()
        hb, changes, errors = run.heartbeats - hb0, run.changes - ch0, sum(run.errors.values()) - err0
        rtt_ms = sorted(x * 1e3 for x in run.rtts[rtt0:rtt0 + hb])
        await run.stop()
        elapsed, cpu = t1 - t0, cpu1 - cpu0
        raw.update({"heartbeats": hb, "seconds": elapsed, "broker_cpu_s": cpu, "idle_cpu_s_per_s": idle_rate,
                    "client_cpu_s": client1 - client0, "changes": changes, "errors": errors,
                    "rtt_p50_ms": workloads.percentile(rtt_ms, 50), "rtt_p99_ms": workloads.percentile(rtt_ms, 99),
                    "rtt_max_ms": rtt_ms[-1]})
        paired.log(f"  steady {n}: {hb:,} heartbeats in {elapsed:.1f} s, broker CPU {cpu:.2f} s "
                   f"(idle {idle_rate * 100:.1f}%), client CPU {client1 - client0:.2f} s, "
                   f"{changes} changes, {errors} errors")
        return {"steady.us_per_hb": cpu / hb * 1e6,
                "steady.net_us_per_hb": (cpu - idle_rate * elapsed) / hb * 1e6,
                "steady.hb_s": hb / elapsed, "steady.idle_pct": idle_rate * 100,
                "steady.rtt_p50_ms": workloads.percentile(rtt_ms, 50),
                "steady.rtt_p99_ms": workloads.percentile(rtt_ms, 99),
                "steady.errors": float(errors + changes)}
    finally:
        await close_all([*conns, admin])


async def idle_cpu_rate(pid: int, seconds: float, slice_s: float = 1.0) -> float:
    """The broker's CPU seconds per second while nobody asks it anything: the median of
    ``slice_s`` slices, so that a burst of background work (a JIT compilation, a GC, the
    end of the previous measurement's rebalances) in one slice does not count."""
    rates = []
    for _ in range(max(1, round(seconds / slice_s))):
        cpu0, t0 = workloads.cpu_seconds(pid), time.perf_counter()
        await asyncio.sleep(slice_s)
        rates.append((workloads.cpu_seconds(pid) - cpu0) / (time.perf_counter() - t0))
    return statistics.median(rates)


def _host_port(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


# ------------------------------------------------------------------ the suite


def figures(sizes: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """(id, label, format, in the history table)."""
    out = []
    for n in sizes["join_members"]:
        out += [(f"join{n}.ms", f"join → stable, {n} members, ms after the last join", ",.0f", True),
                (f"join{n}.heartbeats", f"join → stable, {n} members, heartbeats answered", ",.0f", True),
                (f"join{n}.cpu_ms", f"join → stable, {n} members, broker CPU ms", ",.0f", True),
                (f"join{n}.max_rtt_ms", f"join → stable, {n} members, slowest heartbeat answer ms", ",.0f", False)]
    n = sizes["steady_members"]
    out += [("steady.us_per_hb", f"steady {n} members, broker CPU µs per heartbeat", ",.0f", True),
            ("steady.net_us_per_hb", f"steady {n} members, broker CPU µs per heartbeat, idle CPU subtracted",
             ",.0f", True),
            ("steady.hb_s", f"steady {n} members, heartbeats/s answered", ",.0f", False),
            ("steady.rtt_p50_ms", f"steady {n} members, heartbeat round trip p50 ms", ".2f", False),
            ("steady.rtt_p99_ms", f"steady {n} members, heartbeat round trip p99 ms", ".2f", False),
            ("steady.idle_pct", "idle broker CPU, % of a core", ".1f", False)]
    return out


def create_other_topics(bootstrap: str, n: int) -> None:
    """``n`` topics of one partition nobody subscribes to (``--other-topics``), in batches of 500."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"other-{i}" for i in range(n)]
    for i in range(0, n, 500):
        for fut in admin.create_topics([NewTopic(t, 1, 1) for t in names[i:i + 500]],
                                       operation_timeout=120).values():
            fut.result(300)


def body(sizes: Sizes, heartbeat_ms: int, extra: dict[str, str],
         other_topics: int) -> Callable[[int, list[str], Path], dict[str, Any]]:
    overrides = {"group.consumer.heartbeat.interval.ms": str(heartbeat_ms),
                 "group.consumer.min.heartbeat.interval.ms": str(heartbeat_ms), **extra}

    def run(i: int, order: list[str], tmp: Path) -> dict[str, Any]:
        rep: dict[str, Any] = {"raw": {}}
        with paired.both_brokers(tmp, order, overrides=overrides) as brokers:
            names = {brokers[b].bootstrap: b for b in order}
            for b in order:
                workloads.create_topic(brokers[b].bootstrap, TOPIC, sizes.partitions)
                if other_topics:
                    paired.log(f"{b}: creating {other_topics:,} other topics")
                    create_other_topics(brokers[b].bootstrap, other_topics)
            for b in order:   # unmeasured: a round of the largest group (JIT, lazily built code paths)
                paired.log(f"{b}: warm-up round of {max(sizes.join_members)} members")
                asyncio.run(join_rounds(brokers[b].bootstrap, brokers[b].proc.pid, max(sizes.join_members), 1,
                                        sizes.partitions, heartbeat_ms, []))

            def raw(kind: str, bootstrap: str) -> Any:
                return rep["raw"].setdefault(kind, {}).setdefault(names[bootstrap], [] if kind != "steady" else {})

            for n in sizes.join_members:
                paired.run_pair(f"join {n}", lambda bs, pid, n=n: asyncio.run(join_rounds(
                    bs, pid, n, sizes.join_rounds, sizes.partitions, heartbeat_ms, raw(f"join{n}", bs))),
                    order, brokers, rep)
            paired.run_pair("steady", lambda bs, pid: asyncio.run(steady(
                bs, pid, sizes.steady_members, sizes.partitions, heartbeat_ms, sizes.steady_s, sizes.idle_s,
                raw("steady", bs))), order, brokers, rep)
        return rep
    return run


def _per_rep(reps: list[dict[str, Any]], fid: str, fmt: str) -> str:
    cells = []
    for r in reps:
        v = r.get("values", {}).get(fid, {})
        kb, kf = v.get(KB), v.get(KAFKA)
        ratio = f"{kb / kf:.2f}" if kb is not None and kf else "—"
        cells.append(f"{'—' if kb is None else format(kb, fmt)} / {'—' if kf is None else format(kf, fmt)} / {ratio}")
    return " | ".join(cells)


def markdown(results: dict[str, Any]) -> str:
    reps, sizes = results["repetitions"], results["sizes"]
    hb_ms = results["heartbeat_ms"]
    extra = results.get("set") or {}
    figs = figures(sizes)
    out = ["# The consumer group protocol (KIP-848): kbroker vs Apache Kafka", "",
           f"Made by `make bench-consumer-protocol` (bench/suites/consumer_protocol.py), finished "
           f"{results['finished']}, {len(reps)} repetition(s), orders "
           f"{', '.join('→'.join(r['order']) for r in reps)}. Each cell: median (min–max) over repetitions; "
           "ratio = kbroker/Kafka within a repetition; lower is better for every figure but heartbeats/s answered, "
           "a check (members ÷ interval while a broker keeps up).", "",
           f"- both brokers: `group.consumer.heartbeat.interval.ms` = `group.consumer.min.heartbeat.interval.ms` "
           f"= {hb_ms}" + "".join(f", `{k}`={v}" for k, v in extra.items())
           + "; everything else each broker's default (Kafka 4.3: `group.consumer.assignment.interval.ms`=1000, "
           "`group.consumer.assignor.offload.enable`=true; kbroker has neither);",
           "- client: raw ConsumerGroupHeartbeat requests from one Python process, one connection per member, "
           "following the Java consumer's heartbeat rules with instant reconciliation (the suite's docstring);",
           f"- join → stable: {sizes['join_rounds']} round(s) per repetition and group size (the repetition's "
           f"figure is their median), one topic of {sizes['partitions']:,} partitions, all members' first "
           "heartbeats written at once; from the last of them to every member at one epoch holding a non-empty "
           "share of a split of all partitions (then checked: unchanged for "
           f"{hold_s(hb_ms):g} s, ConsumerGroupDescribe Stable with every member at its target);",
           *([f"- {results['other_topics']:,} other topics of one partition each on both brokers, "
               "subscribed by nobody (`--other-topics`);"] if results.get("other_topics") else []),
           f"- steady: {sizes['steady_members']} members heartbeating for {sizes['steady_s']:g} s; broker process "
           f"CPU / heartbeats answered; idle CPU: the median rate of {sizes['idle_s']:g} 1-s slices before the "
           "group joined.", "",
           "| figure | kbroker | Kafka | ratio kbroker/Kafka |", "|---|---|---|---|"]
    for fid, label, fmt, _h in figs:
        out.append(f"| {label} | {paired.cell(paired.values(reps, fid, KB), fmt)} | "
                   f"{paired.cell(paired.values(reps, fid, KAFKA), fmt)} | {paired.cell(paired.ratios(reps, fid))} |")
    out += ["", "Per repetition (kbroker / Kafka / ratio):", "",
            "| figure | " + " | ".join(f"rep {i + 1} ({'→'.join(r['order'])})" for i, r in enumerate(reps)) + " |",
            "|---|" + "---|" * len(reps)]
    for fid, label, fmt, _h in figs:
        out.append(f"| {label} | {_per_rep(reps, fid, fmt)} |")
    errs = {b: [r["values"][fid][b] for r in reps for fid in r.get("values", {})
                if fid.endswith(".errors") and b in r["values"][fid]] for b in (KB, KAFKA)}
    out += ["", f"Protocol error answers (members rejoined) and assignment changes during the steady windows: "
            f"kbroker {sum(errs[KB]):g}, Kafka {sum(errs[KAFKA]):g} (both expected 0; `.json` has them per round).",
            "", "Broker CPU seconds (user+system of the broker process) during each measurement, rounds, "
            "leaves and idle window included:", "", "| measurement | kbroker | Kafka |", "|---|---|---|"]
    for name in [f"join {n}" for n in sizes["join_members"]] + ["steady"]:
        cpu = {b: [r["cpu"][name][b] for r in reps if b in r.get("cpu", {}).get(name, {})] for b in (KB, KAFKA)}
        out.append(f"| {name} | {paired.cell(cpu[KB])} | {paired.cell(cpu[KAFKA])} |")
    if paired.failures(reps):
        out += ["", "## Failures", "", *paired.failures(reps)]
    out += ["", "## Machine", ""] + [f"- {k}: {v}" for k, v in results["machine"].items()]
    return "\n".join(out) + "\n"


def history_row(results: dict[str, Any]) -> dict[str, str]:
    reps, sizes = results["repetitions"], results["sizes"]
    row = {"finished": results["finished"], "kbroker": history.commit_of(results["machine"]), "reps": str(len(reps)),
           "heartbeat ms": str(results["heartbeat_ms"]), "other topics": str(results.get("other_topics", 0)),
           "set": " ".join(f"{k}={v}" for k, v in (results.get("set") or {}).items()) or "—"}
    for fid, label, _fmt, in_history in figures(sizes):
        if in_history:
            row[label] = history.median_cell(paired.ratios(reps, fid))
    return row


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 repetition, 1 round, short steady window")
    ap.add_argument("--repetitions", type=int)
    ap.add_argument("--heartbeat-ms", type=int, default=500,
                    help="group.consumer.heartbeat.interval.ms and .min. of both brokers (default 500)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="another broker setting for both (kbroker ignores names it does not know)")
    ap.add_argument("--other-topics", type=int, default=0,
                    help="create this many one-partition topics nobody subscribes to first (default 0)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.repetitions:
        sizes = Sizes(**{**sizes.__dict__, "repetitions": args.repetitions})
    extra = dict(kv.split("=", 1) for kv in args.set)
    results: dict[str, Any] = {"sizes": sizes.__dict__, "heartbeat_ms": args.heartbeat_ms, "set": extra,
                               "other_topics": args.other_topics,
                               "machine": machine.facts(Path("/tmp"), kafka_dist.kafka_version(),
                                                        kafka_dist.java_version())}
    name = "consumer_protocol_quick" if args.quick else "consumer_protocol"
    args.out.mkdir(parents=True, exist_ok=True)

    def save(reps: list[dict[str, Any]]) -> None:
        results["repetitions"] = reps
        results["finished"] = time.strftime("%Y-%m-%d %H:%M %Z")
        (args.out / f"{name}.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
        history.write_report(args.out / f"{name}.md", markdown(results), history_row(results),
                             same_run=len(reps) > 1)

    paired.repetitions(sizes.repetitions, body(sizes, args.heartbeat_ms, extra, args.other_topics),
                       after_each=save)
    print((args.out / f"{name}.md").read_text())


if __name__ == "__main__":
    main()
