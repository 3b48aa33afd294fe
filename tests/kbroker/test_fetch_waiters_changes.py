"""kbroker/fetch_waiters.py's parts for fetch sessions: numbered notifies (``changed_since``)
and a parked fetch waiting on a container of partitions (tested at each notify)."""

from __future__ import annotations

import asyncio

from kbroker.fetch_waiters import FetchWaiters


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
