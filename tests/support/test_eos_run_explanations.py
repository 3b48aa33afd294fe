"""How the EOS supervisor (tests/support/eos_run.py) judges a worker's hangs: one during an
injected kill (until the first progress after it) is explained, one elsewhere is not."""

from __future__ import annotations

import threading

from tests.support.eos_run import EosWorker, Kill


def _worker(lines_before_kill: list[str], in_kill: list[str], after: list[str]) -> EosWorker:
    w = EosWorker.__new__(EosWorker)   # the judging only: no process
    w._changed = threading.Condition()
    w.lines, w.kills = list(lines_before_kill), []
    w.kills.append(Kill("broker 2", len(w.lines)))
    w.lines += ["[eos_run] injected kill: broker 2\n", *in_kill]
    w.kills[-1].end = len(w.lines)
    w.lines += after
    return w


def test_a_hang_while_a_broker_is_killed_is_explained_by_the_kill():
    w = _worker(["progress 100\n"], ["hung send_offsets_to_transaction: no return\n"], ["progress 200\n"])
    assert w.unexplained_hangs() == []


def test_a_hang_after_the_worker_progressed_past_the_kill_is_not_explained():
    w = _worker(["progress 100\n"], [], ["progress 200\n", "hung commit_transaction: no return\n"])
    assert w.unexplained_hangs() == ["hung commit_transaction: no return"]


def test_a_hang_before_any_kill_is_not_explained():
    w = _worker(["hung init_transactions: no return\n"], [], [])
    assert w.unexplained_hangs() == ["hung init_transactions: no return"]
