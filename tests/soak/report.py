"""The soak's printed result: the table (faults by kind, then one row per check) and, below
it, examples of every failing check."""

from __future__ import annotations

from tests.soak.checks import distinct_messages
from tests.soak.nemesis import counts
from tests.soak.runner import SoakResult

EXAMPLES = 10


def table(r: SoakResult) -> str:
    f = r.findings
    fault_counts = counts(r.faults)
    restarts = sum(len(x.exit_codes) for x in r.faults if x.kind == "roll")
    kinds = " | ".join(f"{k} {n}" for k, n in fault_counts.items())
    txns = ", ".join(f"{k} {n}" for k, n in sorted(f.txns.items())) or "none"
    rows: list[tuple[str, str, str, str]] = [
        ("records acknowledged, idempotent", str(f.acked_idempotent), "", ""),
        ("records acknowledged, transactional (committed)", str(f.acked_txn_committed), "", f"transactions: {txns}"),
        ("lost", str(len(f.lost)), _v(f.lost), ""),
        ("duplicated", str(len(f.duplicated)), _v(f.duplicated), ""),
        ("misplaced (read at another offset)", str(len(f.misplaced)), _v(f.misplaced), ""),
        ("committed-offset regressions", str(len(f.commit_regressions)), _v(f.commit_regressions),
         f"{f.commits_acked} commits acknowledged, {f.offset_fetches} offset fetches"),
        ("HW regressions", str(len(f.hw_regressions)), _v(f.hw_regressions), f"{f.hw_samples} samples"),
        ("aborted reads", str(len(f.aborted_reads)), _v(f.aborted_reads), ""),
        ("partially visible transactions", str(len(f.partial_txns)), _v(f.partial_txns), ""),
        ("unhandled exceptions (broker logs)", str(len(f.unhandled)), _v(f.unhandled), ""),
        ("faults the cluster did not recover from", str(len(r.fault_errors)), _v(r.fault_errors), ""),
        ("run problems", str(len(r.problems)), _v(r.problems), ""),
        ("client fatal errors (not a check)", str(sum(f.client_fatal.values())), "",
         ", ".join(f"{k} x{n}" for k, n in sorted(f.client_fatal.items()))),
        ("worker restarts (not a check)", str(sum(len(v) for v in r.worker_restarts.values())), "",
         ", ".join(f"{k}: exits {v}" for k, v in sorted(r.worker_restarts.items()))),
        ("progress stalls, unclean worker exits (not a check)", str(len(r.stalls)), "", ""),
    ]
    width = max(len(row[0]) for row in rows)
    lines = [
        f"== kbroker soak: {r.minutes:.1f} min of faults, seed {r.seed}, network namespaces {r.netns}",
        f"== work dir {r.work}",
        f"faults by kind: {kinds}  (roll: {restarts} broker restarts)",
        f"{'check'.ljust(width)}  {'count':>8}  verdict",
    ]
    for name, count, verdict, extra in rows:
        lines.append(f"{name.ljust(width)}  {count:>8}  {verdict:<7} {extra}".rstrip())
    lines.append(f"VERDICT: {'PASS' if r.ok else 'FAIL'}")
    return "\n".join(lines)


def _v(items: list[str]) -> str:
    return "FAIL" if items else "ok"


def details(r: SoakResult) -> str:
    f = r.findings
    out: list[str] = []
    for title, items in (("lost", f.lost), ("duplicated", f.duplicated), ("misplaced", f.misplaced),
                         ("committed-offset regressions", f.commit_regressions),
                         ("HW regressions", f.hw_regressions), ("aborted reads", f.aborted_reads),
                         ("partially visible transactions", f.partial_txns),
                         ("faults not recovered", r.fault_errors), ("run problems", r.problems),
                         ("progress stalls, unclean worker exits", r.stalls)):
        if items:
            out.append(f"-- {title} ({len(items)}), first {min(len(items), EXAMPLES)}:")
            out += [f"   {x}" for x in items[:EXAMPLES]]
    if f.unhandled:
        out.append(f"-- unhandled exceptions ({len(f.unhandled)} lines), by message:")
        out += [f"   {n:5d} x {example}" for n, example in distinct_messages(f.unhandled)]
    for note in f.notes:
        out.append(f"-- note: {note}")
    return "\n".join(out)
