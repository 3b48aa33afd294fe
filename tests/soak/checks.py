"""The soak's verdict, computed from the workers' histories (tests/soak/producers.py and
consumers.py say what each line means) and the brokers' output.  Only acknowledged things
are held against the cluster: a record whose delivery failed, a commit whose callback
reported an error, a transaction whose end is unknown promise nothing (beyond: never read
twice, and all of a transaction or none of it), so a slow machine gives fewer facts, not
false failures.

- delivery: each acknowledged idempotent record, and each acknowledged record of a
  transaction whose commit returned, is read back (read_committed) exactly once, at the
  partition and offset its acknowledgement named; *lost* = never read back, *duplicated* =
  any value read at two offsets (acknowledged or not), *misplaced* = read once, elsewhere
  (a record librdkafka acknowledged without an offset, its implicit ack, must be read once in
  its partition);
- aborted reads: no record of a transaction whose abort returned is ever read with
  read_committed (by the final read-back or by the group's members during the run);
  *partial transactions*: a transaction whose records are partly visible;
- committed-offset regressions: for each member, within one ownership interval (no
  rebalance callback in between), a committed offset it fetched is never below the highest
  offset it committed, in that interval, whose acknowledgement it had before the fetch
  (except where the client itself re-sent an older commit after a newer one: see
  check_commits);
- HW regressions: per partition, the high watermark the sampler got from the leader never
  falls below one it got earlier;
- unhandled exceptions: lines of the brokers' output matching LOG_PATTERNS.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# What an unhandled exception looks like in a kbroker's output (stdout+stderr of every start
# of the broker, as tests/support/broker_process.py collects it).  Each is a sign that code
# failed in a way nobody handled, not an expected refusal (those are answered as Kafka error
# codes and logged at INFO/WARNING):
LOG_PATTERNS: dict[str, re.Pattern[str]] = {
    # Python printed a stack: logging's exc_info (log.exception), an exception escaping a
    # thread, or asyncio's default handler ("Task exception was never retrieved")
    "traceback": re.compile(r"Traceback \(most recent call last\)"),
    # asyncio garbage-collected a task still pending: work silently dropped
    "task destroyed": re.compile(r"Task was destroyed but it is pending"),
    # a callback or task scheduled on a loop already closed: shutdown ordering gone wrong
    "loop closed": re.compile(r"Event loop is closed"),
    # kbroker's log format is "[time] LEVEL message (logger)": anything logged at ERROR or
    # CRITICAL (log.error, log.exception, asyncio's "Exception in callback")
    "error log": re.compile(r" (ERROR|CRITICAL) "),
}


def clock(ms: int) -> str:
    """Local wall-clock time of an epoch-ms stamp, as the brokers' log lines show it."""
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) + f".{ms % 1000:03d}"


def txn_of(value: str) -> str:
    """The transaction a transactional record belongs to: its value is ``<txn>-<i:03d>``."""
    return value.rsplit("-", 1)[0]


@dataclass
class Findings:
    acked_idempotent: int = 0
    acked_txn_committed: int = 0
    txns: dict[str, int] = field(default_factory=dict)            # outcome -> count
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    misplaced: list[str] = field(default_factory=list)
    aborted_reads: list[str] = field(default_factory=list)
    partial_txns: list[str] = field(default_factory=list)
    commit_regressions: list[str] = field(default_factory=list)
    commits_acked: int = 0
    offset_fetches: int = 0
    hw_regressions: list[str] = field(default_factory=list)
    hw_samples: int = 0
    unhandled: list[str] = field(default_factory=list)
    client_fatal: dict[str, int] = field(default_factory=dict)     # error name -> count
    notes: list[str] = field(default_factory=list)                 # facts worth a look, not failures

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.misplaced or self.aborted_reads or self.partial_txns
                    or self.commit_regressions or self.hw_regressions or self.unhandled)


# -- delivery ---------------------------------------------------------------------------------


