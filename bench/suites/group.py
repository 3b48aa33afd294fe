"""Consumer-group coordinator benchmarks against a real kbroker process over TCP (issue 5).

Run: ``.venv/bin/python -m bench.suites.group [--rounds 20] [--seconds 3]``.

The broker runs as ``python -m kbroker serve`` on 127.0.0.1 with a temporary data dir and
``group.initial.rebalance.delay.ms=0`` (tests/support/broker_process.py).  Connections,
ApiVersions, FindCoordinator (which creates ``__consumer_offsets``) and topic creation
happen before any timing.  Figures, not pass/fail.

* join -> Stable, protocol level (ms, median / p90 / min / max over ``--rounds`` fresh
  group ids): 10 members, each on its own connection, written with the project's own codec
  (wire.headers, wire.framing, wire.messages) over asyncio streams; no client timers on
  the path.  Timed from the moment the first JoinGroup is written until the 10th
  successful SyncGroup response is decoded, all 10 for the same generation.  Each member:
  JoinGroup with an empty member id -> MEMBER_ID_REQUIRED (KIP-394) -> JoinGroup with the
  assigned id -> (the leader computes one partition per member) SyncGroup.  A member
  whose SyncGroup answers REBALANCE_IN_PROGRESS rejoins; a member that already holds an
  assignment heartbeats every 20 ms while it waits and rejoins on REBALANCE_IN_PROGRESS,
  so a round that needs more than one generation is still timed to the real Stable (the
  table counts such rounds).  After each round the members leave (untimed).  Also shown,
  per round: first JoinGroup -> the 10th MEMBER_ID_REQUIRED; -> the 10th successful
  JoinGroup response (join phase); -> the 10th SyncGroup response (sync phase).
  The broker runs group timers (here: the initial-delay join timer, 0 ms) from its
  background tick, every 100 ms (kbroker.app.broker.SCHEDULER_TICK_S), so the join phase
  ends at the next tick after the first member rejoins (one more if a member rejoins
  between two ticks).  Back-to-back rounds would lock onto that tick, so each round
  starts after a random 0-100 ms pause (untimed).
* join -> Stable, confluent-kafka (ms, same statistics over ``--ck-rounds``): 10
  ``Consumer``s (created, and so bootstrapping, beforehand) ``subscribe()``, timed from the first subscribe until
  every one of them holds a non-empty assignment (``on_assign``, each consumer polled on
  its own thread).  This includes librdkafka's own timers and state machine
  (coordinator query, heartbeat.interval.ms=3000 default), so it is context, not a broker
  figure.
* OffsetCommit round trips/s from one connection, strictly sequential (request, wait for
  the response, next request), for ``--seconds`` each, committing 1 and then 6 partitions
  of one topic per request (offsets increase every request; every response is checked for
  errors): as the member of a Stable one-member group (its generation and member id,
  OffsetCommit v8), and as a "simple" commit (generation -1, empty member id, a group with
  no members).  kbroker.client's blocking connection.  Also the broker process's CPU
  time per commit (us, /proc user+system).
* confluent-kafka ``Consumer.commit(offsets=..., asynchronous=False)`` round trips/s from
  the one member of a Stable group, 1 and 6 partitions: context (librdkafka's commit path
  and its queues are included).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import struct
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, NamedTuple

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.client import AsyncConnection, Connection, UnsupportedVersion
from kbroker.tools.client import WRITTEN_FOR  # the versions this code reads and writes
from tests.support.broker_process import BrokerProcess
from wire import messages as m
from wire.codec import encode
from wire.error_codes import ErrorCode

MEMBERS = 10
JOIN_TOPIC = "bench-group-join"      # MEMBERS partitions: one per member
COMMIT_TOPIC = "bench-group-commit"  # 6 partitions
COMMIT_PARTITIONS = 6
HEARTBEAT_S = 0.02
TICK_SPREAD_S = 0.1  # kbroker.app.broker.SCHEDULER_TICK_S
SESSION_MS = 30_000
CLIENT_ID = "group-bench"
E = ErrorCode

# ------------------------------------------------------------------ the client (kbroker.client)


class BenchError(RuntimeError):
    pass


def negotiate(conn: Connection) -> dict[int, int]:
    """api key -> the highest version this codec, this code (WRITTEN_FOR) and the broker speak."""
    table = conn.negotiate(("kbroker-bench", "1"))
    out = {}
    for key in table.ranges:
        try:
            out[key] = table.pick(key)
        except UnsupportedVersion:   # no version in common: not used then
            pass
    return out


def check(code: int, what: str) -> None:
    if code != E.NONE:
        raise BenchError(f"{what}: {E(code).name}")


def subscription(topics: list[str]) -> bytes:
    return struct.pack(">h", 0) + encode(m.ConsumerProtocolSubscription(topics=topics), 0)


def assignment(topic: str, partitions: list[int]) -> bytes:
    return struct.pack(">h", 0) + encode(m.ConsumerProtocolAssignment(
        assigned_partitions=[m.ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=partitions)]), 0)


def join_request(group: str, member_id: str) -> m.JoinGroupRequest:
    return m.JoinGroupRequest(
        group_id=group, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=SESSION_MS,
        member_id=member_id, protocol_type="consumer",
        protocols=[m.JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription([JOIN_TOPIC]))])


def leader_assignments(members: list[Any]) -> list[Any]:
    """Trivial assignment: member i (in the order the broker listed them) gets partition i."""
    return [m.SyncGroupRequest.SyncGroupRequestAssignment(member_id=mem.member_id, assignment=assignment(JOIN_TOPIC, [i % MEMBERS]))
            for i, mem in enumerate(members)]


# ------------------------------------------------------------------ join -> Stable, protocol level


class Round:
    def __init__(self, group: str) -> None:
        self.group = group
        self.synced: dict[int, int] = {}   # member index -> generation of its last good sync
        self.member_ids: dict[int, str] = {}
        self.done = asyncio.Event()
        self.t_done = 0.0
        self.generation = 0
        self.join_calls = 0
        self.t_ids = 0.0      # the last MEMBER_ID_REQUIRED answer arrived
        self.t_joined = 0.0   # the last successful JoinGroup answer arrived

    def on_synced(self, idx: int, generation: int) -> None:
        self.synced[idx] = generation
        if len(self.synced) == MEMBERS and len(set(self.synced.values())) == 1:
            self.t_done = time.perf_counter()
            self.generation = generation
            self.done.set()


async def run_member(idx: int, conn: AsyncConnection, v: dict[int, int], rnd: Round) -> None:
    member_id = ""
    while not rnd.done.is_set():
        rnd.join_calls += 1
        join = await conn.call(join_request(rnd.group, member_id), v[11])
        if join.error_code == E.MEMBER_ID_REQUIRED:
            rnd.t_ids = time.perf_counter()
            member_id = join.member_id
            continue
        check(join.error_code, "JoinGroup")
        rnd.t_joined = time.perf_counter()
        member_id = join.member_id
        rnd.member_ids[idx] = member_id
        assignments = leader_assignments(join.members) if join.leader == member_id else []
        sync = await conn.call(m.SyncGroupRequest(
            group_id=rnd.group, generation_id=join.generation_id, member_id=member_id,
            protocol_type="consumer", protocol_name=join.protocol_name, assignments=assignments), v[14])
        if sync.error_code == E.REBALANCE_IN_PROGRESS:
            continue
        check(sync.error_code, "SyncGroup")
        if not sync.assignment:
            raise BenchError("SyncGroup: empty assignment")
        rnd.on_synced(idx, join.generation_id)
        while not rnd.done.is_set():  # hold the assignment; learn of a rebalance by heartbeat
            try:
                await asyncio.wait_for(rnd.done.wait(), HEARTBEAT_S)
            except TimeoutError:
                hb = await conn.call(m.HeartbeatRequest(group_id=rnd.group, generation_id=join.generation_id, member_id=member_id), v[12])
                if hb.error_code == E.REBALANCE_IN_PROGRESS:
                    rnd.synced.pop(idx, None)
                    break
                check(hb.error_code, "Heartbeat")


class JoinResult(NamedTuple):
    total_ms: float
    ids_ms: float      # first JoinGroup -> last MEMBER_ID_REQUIRED
    join_ms: float     # -> last successful JoinGroup response
    sync_ms: float     # -> last SyncGroup response (Stable)
    generation: int
    join_calls: int


async def join_rounds(host: str, port: int, v: dict[int, int], rounds: int) -> list[JoinResult]:
    conns = [await AsyncConnection.open(host, port, client_id=CLIENT_ID, timeout_s=None, negotiate=False)
             for _ in range(MEMBERS)]
    out = []
    try:
        for r in range(rounds):
            rnd = Round(f"bench-join-{r}-{uuid.uuid4().hex[:8]}")
            # Rounds back to back would start right after the broker's previous timer tick
            # (see the docstring): a random pause spreads the start over the tick period.
            await asyncio.sleep(random.uniform(0, TICK_SPREAD_S))
            t0 = time.perf_counter()
            await asyncio.wait_for(asyncio.gather(*(run_member(i, c, v, rnd) for i, c in enumerate(conns))), 60)
            out.append(JoinResult((rnd.t_done - t0) * 1e3, (rnd.t_ids - t0) * 1e3, (rnd.t_joined - rnd.t_ids) * 1e3,
                                  (rnd.t_done - rnd.t_joined) * 1e3, rnd.generation, rnd.join_calls))
            leave = await conns[0].call(m.LeaveGroupRequest(group_id=rnd.group, members=[
                m.LeaveGroupRequest.MemberIdentity(member_id=mid) for mid in rnd.member_ids.values()]), v[13])
            check(leave.error_code, "LeaveGroup")
    finally:
        for c in conns:
            await c.aclose()
    return out


# ------------------------------------------------------------------ join -> Stable, confluent-kafka


def ck_join_round(bootstrap: str, r: int) -> float:
    group = f"bench-ck-join-{r}-{uuid.uuid4().hex[:8]}"
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                           "session.timeout.ms": SESSION_MS, "client.id": f"{CLIENT_ID}-{i}"})
                 for i in range(MEMBERS)]
    holding: dict[int, float] = {}
    lock = threading.Lock()
    all_in = threading.Event()
    stop = threading.Event()
    t_done = [0.0]
    errors: list[str] = []

    def poller(i: int, c: Consumer) -> None:
        def on_assign(_c: Consumer, parts: list[TopicPartition]) -> None:
            with lock:
                if parts:
                    holding[i] = time.perf_counter()
                    if len(holding) == MEMBERS and not all_in.is_set():
                        t_done[0] = time.perf_counter()
                        all_in.set()
                else:
                    holding.pop(i, None)

        def on_revoke(_c: Consumer, _parts: list[TopicPartition]) -> None:
            with lock:
                holding.pop(i, None)

        c.subscribe([JOIN_TOPIC], on_assign=on_assign, on_revoke=on_revoke)
        while not stop.is_set():
            msg = c.poll(0.05)
            if msg is not None and msg.error() is not None:
                errors.append(str(msg.error()))

    threads = [threading.Thread(target=poller, args=(i, c), daemon=True) for i, c in enumerate(consumers)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    ok = all_in.wait(60)
    stop.set()
    for t in threads:
        t.join()
    closers = [threading.Thread(target=c.close) for c in consumers]
    for t in closers:
        t.start()
    for t in closers:
        t.join()
    if not ok:
        raise BenchError(f"confluent-kafka group did not settle in 60 s (holding {len(holding)}), {errors[:3]}")
    return (t_done[0] - t0) * 1e3


# ------------------------------------------------------------------ OffsetCommit round trips


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def join_alone(conn: Connection, v: dict[int, int], group: str) -> tuple[int, str]:
    """Make ``conn`` the only member of a Stable group; returns (generation, member id)."""
    member_id = ""
    while True:
        join = conn.call(join_request(group, member_id), v[11])
        if join.error_code == E.MEMBER_ID_REQUIRED:
            member_id = join.member_id
            continue
        check(join.error_code, "JoinGroup")
        member_id = join.member_id
        sync = conn.call(m.SyncGroupRequest(group_id=group, generation_id=join.generation_id, member_id=member_id,
                                            protocol_type="consumer", protocol_name=join.protocol_name,
                                            assignments=leader_assignments(join.members)), v[14])
        if sync.error_code != E.REBALANCE_IN_PROGRESS:
            check(sync.error_code, "SyncGroup")
            return join.generation_id, member_id


def commit_loop(conn: Connection, v: dict[int, int], group: str, generation: int, member_id: str,
                partitions: int, seconds: float) -> int:
    """Sequential OffsetCommits for ``seconds``; returns how many round trips completed."""
    Topic, Part = m.OffsetCommitRequest.OffsetCommitRequestTopic, m.OffsetCommitRequest.OffsetCommitRequestPartition
    n = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        n += 1
        req = m.OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
                                    topics=[Topic(name=COMMIT_TOPIC, partitions=[Part(p, n, -1, -1, "") for p in range(partitions)])])
        resp = conn.call(req, v[8])
        for t in resp.topics:
            for p in t.partitions:
                check(p.error_code, f"OffsetCommit {t.name}-{p.partition_index}")
        if sum(len(t.partitions) for t in resp.topics) != partitions:
            raise BenchError("OffsetCommit: partitions missing from the response")
    return n


def ck_commit_loop(c: Consumer, partitions: int, seconds: float) -> int:
    n = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        n += 1
        done = c.commit(offsets=[TopicPartition(COMMIT_TOPIC, p, n) for p in range(partitions)], asynchronous=False)
        bad = [tp for tp in done or [] if tp.error is not None]
        if bad:
            raise BenchError(f"commit: {bad[0].error}")
    return n


def ck_member(bootstrap: str, group: str) -> Consumer:
    """A confluent-kafka consumer that is the one member of a Stable group."""
    assigned = threading.Event()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "session.timeout.ms": SESSION_MS, "client.id": f"{CLIENT_ID}-ck-commit"})
    c.subscribe([COMMIT_TOPIC], on_assign=lambda _c, parts: assigned.set() if parts else None)
    deadline = time.monotonic() + 30
    while not assigned.is_set():
        if time.monotonic() > deadline:
            raise BenchError("confluent-kafka commit consumer got no assignment in 30 s")
        c.poll(0.05)
    return c


# ------------------------------------------------------------------ main


def ms_stats(xs: list[float]) -> str:
    q = statistics.quantiles(xs, n=10, method="inclusive") if len(xs) > 1 else [xs[0]] * 9
    return f"{statistics.median(xs):8.1f} {q[8]:8.1f} {min(xs):8.1f} {max(xs):8.1f}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20, help="protocol-level join rounds")
    ap.add_argument("--ck-rounds", type=int, default=5, help="confluent-kafka join rounds")
    ap.add_argument("--seconds", type=float, default=3.0, help="duration of each commit measurement")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="kbroker-bench-"))
    broker = BrokerProcess(tmp / "data", overrides={"group.initial.rebalance.delay.ms": "0"}).start()
    host, port = "127.0.0.1", broker.port
    try:
        pid = broker.proc.pid if broker.proc is not None else 0
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log.connection.close": False})
        for _name, fut in admin.create_topics([NewTopic(JOIN_TOPIC, MEMBERS, 1),
                                              NewTopic(COMMIT_TOPIC, COMMIT_PARTITIONS, 1)]).items():
            fut.result(30)
        conn = Connection.open(host, port, client_id=CLIENT_ID, timeout_s=None, negotiate=False, caps=WRITTEN_FOR)
        v = negotiate(conn)
        if v.get(11, 0) < 4:
            raise BenchError("broker's JoinGroup is below v4: no KIP-394 member id round")
        fc = conn.call(m.FindCoordinatorRequest(key="bench", key_type=0), 3)  # creates __consumer_offsets
        check(fc.error_code, "FindCoordinator")
        print(f"broker {broker.bootstrap}, group.initial.rebalance.delay.ms=0; versions: JoinGroup v{v[11]}, "
              f"SyncGroup v{v[14]}, Heartbeat v{v[12]}, OffsetCommit v{v[8]}")

        joins = asyncio.run(join_rounds(host, port, v, args.rounds))
        ms = [j.total_ms for j in joins]
        multi = sum(1 for j in joins if j.generation > 1)
        calls = statistics.median(j.join_calls for j in joins)
        ck_ms = [ck_join_round(broker.bootstrap, r) for r in range(args.ck_rounds)]

        rows: list[tuple[str, int, float, float]] = []
        generation, member_id = join_alone(conn, v, "bench-commit-member")
        for parts in (1, COMMIT_PARTITIONS):
            cpu0, t0 = cpu_seconds(pid), time.perf_counter()
            n = commit_loop(conn, v, "bench-commit-member", generation, member_id, parts, args.seconds)
            rows.append(("protocol, Stable-group member", parts, n / (time.perf_counter() - t0),
                         (cpu_seconds(pid) - cpu0) / n * 1e6))
        for parts in (1, COMMIT_PARTITIONS):
            cpu0, t0 = cpu_seconds(pid), time.perf_counter()
            n = commit_loop(conn, v, "bench-commit-simple", -1, "", parts, args.seconds)
            rows.append(("protocol, simple (gen -1, no member)", parts, n / (time.perf_counter() - t0),
                         (cpu_seconds(pid) - cpu0) / n * 1e6))
        conn.close()
        ck = ck_member(broker.bootstrap, "bench-commit-ck")
        for parts in (1, COMMIT_PARTITIONS):
            cpu0, t0 = cpu_seconds(pid), time.perf_counter()
            n = ck_commit_loop(ck, parts, args.seconds)
            rows.append(("confluent-kafka commit(sync), member", parts, n / (time.perf_counter() - t0),
                         (cpu_seconds(pid) - cpu0) / n * 1e6))
        ck.close()

        print(f"\n{'join -> Stable, 10 members (ms)':54} {'median':>8} {'p90':>8} {'min':>8} {'max':>8}")
        print(f"{f'protocol client, {len(ms)} rounds':54} {ms_stats(ms)}")
        for label, xs in (("  first JoinGroup -> 10 MEMBER_ID_REQUIRED", [j.ids_ms for j in joins]),
                          ("  -> 10 JoinGroup responses (join phase)", [j.join_ms for j in joins]),
                          ("  -> 10 SyncGroup responses (sync phase)", [j.sync_ms for j in joins])):
            print(f"{label:54} {ms_stats(xs)}")
        print(f"  (rounds needing >1 generation: {multi}; JoinGroup calls per round, median: {calls:g})")
        print(f"{f'confluent-kafka, {len(ck_ms)} rounds (incl. librdkafka timers)':54} {ms_stats(ck_ms)}")
        print(f"\n{'OffsetCommit, sequential, one connection':42} {'parts':>5} {'round trips/s':>14} "
              f"{'broker CPU us/commit':>21}")
        for label, parts, rate, cpu_us in rows:
            print(f"{label:42} {parts:5d} {rate:14.0f} {cpu_us:21.0f}")
    finally:
        broker.stop(timeout_s=60)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
