"""``python -m tests.soak --minutes N``: the soak (see tests/soak/__init__.py); prints the
table and exits 1 when any check failed."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tests.soak.nemesis import KINDS
from tests.soak.report import details, table
from tests.soak.runner import run_soak


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__)
    p.add_argument("--minutes", type=float, default=30.0, help="how long the nemesis works (default 30); with --faults none, how long the workload runs")
    p.add_argument("--faults", help=f"instead of --minutes: these faults once each, in order (of {', '.join(KINDS)}), "
                                                "or none")
    p.add_argument("--seed", type=int, help="the nemesis's and the transactional producers' random seed")
    p.add_argument("--work-dir", type=Path, help="where everything goes (default: a new /tmp/soak-*)")
    p.add_argument("--rate", type=float, default=100.0, help="records/s of each idempotent producer")
    p.add_argument("--no-netns", action="store_true", help="run on loopback (no partition fault)")
    args = p.parse_args(argv)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="soak-", dir="/tmp"))
    # "--faults none": the workload and the checks without any fault (a baseline)
    plan = ([] if args.faults == "none" else args.faults.split(",")) if args.faults is not None else None
    if plan and not set(plan) <= set(KINDS):
        p.error(f"unknown fault(s) {sorted(set(plan) - set(KINDS))}")
    result = run_soak(work, minutes=args.minutes, plan=plan, seed=args.seed,
                      use_netns=False if args.no_netns else None, rate=args.rate,
                      log=lambda s: print(s, flush=True))
    print(table(result))
    if more := details(result):
        print(more)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
