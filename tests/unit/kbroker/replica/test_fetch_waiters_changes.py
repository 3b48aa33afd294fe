"""kbroker/replica/fetch_waiters.py's parts for fetch sessions: numbered notifies (``changed_since``)
and a parked fetch waiting on a container of partitions (tested at each notify)."""

from __future__ import annotations

import asyncio

from kbroker.replica import fetch_waiters
from kbroker.replica.fetch_waiters import FetchWaiters


def test_changed_since_names_each_partition_notified_after_a_number_once_latest_first():
    w = FetchWaiters()
    w.notify(("a", 0))
    seen = w.seq
    w.notify(("b", 0))
    w.notify(("a", 1))
    w.notify(("b", 0))
    assert w.changed_since(seen) == [("b", 0), ("a", 1)]
    assert w.changed_since(w.seq) == []
    assert w.changed_since(0) == [("b", 0), ("a", 1), ("a", 0)]


def test_a_wait_on_a_container_wakes_for_its_partitions_only():
    async def scenario() -> tuple[bool, bool]:
        w = FetchWaiters()
        among = {("t", 0): 0, ("t", 1): 1}
        parked = asyncio.ensure_future(w.wait(among, 60.0))
        await asyncio.sleep(0)
        w.notify(("other", 0))
        await asyncio.sleep(0)
        early = parked.done()
        w.notify(("t", 1))
        await asyncio.wait_for(parked, 60.0)
        return early, not w._among
    assert asyncio.run(scenario()) == (False, True)


def test_changed_keeps_a_bounded_number_of_partitions_and_says_when_it_cannot_answer(monkeypatch):
    monkeypatch.setattr(fetch_waiters, "MAX_CHANGED", 3)
    w = FetchWaiters()
    for p in range(3):
        w.notify(("old", p))
    seen = w.seq
    for p in range(2):
        w.notify(("new", p))
    # ("old", 0) and ("old", 1) were dropped: a reader that saw up to them still gets an answer
    assert len(w.changed) == 3
    assert w.changed_since(seen) == [("new", 1), ("new", 0)]
    # one that looked before the dropped ones cannot be told what changed: None, look at all
    assert w.changed_since(0) is None and w.changed_since(1) is None
    assert w.changed_since(2) == [("new", 1), ("new", 0), ("old", 2)]
