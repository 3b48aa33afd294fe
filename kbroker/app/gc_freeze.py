"""Full garbage collections that skip the broker's long-lived objects (``gc.freeze``).

Why.  CPython's cyclic collector runs a full (generation 2) collection once the objects
promoted into generation 2 since the last one exceed a quarter of those that survived it, and a
full collection visits every tracked object.  A broker holding thousands of partitions keeps
~40 tracked objects per partition for as long as it runs (segments, indexes, locks, producer
state: ~420,000 objects at 10,000 partitions), while a Fetch naming all of them (librdkafka
names every assigned partition in every Fetch) keeps a few objects per partition alive for as
long as it is handled (the decoded request, the answers), and the young collections that run
meanwhile promote them.  So every few such Fetches a full collection ran: 140-240 ms each on
the project's 2-core machine, a quarter of the broker's CPU in a consume of a 10,000-partition
topic (bench/results/profile.md, "Full garbage collections at 10,000 partitions").

What.  After each full collection the objects that survived it are frozen: moved to the
permanent generation, which no collection visits (reference counting still frees a frozen
object the moment its last reference goes: only cycles need the collector).  The next full
collection visits only what was promoted since, so its cost follows the garbage made, not the
broker's size.  What freezing gives up: a frozen object that later becomes garbage inside a
reference cycle stays until the collector looks at it again.  A thaw every
``THAW_INTERVAL_S`` (unfreeze, one full collection of everything, which freezes again) bounds
that garbage to what such cycles leave in that time, at the price of one whole-heap collection
per interval: the stall every few wide Fetches paid before, now once per interval.

Installed by ``kbroker serve`` (a process of its own, kbroker/__main__.py), never on import:
the collector's state is the whole process's, and processes that embed a broker (the tests,
an application) keep the interpreter's behaviour.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

log = logging.getLogger("kbroker.gc")

# seconds between thaws (see above): the longest a frozen cycle's garbage waits
THAW_INTERVAL_S = 600.0


def _freeze_after_full_collection(phase: str, info: dict[str, Any]) -> None:
    """A ``gc.callbacks`` entry: at the end of a generation 2 collection (automatic, or
    ``gc.collect()``), freeze what survived it.  Runs in whichever thread allocated when the
    collection started, holding the GIL; the collection's lists are complete by then."""
    if phase == "stop" and info["generation"] == 2:
        gc.freeze()


class GcFreeze:
    """Freezes survivors of full collections and thaws every ``interval_s`` on ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, interval_s: float = THAW_INTERVAL_S) -> None:
        self.loop = loop
        self.interval_s = interval_s
        self._timer: asyncio.TimerHandle | None = None
        self.thaws = 0

    def install(self) -> GcFreeze:
        """Start: one full collection now (start-up's garbage collected, its state frozen),
        then the callback and the thaw timer."""
        if _freeze_after_full_collection not in gc.callbacks:
            gc.callbacks.append(_freeze_after_full_collection)
        gc.collect()
        log.debug("froze %d objects at start-up", gc.get_freeze_count())
        self._schedule()
        return self

    def thaw(self) -> None:
        """Unfreeze everything and collect it all once (the callback freezes the survivors):
        cycles that became garbage while frozen are reclaimed."""
        gc.unfreeze()
        gc.collect()
        self.thaws += 1

    def uninstall(self) -> None:
        """Stop freezing; the frozen objects go back to the collector (the oldest generation)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while _freeze_after_full_collection in gc.callbacks:
            gc.callbacks.remove(_freeze_after_full_collection)
        gc.unfreeze()

    def _schedule(self) -> None:
        self._timer = self.loop.call_later(self.interval_s, self._on_timer)

    def _on_timer(self) -> None:
        self.thaw()
        self._schedule()