def check_delivery(f: Findings, idempotent: Iterable[dict], transactional: Iterable[dict],
                   readback: Iterable[dict], member_reads: Iterable[dict]) -> None:
    acked: list[tuple[str, int, int, str, str | None]] = []   # topic, p, o, value, txn
    outcome: dict[str, str] = {}
    for e in idempotent:
        if e.get("t") == "ack":
            acked.append((e["topic"], e["p"], e["o"], e["v"], None))
        elif e.get("t") == "fatal":
            f.client_fatal[e["err"]] = f.client_fatal.get(e["err"], 0) + 1
    txn_acked: dict[str, list[tuple[str, int, int, str, str | None]]] = defaultdict(list)
    for e in transactional:
        kind = e.get("t")
        if kind == "ack":
            txn_acked[e["txn"]].append((e["topic"], e["p"], e["o"], e["v"], e["txn"]))
        elif kind == "end":
            outcome[e["txn"]] = e["outcome"]
        elif kind == "begin":
            outcome.setdefault(e["txn"], "unknown")   # never ended: the worker was killed
        elif kind == "fatal":
            f.client_fatal[e["err"]] = f.client_fatal.get(e["err"], 0) + 1
    for txn, state in outcome.items():
        f.txns[state] = f.txns.get(state, 0) + 1
        if state == "committed":
            acked += txn_acked[txn]
    f.acked_idempotent = sum(1 for a in acked if a[4] is None)
    f.acked_txn_committed = len(acked) - f.acked_idempotent

    committed_reads: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)  # (topic, v) -> places
    uncommitted: dict[tuple[str, int, int], str] = {}
    for e in readback:
        if e.get("t") != "read":
            continue
        if e["iso"] == "read_committed":
            committed_reads[(e["topic"], e["v"])].append((e["p"], e["o"]))
        else:
            uncommitted[(e["topic"], e["p"], e["o"])] = e["v"]

    for (topic, value), places in committed_reads.items():
        if len(set(places)) > 1:
            f.duplicated.append(f"{topic} {value!r} read at (partition, offset) {sorted(set(places))}")
    implicit = 0
    for topic, p, o, value, txn in acked:
        places = set(committed_reads.get((topic, value), ()))
        what = f"{topic}-{p} offset {o} {value!r}" + (f" (transaction {txn})" if txn else "")
        if not places:
            in_log = uncommitted.get((topic, p, o))
            f.lost.append(what + (f"; read_uncommitted has {in_log!r} there" if txn else ""))
        elif o is None and len(places) == 1:
            # librdkafka's implicit ack: a retried batch whose own answer was an error
            # (NOT_LEADER_OR_FOLLOWER) is acknowledged without an offset when a later batch
            # of the producer succeeds, since its sequence proves the earlier one was
            # written (rd_kafka_handle_idempotent_Produce_success -> rd_kafka_dr_implicit_ack
            # sets no offset; against Apache Kafka too).  It must be in its partition, once.
            implicit += 1
            if {pl[0] for pl in places} != {p}:
                f.misplaced.append(f"{what} (acknowledged without an offset) read at {sorted(places)}")
        elif len(places) == 1 and places != {(p, o)}:
            f.misplaced.append(f"{what} read at {sorted(places)}")
    if implicit:
        f.notes.append(f"acknowledged without an offset (librdkafka's implicit ack after a retried "
                       f"batch), each read once in its partition: {implicit}")

    # transactions: nothing of an aborted one visible; all of one or none of it
    visible: dict[str, set[str]] = defaultdict(set)
    for _topic, value in committed_reads:
        if txn_of(value) in outcome:
            visible[txn_of(value)].add(value)
    for e in member_reads:
        if e.get("t") == "read" and txn_of(e["v"]) in outcome and outcome[txn_of(e["v"])] == "aborted":
            f.aborted_reads.append(f"member read {e['topic']}-{e['p']} offset {e['o']} {e['v']!r} of aborted "
                                   f"transaction {txn_of(e['v'])}")
    for txn, values in visible.items():
        if outcome[txn] == "aborted":
            f.aborted_reads.append(f"read-back read {len(values)} record(s) of aborted transaction {txn}, "
                                   f"e.g. {sorted(values)[:3]}")
            continue
        missing = {a[3] for a in txn_acked[txn]} - values
        if missing and outcome[txn] != "committed":   # a committed one's missing records are lost
            f.partial_txns.append(f"transaction {txn} ({outcome[txn]}): {len(values)} record(s) visible, "
                                  f"{len(missing)} acknowledged ones not, e.g. {sorted(missing)[:3]}")
    aborted_acked = [a for txn, s in outcome.items() if s == "aborted" for a in txn_acked[txn]]
    in_log = sum(1 for topic, p, o, v, _ in aborted_acked if uncommitted.get((topic, p, o)) == v)
    f.notes.append(f"aborted transactions' acknowledged records found by read_uncommitted at their "
                   f"offsets: {in_log} of {len(aborted_acked)}")


