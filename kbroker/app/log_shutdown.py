"""Flushing and closing every partition log at shutdown, off the event loop.

A broker with 10,000 partitions spends tens of seconds closing them (per log: fsync of the
``.log`` and its indexes, the producer-state snapshot, the leader epoch file, index trims;
bench/results/shutdown.md).  On the event loop that was one stall as long: nothing answered,
and in cluster mode nothing heard the controller.  Here the work runs on a few threads of
its own, ``BATCH`` logs per call, and the loop only hands out batches:

1. ``flush_all`` (the listeners still open): every log is fsynced whole.  Requests go on
   being answered; what they append meanwhile is synced by step 2.
2. The broker closes its listeners and connections (nothing appends any more), then
   ``close_all``: ``LogManager.begin_shutdown`` (periodic tasks, deletions, cleaner),
   ``close_logs`` batch by batch (syncing only what step 1 did not see), and only once every batch has returned
   ``finish_shutdown`` (checkpoints, then the clean-shutdown marker that vouches for them),
   then the broker's config and id stores.  From 128 logs on, the closes write their state
   files (producer snapshot, leader epoch file) without fsync and ``finish_shutdown`` first
   syncs each file system once (``LogManager.close_syncs_each_file``): four fsyncs a log
   were most of a 10,000-partition shutdown.  A batch that fails stops it there: no marker,
   so the next start recovers (Kafka: a failed close leaves the dir's marker unwritten).
   A kill -9 at any point leaves no marker either (start-up deleted it).

Threads: ``num.recovery.threads.per.data.dir`` per log dir, as Kafka's ``log-closing-<dir>``
pools (fsyncs of different files overlap in the device queue).  Logs are thread-safe
(log/log.py); each log is in one batch only.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from kbroker.replica.broker_state import BrokerState
    from log.log import Log

log = logging.getLogger("kbroker.state")

BATCH = 100   # logs per executor call: ~0.1-1 s of fsyncs, long enough to amortise the hand-off
T = TypeVar("T")


def _threads(state: BrokerState) -> int:
    return max(1, state.config["num.recovery.threads.per.data.dir"]) * max(1, len(state.log_manager.log_dirs))


async def _in_batches(pool: ThreadPoolExecutor, work: Callable[[list[Log]], None], logs: Sequence[Log],
                      parallel: int) -> None:
    """``work`` over ``logs``, ``BATCH`` at a time, at most ``parallel`` batches at once; the
    first failure is raised once the batches under way have returned (none starts after it)."""
    loop = asyncio.get_running_loop()
    batches = [list(logs[i:i + BATCH]) for i in range(0, len(logs), BATCH)]
    running: set[asyncio.Future[None]] = set()
    failure: BaseException | None = None
    while (batches and failure is None) or running:
        while batches and failure is None and len(running) < parallel:
            running.add(loop.run_in_executor(pool, work, batches.pop(0)))
        done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for f in done:
            if f.exception() is not None and failure is None:
                failure = f.exception()
    if failure is not None:
        raise failure


async def flush_all(state: BrokerState) -> bool:
    """Step 1 (see the module docstring): fsync every log while requests are still answered.
    False if a flush failed (logged): the shutdown goes on, and step 2 flushes every log
    whole again (its failure there keeps the marker unwritten)."""
    lm = state.log_manager
    logs = lm.all_logs()
    parallel = _threads(state)
    log.info("flushing %d log(s) before closing the listeners", len(logs))
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(parallel, thread_name_prefix="log-flushing") as pool:
            await _in_batches(pool, lm.flush_logs, logs, parallel)
    except Exception:
        log.exception("flushing the logs before closing the listeners failed; closing goes on")
        return False
    log.info("flushed %d log(s) in %.2f s", len(logs), time.monotonic() - started)
    return True


async def close_all(state: BrokerState, flushed: bool = False) -> None:
    """Step 2: close every log, then the checkpoints and the clean-shutdown marker, then the
    stores (``BrokerState.close_stores``).  Nothing may append any more.  ``flushed``:
    ``flush_all`` ran, so each log syncs only what was appended since."""
    loop = asyncio.get_running_loop()
    lm = state.log_manager
    parallel = _threads(state)
    started = time.monotonic()
    with ThreadPoolExecutor(parallel, thread_name_prefix="log-closing") as pool:
        await loop.run_in_executor(pool, lm.begin_shutdown)
        logs = lm.all_logs()
        sync = lm.close_syncs_each_file(len(logs))
        log.info("closing %d log(s)%s", len(logs), "" if sync else ", then one syncfs per file system")
        try:
            await _in_batches(pool, functools.partial(lm.close_logs, flushed=flushed, sync=sync), logs, parallel)
        except BaseException:
            log.error("closing the logs failed: no clean-shutdown marker, the next start recovers")
            raise
        await loop.run_in_executor(pool, functools.partial(lm.finish_shutdown, syncfs_first=not sync))
        log.info("closed %d log(s), checkpoints and clean-shutdown marker written in %.2f s",
                 len(logs), time.monotonic() - started)
        await loop.run_in_executor(pool, state.close_stores)