# -- committed offsets --------------------------------------------------------------------------


def check_commits(f: Findings, member: str, entries: Iterable[dict]) -> None:
    """One member incarnation's history, in its order (see the module docstring).

    The floor a fetched offset is held to is, per partition, the offset of the commit whose
    acknowledgement came *last* before the fetch (in this ownership interval).  While
    acknowledgements come in the order the commits were sent (one connection to one
    coordinator answering in order) that is the highest acknowledged offset.  They come
    out of order only when the client re-sent an older commit: librdkafka retries an
    OffsetCommit that failed with NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
    REQUEST_TIMED_OUT or a transport error (rd_kafka_handle_OffsetCommit ->
    rd_kafka_buf_retry) on the coordinator it finds next, after commits it sent meanwhile,
    so the older offsets are applied last, against Apache Kafka too.  A fetch below the
    highest acknowledged offset but not below the last acknowledged one is that, and is
    noted (``retried_below``), not failed.  So is a fetch that reads exactly the offset of
    an older commit sent before it and answered (successfully) only after it: the re-sent
    commit has taken effect, and its answer reached the member's callback after the fetch's
    (seen once in a 30-minute soak: the ack recorded 1 ms after the fetch)."""
    entries = list(entries)
    # commit seq -> (position of its successful answer, its offsets), for the look-ahead above
    answered_at = {e["seq"]: (i, {(t, p): o for t, p, o in e["ok"]}) for i, e in enumerate(entries)
                   if e.get("t") == "commit_ack" and e["seq"] is not None and e["ok"]
                   and e["iv"] == e["now_iv"]}
    sent: set[int] = set()   # commit seqs sent so far
    last: dict[tuple[int, str, int], tuple[int, int]] = {}   # (iv, topic, p) -> (offset, commit seq)
    highest: dict[tuple[int, str, int], tuple[int, int]] = {}
    newest_seq = 0
    unmatched = retried = 0
    retried_below: list[str] = []

    def retried_later(position: int, topic: str, p: int, offset: int, below_seq: int) -> int | None:
        """An older commit (seq < ``below_seq``) sent before ``position``, answered after it,
        that carries ``offset`` for (topic, p): its seq, else None."""
        for seq in sent:
            if seq < below_seq and seq in answered_at:
                at, offsets = answered_at[seq]
                if at > position and offsets.get((topic, p)) == offset:
                    return seq
        return None

    for position, e in enumerate(entries):
        kind = e.get("t")
        if kind == "commit" and e.get("seq") is not None:
            sent.add(e["seq"])
        if kind == "commit_ack":
            if e["seq"] is None:
                unmatched += 1
                continue
            f.commits_acked += bool(e["ok"])
            if e["ok"] and e["seq"] < newest_seq:
                retried += 1   # answered after a commit sent later than it
            newest_seq = max(newest_seq, e["seq"]) if e["ok"] else newest_seq
            if e["iv"] != e["now_iv"]:
                continue   # a rebalance came between the commit and its answer
            for topic, p, o in e["ok"]:
                key = (e["iv"], topic, p)
                last[key] = (o, e["seq"])
                if o > highest.get(key, (-1, 0))[0]:
                    highest[key] = (o, e["seq"])
        elif kind == "fetch":
            f.offset_fetches += 1
            for topic, p, o in e["offsets"]:
                key = (e["iv"], topic, p)
                where = f"interval {e['iv']}{', final fetch' if e.get('final') else ''}, at {clock(e['ms'])}"
                if key in last and o < last[key][0] and (
                        seq := retried_later(position, topic, p, o, last[key][1])) is not None:
                    retried_below.append(f"{member}: {topic}-{p} fetched {o} < {last[key][0]} of commit "
                                         f"#{last[key][1]}, = commit #{seq} sent earlier and answered "
                                         f"after the fetch ({where})")
                elif key in last and o < last[key][0]:
                    f.commit_regressions.append(
                        f"{member}: {topic}-{p} committed offset fetched {o} < {last[key][0]} of commit "
                        f"#{last[key][1]}, the last one acknowledged before the fetch ({where})")
                elif key in highest and o < highest[key][0]:
                    retried_below.append(f"{member}: {topic}-{p} fetched {o} < {highest[key][0]} of commit "
                                         f"#{highest[key][1]}, = the later-answered commit #{last[key][1]} ({where})")
    if unmatched:
        f.notes.append(f"{member}: {unmatched} commit callback(s) matched no commit sent (ignored)")
    if retried:
        f.notes.append(f"{member}: {retried} commit(s) answered after a commit sent later (client retries)")
    if retried_below:
        f.notes.append(f"{member}: {len(retried_below)} fetch(es) below the highest acknowledged commit that a "
                       f"retried older commit explains (not failed), e.g. {retried_below[0]}")


# -- high watermarks ---------------------------------------------------------------------------


def check_high_watermarks(f: Findings, samples: Iterable[dict]) -> None:
    highest: dict[tuple[str, int], tuple[int, int]] = {}   # (topic, p) -> (high, ms)
    below: dict[tuple[str, int], bool] = defaultdict(bool)
    for e in samples:
        if e.get("t") != "hw" or e["high"] < 0:
            continue
        f.hw_samples += 1
        tp = (e["topic"], e["p"])
        top = highest.get(tp)
        if top is not None and e["high"] < top[0]:
            if not below[tp]:   # one finding per fall, however many samples stay below
                f.hw_regressions.append(f"{tp[0]}-{tp[1]}: high watermark {e['high']} at {clock(e['ms'])}, "
                                        f"after {top[0]} at {clock(top[1])}")
            below[tp] = True
            continue
        below[tp] = False
        highest[tp] = (e["high"], e["ms"])


# -- broker logs ------------------------------------------------------------------------------


def scan_logs(f: Findings, outputs: dict[int, Path]) -> None:
    """Every broker output line matching LOG_PATTERNS; an ERROR line and the traceback right
    after it are one finding."""
    for broker_id, path in sorted(outputs.items()):
        lines = path.read_text(errors="replace").splitlines()
        previous_matched = False
        for n, line in enumerate(lines, 1):
            kinds = [k for k, pat in LOG_PATTERNS.items() if pat.search(line)]
            if not kinds:
                previous_matched = False
                continue
            if kinds == ["traceback"] and previous_matched:
                continue
            f.unhandled.append(f"broker {broker_id} {path.name}:{n} [{', '.join(kinds)}] {line.strip()[:300]}")
            previous_matched = True


def distinct_messages(lines: list[str], limit: int = 20) -> list[tuple[int, str]]:
    """Findings grouped by their text with numbers and timestamps blanked: (count, example)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for line in lines:
        text = line.split("] ", 1)[-1] if "] " in line else line
        groups[re.sub(r"\d+", "N", text)].append(line)
    ranked = sorted(groups.values(), key=len, reverse=True)
    return [(len(g), g[0]) for g in ranked[:limit]]
